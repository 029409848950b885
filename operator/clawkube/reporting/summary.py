"""`summarize(results, trials_per_task) -> RunSummary`: the metrics of a run, per category and per mode.

Counting rules (one place, so every consumer agrees):
- A trial is *finished* when its result says SUCCEEDED (graded, any score) or FAILED (no score: `error_kind`).
  PENDING/RUNNING results and trials with no result at all are planned-but-not-finished (`trials_missing`).
- Several results for the same (mode, task, trial index) are retries: the highest `attempt` wins.
- `mean_score` is over finished trials with a failed trial counting as 0; `mean_score_graded` is over graded
  trials only. `pass_rate` is passed / finished (a failed trial did not pass). A trial passed when `Score.passed`
  (score >= the task's pass threshold, tau = 0.75 by default).
- pass@k and pass^k (k = 1..K, K = trials per task) are computed per task from its finished trials (n) and passes
  (c), then averaged over the tasks with n >= k (`tasks_at_k` says how many). `all_passed` is the plain rate of
  tasks whose K finished trials all passed, over tasks with exactly K finished trials.
- Runs holding several evaluation modes (EvoClawBench baseline/preskill/postskill; a result with `mode=None`
  counts as baseline) plan K trials per task per mode; the k metrics treat each (task, mode) pair as one task, and
  `by_mode` gives each mode's metrics and its ratios against baseline (mean score and per-trial mean usage of
  each mode's finished trials; not paired by task).
- Usage: `usage_end_to_end` sums `TrialResult.usage` over finished trials (everything the trial spent, including
  EvoClawBench skill authoring). `usage_execution` is set when any finished trial carries
  `Score.details["execution_usage"]` (a `Usage` dict: the task-solving part only); a trial without it counts its
  whole usage as execution (it had no separate authoring). `total_tokens` of 0 is read as input + output tokens.
- Benchmarks: `benchmarks` holds, per benchmark (plugin name = `TrialResult.task_format`) that has results, the
  section its plugin computes over its own trials (`Benchmark.summarize`, e.g. CLAW-Eval's dimensions,
  EvoClawBench's sub-problem means), as JSON.
"""
from __future__ import annotations

from typing import Any, Iterable, Optional

from pydantic import BaseModel, Field

from clawkube.benchmarks import registry
from clawkube.contracts import details
from clawkube.results.grouping import BASELINE, groups, mode_of, passed, score_of
from clawkube.results.metrics import all_passed_rate, mean, pass_at_k, pass_hat_k
from clawkube.results.model import ErrorKind, TrialResult, TrialState, Usage
from clawkube.runspec import EvalMode

_MODE_ORDER = [m.value for m in EvalMode]
_FINISHED = (TrialState.SUCCEEDED, TrialState.FAILED)


class Metrics(BaseModel):
    """Metrics of a set of tasks: the whole run, one category or one mode."""

    tasks: int
    trials_planned: int
    trials_finished: int  # succeeded + failed
    trials_succeeded: int  # graded (any score, including 0)
    trials_failed: int  # no score; see RunSummary.errors
    trials_missing: int  # planned - finished
    mean_score: Optional[float]  # over finished trials; failed trials count 0
    mean_score_graded: Optional[float]  # over graded trials only
    pass_rate: Optional[float]  # passed / finished
    pass_at_k: dict[int, Optional[float]]  # k = 1..K: mean over tasks with >= k finished trials
    pass_hat_k: dict[int, Optional[float]]  # pass^k, same averaging
    tasks_at_k: dict[int, int]  # how many tasks the k-th values average over
    all_passed: Optional[float]  # tasks with exactly K finished trials whose K trials all passed
    all_passed_tasks: int  # how many tasks `all_passed` is over


class UsageMean(BaseModel):
    """Per-trial means of the `Usage` fields."""

    input_tokens: float
    output_tokens: float
    cache_read_tokens: float
    total_tokens: float
    cost_usd: float
    wall_seconds: float
    turns: float
    tool_calls: float
    tool_calls_by_kind: dict[str, float] = Field(default_factory=dict)  # exec, read, write, search, web, ...


class UsageStats(BaseModel):
    trials: int  # finished trials counted
    total: Usage
    mean_per_trial: Optional[UsageMean]  # None when no trial finished


class Ratios(BaseModel):
    """A mode's value divided by baseline's (None when baseline's is 0 or unknown)."""

    score: Optional[float]  # mean_score
    tokens: Optional[float]  # mean total tokens per trial
    cost: Optional[float]  # mean cost per trial
    time: Optional[float]  # mean wall seconds per trial


class ModeSummary(BaseModel):
    mode: str
    metrics: Metrics
    usage_end_to_end: UsageStats
    usage_execution: Optional[UsageStats]  # set when the run has any execution usage
    vs_baseline: Optional[Ratios]  # on end-to-end usage; None without a baseline mode
    vs_baseline_execution: Optional[Ratios]  # on execution usage; None without execution usage or baseline


class RunSummary(BaseModel):
    trials_per_task: int
    modes: list[str]  # evaluation modes present (baseline when results carry none)
    overall: Metrics
    by_category: dict[str, Metrics]
    errors: dict[str, int]  # ErrorKind value (or "unknown") -> failed trials
    retries: dict[str, int] = Field(default_factory=dict)  # ErrorKind value -> failed attempts that were retried
    usage_end_to_end: UsageStats
    usage_execution: Optional[UsageStats]
    benchmarks: dict[str, dict[str, Any]] = {}  # benchmark name -> its plugin's section (JSON), when it has one
    by_mode: dict[str, ModeSummary]  # only when results carry more than one mode


def _where(r: TrialResult) -> str:
    return f"task '{r.task_id}' trial {r.trial_index} (mode {mode_of(r)}, attempt {r.attempt})"


def _latest(results: Iterable[TrialResult], trials_per_task: int,
            planned: Optional[set[str]]) -> list[TrialResult]:
    """Validate and keep one result per (mode, task, trial index): the highest attempt."""
    latest: dict[tuple[str, str, int], TrialResult] = {}
    for r in results:
        if r.trial_index >= trials_per_task:
            raise ValueError(f"{_where(r)}: trial_index outside 0..{trials_per_task - 1} "
                             f"(trials_per_task={trials_per_task})")
        if planned is not None and r.task_id not in planned:
            raise ValueError(f"{_where(r)}: task is not among the planned tasks")
        if r.state is TrialState.SUCCEEDED and r.score is None:
            raise ValueError(f"{_where(r)}: state succeeded but no score")
        key = (mode_of(r), r.task_id, r.trial_index)
        if key not in latest or r.attempt >= latest[key].attempt:
            latest[key] = r
    return list(latest.values())


def _metrics(finished: list[TrialResult], tasks: int, trials_planned: int, k_max: int) -> Metrics:
    graded = [r for r in finished if r.state is TrialState.SUCCEEDED]
    outcomes = [[passed(r) for r in g] for g in groups(finished).values()]
    pass_at: dict[int, Optional[float]] = {}
    pass_hat: dict[int, Optional[float]] = {}
    at_k: dict[int, int] = {}
    for k in range(1, k_max + 1):
        eligible = [o for o in outcomes if len(o) >= k]
        at_k[k] = len(eligible)
        pass_at[k] = mean(pass_at_k(len(o), sum(o), k) for o in eligible)
        pass_hat[k] = mean(pass_hat_k(len(o), sum(o), k) for o in eligible)
    return Metrics(
        tasks=tasks,
        trials_planned=trials_planned,
        trials_finished=len(finished),
        trials_succeeded=len(graded),
        trials_failed=len(finished) - len(graded),
        trials_missing=trials_planned - len(finished),
        mean_score=mean(score_of(r) for r in finished),
        mean_score_graded=mean(r.score.score for r in graded),
        pass_rate=mean(1.0 if passed(r) else 0.0 for r in finished),
        pass_at_k=pass_at,
        pass_hat_k=pass_hat,
        tasks_at_k=at_k,
        all_passed=all_passed_rate(outcomes, k_max),
        all_passed_tasks=sum(1 for o in outcomes if len(o) == k_max),
    )


def _normalised(u: Usage) -> Usage:
    if u.total_tokens == 0:
        return u.model_copy(update={"total_tokens": u.input_tokens + u.output_tokens})
    return u


def execution_usage(r: TrialResult) -> Optional[Usage]:
    """The execution-only usage a trial carries in `Score.details["execution_usage"]`, if any."""
    if r.score is None:
        return None
    try:
        return details.execution_usage(r.score.details)
    except ValueError as e:
        raise ValueError(f"{_where(r)}: score.details.execution_usage is not a Usage: {e}") from e


def _usage_stats(usages: list[Usage]) -> UsageStats:
    total = Usage()
    for u in usages:
        total = total.add(_normalised(u))
    n = len(usages)
    per_trial = UsageMean(**{f: getattr(total, f) / n for f in Usage.model_fields if f != "tool_calls_by_kind"},
                          tool_calls_by_kind={k: v / n for k, v in sorted(total.tool_calls_by_kind.items())}
                          ) if n else None
    return UsageStats(trials=n, total=total, mean_per_trial=per_trial)


def _usage(finished: list[TrialResult], with_execution: bool) -> tuple[UsageStats, Optional[UsageStats]]:
    end_to_end = _usage_stats([r.usage for r in finished])
    if not with_execution:
        return end_to_end, None
    return end_to_end, _usage_stats([execution_usage(r) or r.usage for r in finished])


def _errors(finished: list[TrialResult]) -> dict[str, int]:
    counts = {k.value: 0 for k in ErrorKind}
    for r in finished:
        if r.state is TrialState.FAILED:
            key = r.error_kind.value if r.error_kind else "unknown"
            counts[key] = counts.get(key, 0) + 1
    return counts


def _retries(finished: list[TrialResult]) -> dict[str, int]:
    counts = {k.value: 0 for k in ErrorKind}
    for r in finished:
        for kind, n in r.retries.items():
            counts[kind] = counts.get(kind, 0) + n
    return counts


def _benchmarks(seen: list[TrialResult], finished: list[TrialResult]) -> dict[str, dict[str, Any]]:
    """Each benchmark's own section, over the trials of its tasks (in the registry's order)."""
    present = {r.task_format for r in seen}
    out: dict[str, dict[str, Any]] = {}
    for plugin in registry.all_benchmarks():
        if plugin.name not in present:
            continue
        section = plugin.summarize([r for r in seen if r.task_format == plugin.name],
                                   [r for r in finished if r.task_format == plugin.name])
        if section is not None:
            out[plugin.name] = section.model_dump(mode="json")
    return out


def _ratio(value: Optional[float], base: Optional[float]) -> Optional[float]:
    if value is None or not base:
        return None
    return value / base


def _ratios(mode: Metrics, usage: UsageStats, base: Metrics, base_usage: UsageStats) -> Ratios:
    m, b = usage.mean_per_trial, base_usage.mean_per_trial
    if m is None or b is None:
        return Ratios(score=_ratio(mode.mean_score, base.mean_score), tokens=None, cost=None, time=None)
    return Ratios(
        score=_ratio(mode.mean_score, base.mean_score),
        tokens=_ratio(m.total_tokens, b.total_tokens),
        cost=_ratio(m.cost_usd, b.cost_usd),
        time=_ratio(m.wall_seconds, b.wall_seconds),
    )


def _by_mode(modes: list[str], finished: list[TrialResult], tasks: int, k_max: int,
             with_execution: bool) -> dict[str, ModeSummary]:
    parts: dict[str, tuple[Metrics, UsageStats, Optional[UsageStats]]] = {}
    for mode in modes:
        mine = [r for r in finished if mode_of(r) == mode]
        parts[mode] = (_metrics(mine, tasks, tasks * k_max, k_max), *_usage(mine, with_execution))
    base = parts.get(BASELINE)
    out: dict[str, ModeSummary] = {}
    for mode, (metrics, e2e, execution) in parts.items():
        out[mode] = ModeSummary(
            mode=mode, metrics=metrics, usage_end_to_end=e2e, usage_execution=execution,
            vs_baseline=_ratios(metrics, e2e, base[0], base[1]) if base else None,
            vs_baseline_execution=(_ratios(metrics, execution, base[0], base[2])
                                   if base and execution is not None else None),
        )
    return out


def _mode_order(mode: str) -> tuple:
    return (_MODE_ORDER.index(mode) if mode in _MODE_ORDER else len(_MODE_ORDER), mode)


def summarize(results: list[TrialResult], trials_per_task: int,
              planned_tasks: Optional[list[str]] = None, planned_modes: Optional[list[str]] = None) -> RunSummary:
    """Summarise a run's trial results.

    `planned_tasks` (task ids) counts tasks with no result yet as planned-but-not-finished; without it the planned
    tasks are those that have a result; `planned_modes` likewise for the evaluation modes. Per-category counts
    cover tasks with at least one result (a task's category is only known from its results). Raises ValueError for a result outside the plan.
    """
    if trials_per_task < 1:
        raise ValueError(f"trials_per_task must be >= 1, got {trials_per_task}")
    planned = list(dict.fromkeys(planned_tasks)) if planned_tasks is not None else None
    seen = _latest(results, trials_per_task, set(planned) if planned is not None else None)
    finished = [r for r in seen if r.state in _FINISHED]
    task_ids = planned if planned is not None else list(dict.fromkeys(r.task_id for r in seen))
    modes = sorted({mode_of(r) for r in seen} | set(planned_modes or []) or {BASELINE}, key=_mode_order)
    per_task = trials_per_task * len(modes)
    with_execution = any(execution_usage(r) is not None for r in finished)

    category_of: dict[str, str] = {}
    for r in seen:
        category_of.setdefault(r.task_id, r.category)
    by_category: dict[str, Metrics] = {}
    for category in sorted(set(category_of.values())):
        ids = {t for t, c in category_of.items() if c == category}
        by_category[category] = _metrics([r for r in finished if r.task_id in ids], len(ids),
                                         len(ids) * per_task, trials_per_task)

    usage_e2e, usage_exec = _usage(finished, with_execution)
    return RunSummary(
        trials_per_task=trials_per_task,
        modes=modes,
        overall=_metrics(finished, len(task_ids), len(task_ids) * per_task, trials_per_task),
        by_category=by_category,
        errors=_errors(finished), retries=_retries(finished),
        usage_end_to_end=usage_e2e,
        usage_execution=usage_exec,
        benchmarks=_benchmarks(seen, finished),
        by_mode=(_by_mode(modes, finished, len(task_ids), trials_per_task, with_execution)
                 if len(modes) > 1 else {}),
    )
