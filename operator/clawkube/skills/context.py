"""The PostSkill summary phase's first-run context (skills/first_run.py), built from the first run's agent-side
artifacts - its workspace snapshot (restored into scratch) and transcript (in OpenClaw's format, as the runner
keeps it) - and its score; the same way locally and in the cluster's summary pod. Never grader code or ground
truth: of a grading failure it says only that grading failed."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from ..agents.transcript import as_dicts, read_jsonl
from ..benchmarks.evoclaw.transcript import to_openclaw
from ..contracts.manifests import AgentManifest
from ..lifecycle import workspace
from .first_run import GRADING_FAILED, TaskFacts, context

__all__ = ["GRADING_FAILED", "facts_of", "context_from_artifacts"]


def facts_of(m: AgentManifest) -> TaskFacts:
    d = m.benchmark_data
    return TaskFacts(task_id=m.view.id, task_name=d.get("task_name", m.view.name), prompt=m.view.prompt,
                     expected_behavior=d.get("expected_behavior", ""),
                     grading_criteria=list(d.get("grading_criteria") or []),
                     grading_type=d.get("grading_type", "automated"))


def context_from_artifacts(artifacts: Path, facts: TaskFacts, score: Optional[dict[str, Any]],
                           scratch: Path) -> dict[str, Any]:
    ws = scratch / "first_run_workspace"
    snapshot = artifacts / "workspace.tar.gz"
    if snapshot.is_file():
        workspace.restore(snapshot, ws)
    tf = artifacts / "transcript.jsonl"
    records = to_openclaw(as_dicts(read_jsonl(tf))) if tf.is_file() else []
    return context(facts, score, ws, records)
