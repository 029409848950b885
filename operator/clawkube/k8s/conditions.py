"""Kubernetes-style status conditions (pure helpers)."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Optional

from .model import Condition

# BenchmarkRun
TASKS_LOADED = "TasksLoaded"
READY = "Ready"  # staged and scheduling
PROGRESSING = "Progressing"
SUCCEEDED = "Succeeded"
BUDGET_EXHAUSTED = "BudgetExhausted"
SUMMARY_UPLOADED = "SummaryUploaded"  # summary.json + run.json under the run's prefix (before Succeeded)
# TaskTrial (also SUCCEEDED)
SCHEDULED = "Scheduled"
SKILLS_READY = "SkillsReady"  # PreSkill/PostSkill: the skill-writing stages finished, the execution starts
AGENT_FINISHED = "AgentFinished"
GRADED = "Graded"
ARTIFACTS_UPLOADED = "ArtifactsUploaded"
FAILED = "Failed"


def ts(when: datetime) -> str:
    return when.astimezone(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def parse_ts(text: Optional[str]) -> Optional[datetime]:
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def get(conditions: list[Condition], type_: str) -> Optional[Condition]:
    return next((c for c in conditions if c.type == type_), None)


def is_true(conditions: list[Condition], type_: str) -> bool:
    c = get(conditions, type_)
    return c is not None and c.status == "True"


def set_condition(conditions: list[Condition], type_: str, status: bool | str, reason: str, message: str,
                  now: datetime, generation: Optional[int] = None) -> list[Condition]:
    """A new list with `type_` set; lastTransitionTime changes only when the status does."""
    status_s = status if isinstance(status, str) else ("True" if status else "False")
    old = get(conditions, type_)
    when = old.last_transition_time if old is not None and old.status == status_s else ts(now)
    new = Condition(type=type_, status=status_s, reason=reason, message=message[:1024],
                    observed_generation=generation, last_transition_time=when)
    if old is None:
        return [*conditions, new]
    return [new if c.type == type_ else c for c in conditions]
