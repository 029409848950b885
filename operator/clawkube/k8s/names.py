"""Deterministic object names and labels: a restarted operator finds, never re-creates, what exists."""
from __future__ import annotations

import hashlib
import re
from typing import Optional

from ..plan import stage_named

MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGER = "clawkube"
L_RUN = "clawkube.io/run"
L_TRIAL = "clawkube.io/trial"
L_TASK = "clawkube.io/task"
L_ROLE = "clawkube.io/role"  # agent | grade | agent-bundle | grading-bundle
L_STAGE = "clawkube.io/stage"  # execution | authoring | first_run | summary (pods)
L_ATTEMPT = "clawkube.io/attempt"
L_WARMUP = "clawkube.io/warmup-relay"  # "true": an agent pod whose warmup sidecar relays servers to grading pods

_MAX = 253
_LABEL_MAX = 63


def _digest(text: str, n: int = 6) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:n]


def slug(text: str, limit: int = 40) -> str:
    """A DNS-1123 fragment of `text`; a short hash is appended whenever the slug is not `text` itself."""
    s = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    if s == text and len(s) <= limit:
        return s
    return f"{s[:limit - 7].rstrip('-')}-{_digest(text)}".lstrip("-")


def label_value(text: str) -> str:
    """A valid label value (<= 63 chars, alnum at both ends)."""
    s = re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-_.")
    if len(s) > _LABEL_MAX or s != text:
        s = f"{s[:_LABEL_MAX - 7].rstrip('-_.')}-{_digest(text)}".lstrip("-_.")
    return s


def trial_name(run: str, task_id: str, trial_index: int, mode: Optional[str] = None) -> str:
    """`<run>-<task>-<i>`; in a run of several modes `<run>-<task>-<mode>-<i>`."""
    middle = f"{slug(task_id)}-{mode}" if mode else slug(task_id)
    return f"{run}-{middle}-{trial_index}"[:_MAX]


def bundle_name(run: str, task_id: str, role: str) -> str:
    """ConfigMap of one task's agent or grading bundle in a run (role: agent | grading)."""
    return f"{run}-{slug(task_id)}-{role}"[:_MAX]


def agent_pod_name(trial: str, attempt: int) -> str:
    return f"{trial}-a{attempt}-agent"


def stage_pod_name(trial: str, attempt: int, stage: str) -> str:
    """The pod of a stage before the graded execution (PreSkill/PostSkill modes; plan.Stage.pod_suffix)."""
    return f"{trial}-a{attempt}-{stage_named(stage).pod_suffix}"


def grade_pod_name(trial: str, attempt: int, grade_attempt: int) -> str:
    suffix = "" if grade_attempt <= 1 else f"-{grade_attempt}"
    return f"{trial}-a{attempt}-grade{suffix}"


def run_labels(run: str) -> dict[str, str]:
    return {MANAGED_BY: MANAGER, L_RUN: label_value(run)}


def trial_labels(run: str, trial: str, task_id: str) -> dict[str, str]:
    return {**run_labels(run), L_TRIAL: label_value(trial), L_TASK: label_value(task_id)}
