"""Run-level aggregates from the trials' statuses (pure). The one adapter onto `reporting.summary`."""
from __future__ import annotations

import json
from typing import Any, Optional

from ..results.model import TrialResult, TrialState, Usage
from .model import TrialCounts, TrialPhase, TrialStatus


def counts(statuses: list[TrialStatus], expected: int) -> TrialCounts:
    c = TrialCounts(total=expected)
    for s in statuses:
        if s.state == TrialState.SUCCEEDED:
            c.succeeded += 1
        elif s.state == TrialState.FAILED:
            c.failed += 1
        elif not s.scheduled:
            c.queued += 1
        elif s.phase == TrialPhase.GRADING:
            c.grading += 1
        else:
            c.running += 1
    c.queued += max(0, expected - len(statuses))  # planned, TaskTrial not created yet
    return c


def total_usage(statuses: list[TrialStatus]) -> Usage:
    u = Usage()
    for s in statuses:
        u = u.add(s.usage.plain())
    return u


def mean_score(statuses: list[TrialStatus]) -> Optional[float]:
    """Mean over graded trials (the printer column; the summary has the failed-counts-0 variant too)."""
    scores = [s.score.score for s in statuses if s.state == TrialState.SUCCEEDED and s.score is not None]
    return round(sum(scores) / len(scores), 4) if scores else None


def pass_rate(statuses: list[TrialStatus]) -> Optional[float]:
    done = [s for s in statuses if s.finished]
    if not done:
        return None
    return round(sum(1 for s in done if s.score is not None and s.score.passed) / len(done), 4)


def failures(statuses: list[TrialStatus]) -> dict[str, int]:
    out: dict[str, int] = {}
    for s in statuses:
        if s.state == TrialState.FAILED and s.error_kind is not None:
            out[s.error_kind.value] = out.get(s.error_kind.value, 0) + 1
    return out


def retried(s: TrialStatus) -> dict[str, int]:
    """The trial's failed attempts (and gradings) that were retried, by error kind: every counted failure but
    the one a trial that failed for good ended with (a deleted pod, a lost upload, a grader crash, ...)."""
    out = dict(s.failures)
    if s.state == TrialState.FAILED and s.error_kind is not None and out.get(s.error_kind.value):
        out[s.error_kind.value] -= 1
    return {k: n for k, n in out.items() if n > 0}


def retries(statuses: list[TrialStatus]) -> dict[str, int]:
    """Failed attempts (and gradings) that were retried, by error kind, over every trial."""
    out: dict[str, int] = {}
    for s in statuses:
        for kind, n in retried(s).items():
            out[kind] = out.get(kind, 0) + n
    return out


def run_summary(results: list[TrialResult], trials_per_task: int, task_ids: list[str],
                modes: Optional[list[str]] = None) -> Optional[dict[str, Any]]:
    """`clawkube.reporting.summary.summarize` as a JSON-ready dict (None when there is nothing finished yet)."""
    from ..reporting.summary import summarize  # lazily: the operator needs nothing else of reporting.summary

    if not results:
        return None
    summary = summarize(results, trials_per_task, planned_tasks=task_ids, planned_modes=modes)
    return json.loads(summary.model_dump_json())
