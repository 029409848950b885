"""How run-level views read trial results: mode, score of a finished trial, pass, grouping, per-key means.

Shared by `reporting/summary.py` and the benchmark plugins' summary sections, so every section counts alike.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Callable, Iterable

from ..runspec import EvalMode
from .metrics import mean
from .model import TrialResult, TrialState

BASELINE = EvalMode.BASELINE.value  # the mode of a result that names none

Group = tuple[str, str]  # (mode, task_id)


def mode_of(r: TrialResult) -> str:
    return r.mode or BASELINE


def score_of(r: TrialResult) -> float:
    """A finished trial's score; a failed trial counts 0."""
    return r.score.score if r.state is TrialState.SUCCEEDED else 0.0


def passed(r: TrialResult) -> bool:
    return r.state is TrialState.SUCCEEDED and r.score.passed


def graded(results: Iterable[TrialResult]) -> list[TrialResult]:
    return [r for r in results if r.state is TrialState.SUCCEEDED]


def groups(finished: Iterable[TrialResult]) -> dict[Group, list[TrialResult]]:
    """Finished trials by (mode, task): the unit pass@k and per-task means are computed over."""
    out: dict[Group, list[TrialResult]] = defaultdict(list)
    for r in finished:
        out[(mode_of(r), r.task_id)].append(r)
    return out


def key_means(maps: Iterable[dict[str, float]], order: Callable[[str], tuple]) -> dict[str, float]:
    """The mean of every key over the maps that have it, keys sorted by `order`."""
    values: dict[str, list[float]] = defaultdict(list)
    for m in maps:
        for key, v in m.items():
            values[key].append(v)
    return {key: mean(values[key]) for key in sorted(values, key=order)}
