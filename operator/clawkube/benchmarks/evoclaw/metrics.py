"""EvoClawBench's run-level metrics over the three modes, with the field names and ratios of its runner's results
JSON (`metrics`), so that a run here and a run there can be put side by side.

Per task and mode (over its trials): `mean_score` (a trial without a score counts 0), execution-only `usage`
(the graded execution: PostSkill's second run) and `end_to_end_usage` (every phase: authoring / first run +
summary + second run), PostSkill's `first_pass_mean_score`, `skill_quality_score` (mean over trials),
`skill_mutation_violation` (any trial), `created_skills`. Then, over tasks:
- execution_only / end_to_end: mean_scores {baseline, preskill, postskill} (mean of the task means, 4 places),
  ratios_vs_baseline {preskill, postskill} (score / baseline score; "inf" when baseline is 0 and the mode not;
  1.0 when both are 0), usage {mode: totals}, efficiency_vs_baseline {mode: {token|cost|time_efficiency_gain}}
  (baseline / mode, None when the mode's figure is 0);
- postskill: first_pass_mean, second_pass_mean, second_vs_first_delta, second_vs_first_ratio;
- created_skills: preskill_count, postskill_count (and the skills); skill_quality: preskill_mean, postskill_mean;
- skill_mutation_violations: {preskill, postskill} (tasks with a violation).
Usage names: input_tokens, output_tokens, total_tokens, cache_read_tokens, cache_write_tokens (not measured
here: 0), request_count (model turns), cost_usd = total_cost_usd, total_execution_time_seconds (agent wall time).
"""
from __future__ import annotations

from statistics import mean
from typing import Any, Iterable, Optional, Union

from pydantic import BaseModel, Field

MODES = ("baseline", "preskill", "postskill")
Ratio = Union[float, str]


class ModeUsage(BaseModel):
    total_tokens: int = 0
    total_cost_usd: float = 0.0
    total_execution_time_seconds: float = 0.0
    cost_usd: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    request_count: int = 0

    def plus(self, other: "ModeUsage") -> "ModeUsage":
        return ModeUsage(**{k: getattr(self, k) + getattr(other, k) for k in ModeUsage.model_fields})


def from_usage(u: Optional[dict[str, Any]]) -> ModeUsage:
    """This project's Usage (a dict) in the benchmark's names."""
    u = u or {}
    cost = float(u.get("cost_usd") or 0.0)
    return ModeUsage(total_tokens=int(u.get("total_tokens") or 0), total_cost_usd=cost, cost_usd=cost,
                     total_execution_time_seconds=float(u.get("wall_seconds") or 0.0),
                     input_tokens=int(u.get("input_tokens") or 0), output_tokens=int(u.get("output_tokens") or 0),
                     cache_read_tokens=int(u.get("cache_read_tokens") or 0), request_count=int(u.get("turns") or 0))


class TrialFacts(BaseModel):
    """One trial of one mode, reduced to what the metrics need."""

    task_id: str
    mode: str
    score: Optional[float]  # None: no score (counts 0)
    execution_usage: ModeUsage = Field(default_factory=ModeUsage)
    end_to_end_usage: ModeUsage = Field(default_factory=ModeUsage)
    first_pass_score: Optional[float] = None  # PostSkill
    skill_quality: float = 0.0
    skill_mutation_violation: bool = False
    created_skills: list[str] = Field(default_factory=list)


class TaskModeEntry(BaseModel):
    task_id: str
    mode: str
    trials: int
    mean_score: float
    usage: ModeUsage
    end_to_end_usage: ModeUsage
    first_pass_mean_score: Optional[float] = None
    skill_quality_score: float = 0.0
    skill_mutation_violation: bool = False
    created_skills: list[str] = Field(default_factory=list)


class Efficiency(BaseModel):
    token_efficiency_gain: Optional[float] = None
    cost_efficiency_gain: Optional[float] = None
    time_efficiency_gain: Optional[float] = None


class Scope(BaseModel):
    mean_scores: dict[str, float]
    ratios_vs_baseline: dict[str, Ratio]
    usage: dict[str, ModeUsage]
    efficiency_vs_baseline: dict[str, Efficiency]


class PostSkill(BaseModel):
    first_pass_mean: float
    second_pass_mean: float
    second_vs_first_delta: float
    second_vs_first_ratio: Ratio


class ThreeModeMetrics(BaseModel):
    execution_only: Scope
    end_to_end: Scope
    postskill: PostSkill
    created_skills: dict[str, Any]
    skill_quality: dict[str, float]
    skill_mutation_violations: dict[str, int]


def _sum(usages: Iterable[ModeUsage]) -> ModeUsage:
    total = ModeUsage()
    for u in usages:
        total = total.plus(u)
    return total


def task_entries(trials: list[TrialFacts]) -> dict[str, dict[str, TaskModeEntry]]:
    """{mode: {task_id: entry}} over the trials."""
    groups: dict[tuple[str, str], list[TrialFacts]] = {}
    for t in trials:
        groups.setdefault((t.mode, t.task_id), []).append(t)
    out: dict[str, dict[str, TaskModeEntry]] = {}
    for (mode, task_id), ts in sorted(groups.items()):
        firsts = [t.first_pass_score or 0.0 for t in ts]
        out.setdefault(mode, {})[task_id] = TaskModeEntry(
            task_id=task_id, mode=mode, trials=len(ts), mean_score=mean(t.score or 0.0 for t in ts),
            usage=_sum(t.execution_usage for t in ts), end_to_end_usage=_sum(t.end_to_end_usage for t in ts),
            first_pass_mean_score=mean(firsts) if mode == "postskill" else None,
            skill_quality_score=mean(t.skill_quality for t in ts) if mode != "baseline" else 0.0,
            skill_mutation_violation=any(t.skill_mutation_violation for t in ts),
            created_skills=[s for t in ts for s in t.created_skills])
    return out


def ratio(candidate: float, base: float) -> Ratio:
    if base > 0:
        return round(candidate / base, 4)
    return "inf" if candidate > 0 else 1.0


def _gain(base: float, mode: float) -> Optional[float]:
    return round(base / mode, 4) if mode > 0 else None


def efficiency(base: ModeUsage, mode: ModeUsage) -> Efficiency:
    return Efficiency(token_efficiency_gain=_gain(base.total_tokens, mode.total_tokens),
                      cost_efficiency_gain=_gain(base.total_cost_usd, mode.total_cost_usd),
                      time_efficiency_gain=_gain(base.total_execution_time_seconds, mode.total_execution_time_seconds))


def _mean_of(entries: dict[str, TaskModeEntry], attr: str = "mean_score") -> float:
    values = [float(getattr(e, attr) or 0.0) for e in entries.values()]
    return round(mean(values), 4) if values else 0.0


def _scope(entries: dict[str, dict[str, TaskModeEntry]], scores: dict[str, float], attr: str) -> Scope:
    usage = {m: _sum(getattr(e, attr) for e in entries.get(m, {}).values()) for m in MODES}
    return Scope(mean_scores=dict(scores),
                 ratios_vs_baseline={m: ratio(scores[m], scores["baseline"]) for m in MODES[1:]},
                 usage=usage, efficiency_vs_baseline={m: efficiency(usage["baseline"], usage[m]) for m in MODES[1:]})


def three_mode_metrics(trials: list[TrialFacts]) -> ThreeModeMetrics:
    entries = task_entries(trials)
    scores = {m: _mean_of(entries.get(m, {})) for m in MODES}
    post = entries.get("postskill", {})
    first, second = _mean_of(post, "first_pass_mean_score"), scores["postskill"]
    skills = {m: [s for e in entries.get(m, {}).values() for s in e.created_skills] for m in MODES[1:]}
    return ThreeModeMetrics(
        execution_only=_scope(entries, scores, "usage"),
        end_to_end=_scope(entries, scores, "end_to_end_usage"),
        postskill=PostSkill(first_pass_mean=first, second_pass_mean=second,
                            second_vs_first_delta=round(second - first, 4),
                            second_vs_first_ratio=ratio(second, first)),
        created_skills={"preskill_count": len(skills["preskill"]), "postskill_count": len(skills["postskill"]),
                        "preskill": skills["preskill"], "postskill": skills["postskill"]},
        skill_quality={f"{m}_mean": _mean_of(entries.get(m, {}), "skill_quality_score") for m in MODES[1:]},
        skill_mutation_violations={m: sum(e.skill_mutation_violation for e in entries.get(m, {}).values())
                                   for m in MODES[1:]})
