"""Builders of observed state for the pure decide tests."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any, Optional

from clawkube.k8s.model import RunStatus, TaskRef, TaskTrialSpec, TrialStatus
from clawkube.k8s.observe import PodObs, RunObs, Terminated, TrialObs
from clawkube.runspec import BenchmarkRunSpec

T0 = datetime(2025, 1, 1, 12, 0, 0, tzinfo=timezone.utc)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def spec(task: str = "t1", index: int = 0, timeout: int = 60, grader_timeout: int = 30, run: str = "r",
         mode: str = "baseline") -> TaskTrialSpec:
    return TaskTrialSpec(run=run, task_id=task, category="demo", task_format="wildclawbench", trial_index=index,
                         content_hash="h", agent_bundle=f"{run}-{task}-agent", grading_bundle=f"{run}-{task}-grading",
                         timeout_seconds=timeout, grader_timeout_seconds=grader_timeout, mode=mode)


def trial(name: str = "r-t1-0", status: Optional[TrialStatus] = None, **spec_kw: Any) -> TrialObs:
    return TrialObs(name=name, uid=f"uid-{name}", resource_version="1", spec=spec(**spec_kw),
                    status=status or TrialStatus(), created_at=T0)


def pod(name: str, phase: str = "Pending", created: float = 0, started: Optional[float] = None,
        message: Optional[dict] = None, exit_code: Optional[int] = None, reason: str = "", deleting: bool = False,
        term_reason: str = "Completed", finished: Optional[float] = None) -> PodObs:
    term = None
    if phase in ("Succeeded", "Failed") and (message is not None or exit_code is not None):
        term = Terminated(exit_code=exit_code if exit_code is not None else 0, reason=term_reason, message=message,
                          raw_message="" if message is None else "json",
                          finished_at=at(finished if finished is not None else (started or created) + 10))
    role = "grade" if "grade" in name.rsplit("-a", 1)[-1] else "agent"
    return PodObs(name=name, role=role, phase=phase, created_at=at(created),
                  started_at=at(started) if started is not None else None, deleting=deleting, reason=reason,
                  terminated=term)


def agent_ok(tokens: int = 100, cost: float = 0.0) -> dict:
    return {"phase": "agent", "exit_code": 0, "timed_out": False,
            "usage": {"input_tokens": tokens, "output_tokens": 0, "total_tokens": tokens, "cost_usd": cost}}


def grade_ok(score: float = 1.0) -> dict:
    return {"phase": "grade", "score": {"score": score, "passed": score >= 0.75}}


def run_obs(name: str = "r", trial_objs: list[TrialObs] = (), pods: dict[str, PodObs] | None = None,
            status: Optional[RunStatus] = None, generation: int = 1, **spec_kw: Any) -> RunObs:
    body = {"tasks": {"inline": [{"name": "a.md", "content": "x"}]}, **spec_kw}
    return RunObs(name=name, namespace="ns", uid="uid-run", generation=generation, resource_version="1",
                  spec=BenchmarkRunSpec.model_validate(body), status=status or RunStatus(), created_at=T0,
                  trials=list(trial_objs), pods=pods or {})


def task_ref(task: str, run: str = "r") -> TaskRef:
    return TaskRef(id=task, category="demo", format="wildclawbench", content_hash="h",
                   agent_bundle=f"{run}-{task}-agent", grading_bundle=f"{run}-{task}-grading",
                   timeout_seconds=60, grader_timeout_seconds=30)
