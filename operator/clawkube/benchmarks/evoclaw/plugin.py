"""EvoClawBench: one Markdown task file per task whose frontmatter has `grading_type` or `sub_problems`
(load.py). The score is the mean of the grader's criteria (weighted by `grading_weights` when they name only
reported criteria); `sub_N_*` criteria give the sub-problem means. The run summary reports the mean score and
each sub-problem's mean."""
from __future__ import annotations

import re
from math import inf
from pathlib import Path
from statistics import mean as stat_mean
from typing import Any, Optional

from pydantic import BaseModel

from ...contracts.manifests import GradingManifest
from ...results.grouping import graded, key_means, score_of
from ...results.metrics import mean
from ...results.model import Score, TrialResult
from ...results.tables import num, table
from ...services.evidence import Evidence
from ...tasks import markdown
from ...tasks.model import TaskSpec
from ..base import Benchmark, GradingError
from . import load as loader

_SUB = re.compile(r"^sub_(\d+)_")
_KEYS = ("grading_type", "sub_problems")


def sub_problem_means(criteria: dict[str, float]) -> dict[str, float]:
    groups: dict[str, list[float]] = {}
    for k, v in criteria.items():
        m = _SUB.match(k)
        if m:
            groups.setdefault(f"sub_{m.group(1)}", []).append(v)
    return {k: stat_mean(v) for k, v in sorted(groups.items(), key=lambda kv: int(kv[0][4:]))}


def _sub_order(name: str) -> tuple:
    n = name.removeprefix("sub_")
    return (int(n) if n.isdigit() else inf, name)


class EvoClawSummary(BaseModel):
    tasks: int
    trials_finished: int
    trials_graded: int
    mean_score: Optional[float]  # failed trials count 0
    sub_problems: dict[str, float]  # "sub_N" -> mean over the graded trials that report it


class EvoClawBench(Benchmark):
    name = loader.NAME
    title = "EvoClawBench"
    detect_priority = 10
    summary_model = EvoClawSummary

    def detect(self, path: Path) -> bool:
        if path.suffix.lower() != ".md" or not path.is_file():
            return False
        front = markdown.read_frontmatter(path)
        return front is not None and any(k in front for k in _KEYS)

    def load(self, path: Path) -> TaskSpec:
        return loader.load(path)

    def score(self, m: GradingManifest, raw: dict[str, float], evidence: Optional[Evidence]) -> Score:
        if not raw:
            raise GradingError("grader returned no criteria")
        weights = m.grading_weights
        if weights and set(weights) <= set(raw) and sum(weights.values()) > 0:
            s = sum(raw[k] * w for k, w in weights.items()) / sum(weights.values())
        else:
            s = stat_mean(raw.values())
        return Score(score=s, passed=s >= m.pass_threshold, criteria=raw, sub_problems=sub_problem_means(raw))

    def summarize(self, seen: list[TrialResult], finished: list[TrialResult]) -> Optional[EvoClawSummary]:
        good = graded(finished)
        return EvoClawSummary(
            tasks=len({r.task_id for r in seen}),
            trials_finished=len(finished),
            trials_graded=len(good),
            mean_score=mean(score_of(r) for r in finished),
            sub_problems=key_means((r.score.sub_problems for r in good), _sub_order),
        )

    def report_lines(self, section: dict[str, Any]) -> list[str]:
        e = EvoClawSummary.model_validate(section)
        lines = [f"EvoClawBench: {e.tasks} tasks, {e.trials_finished} trials finished, {e.trials_graded} graded; "
                 f"mean score {num(e.mean_score)}"]
        if e.sub_problems:
            lines += table(["sub-problem", "mean"], [[s, num(v)] for s, v in e.sub_problems.items()])
        return lines
