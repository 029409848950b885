"""Plain-text views of a run: `render(summary)` (fixed-width tables) and `render_progress(...)` (one line).

No colour codes: the output is meant for terminals, logs and files alike.
"""
from __future__ import annotations

from typing import Optional

from clawkube.benchmarks import registry
from clawkube.reporting.summary import Metrics, Ratios, RunSummary, UsageStats
from clawkube.results.tables import MISSING, num, ratio, table


def shown_ks(k_max: int) -> list[int]:
    """The k columns of the score table: all of 1..K up to 5, else 1, 2, 5 and K (summary.json has all)."""
    return list(range(1, k_max + 1)) if k_max <= 5 else sorted({1, 2, 5, k_max})


def _score_table(summary: RunSummary) -> list[str]:
    ks = shown_ks(summary.trials_per_task)
    headers = ["category", "tasks", "planned", "finished", "failed", "missing", "mean", "graded", "pass",
               *(f"pass@{k}" for k in ks), *(f"pass^{k}" for k in ks), "all-pass"]

    def row(name: str, m: Metrics) -> list[str]:
        return [name, str(m.tasks), str(m.trials_planned), str(m.trials_finished), str(m.trials_failed),
                str(m.trials_missing), num(m.mean_score), num(m.mean_score_graded), num(m.pass_rate),
                *(num(m.pass_at_k.get(k)) for k in ks), *(num(m.pass_hat_k.get(k)) for k in ks),
                num(m.all_passed)]

    rows = [row("ALL", summary.overall), *(row(c, m) for c, m in summary.by_category.items())]
    return table(headers, rows)


def _errors_table(summary: RunSummary) -> list[str]:
    """Failed trials by error kind, and (when any) the failed attempts that were retried."""
    if not any(summary.retries.values()):
        if not any(summary.errors.values()):
            return ["no failed trials"]
        return table(["error kind", "trials"], [[k, str(n)] for k, n in summary.errors.items()])
    kinds = list(dict.fromkeys([*summary.errors, *summary.retries]))
    return table(["error kind", "trials", "retried"],
                 [[k, str(summary.errors.get(k, 0)), str(summary.retries.get(k, 0))] for k in kinds])


def _kinds(by_kind: dict, fmt: str) -> str:
    """Tool calls by kind, e.g. `exec 3, write 1`."""
    return ", ".join(f"{k} {format(v, fmt)}" for k, v in sorted(by_kind.items()) if v) or "-"


def _usage_rows(name: str, u: UsageStats) -> list[list[str]]:
    t, m = u.total, u.mean_per_trial
    rows = [[f"{name} total", str(u.trials), f"{t.input_tokens:,}", f"{t.output_tokens:,}",
             f"{t.total_tokens:,}", f"{t.cost_usd:.4f}", f"{t.wall_seconds:.1f}", f"{t.tool_calls:,}",
             _kinds(t.tool_calls_by_kind, ",")]]
    if m is not None:
        rows.append([f"{name} per trial", "", f"{m.input_tokens:,.1f}", f"{m.output_tokens:,.1f}",
                     f"{m.total_tokens:,.1f}", f"{m.cost_usd:.4f}", f"{m.wall_seconds:.1f}", f"{m.tool_calls:,.1f}",
                     _kinds(m.tool_calls_by_kind, ".1f")])
    return rows


def _usage_table(summary: RunSummary) -> list[str]:
    rows = _usage_rows("end-to-end", summary.usage_end_to_end)
    if summary.usage_execution is not None:
        rows += _usage_rows("execution", summary.usage_execution)
    return table(["usage", "trials", "tokens in", "tokens out", "tokens", "cost $", "wall s", "tool calls",
                  "by kind"], rows)


def _benchmark_lines(summary: RunSummary) -> list[list[str]]:
    """Each benchmark's section as its plugin shows it; a section of a benchmark this build does not know is
    shown as its raw fields."""
    out = []
    for name, section in summary.benchmarks.items():
        try:
            plugin = registry.get(name)
        except registry.UnknownBenchmark:
            out.append([f"{name} (no plugin): " + ", ".join(f"{k}={v}" for k, v in section.items())])
            continue
        out.append(plugin.report_lines(section))
    return out


def _mode_table(summary: RunSummary, execution: bool) -> list[str]:
    rows = []
    for mode, s in summary.by_mode.items():
        usage = s.usage_execution if execution else s.usage_end_to_end
        ratios: Optional[Ratios] = s.vs_baseline_execution if execution else s.vs_baseline
        m = usage.mean_per_trial if usage else None
        per_trial = [num(m.total_tokens, 1), num(m.cost_usd, 4), num(m.wall_seconds, 1)] if m else [MISSING] * 3
        r = ratios or Ratios(score=None, tokens=None, cost=None, time=None)
        rows.append([mode, str(s.metrics.trials_finished), num(s.metrics.mean_score), num(s.metrics.pass_rate),
                     *per_trial, ratio(r.score), ratio(r.tokens), ratio(r.cost), ratio(r.time)])
    return table(["mode", "finished", "mean", "pass", "tokens/trial", "cost/trial", "s/trial",
                   "score", "tokens", "cost", "time"], rows)


def render(summary: RunSummary) -> str:
    o = summary.overall
    sections = [
        [f"Run summary: {o.tasks} tasks, {summary.trials_per_task} trials per task, "
         f"modes: {', '.join(summary.modes)}; "
         f"{o.trials_finished}/{o.trials_planned} trials finished, {o.trials_failed} failed",
         "mean: failed trials count 0; graded: over graded trials only; "
         "pass: score >= the task's threshold (0.75 by default)",
         "pass@k, pass^k: per task, averaged over tasks with >= k finished trials; "
         f"all-pass: tasks whose {summary.trials_per_task} trials all passed",
         *_score_table(summary)],
        _errors_table(summary),
        _usage_table(summary),
        *_benchmark_lines(summary),
    ]
    if summary.by_mode:
        sections.append(["Modes (end-to-end usage; ratios vs baseline)", *_mode_table(summary, execution=False)])
        if summary.usage_execution is not None:
            sections.append(["Modes (execution-only usage; ratios vs baseline)",
                             *_mode_table(summary, execution=True)])
    return "\n\n".join("\n".join(s) for s in sections if s) + "\n"


def render_progress(done: int, total: int, failed: int = 0, width: int = 30) -> str:
    """`[#######.....]  35/100  (2 failed)`: `width` is the number of cells inside the brackets."""
    if total < 0 or not 0 <= done <= total:
        raise ValueError(f"progress needs 0 <= done <= total, got done={done} total={total}")
    if not 0 <= failed <= done:
        raise ValueError(f"progress needs 0 <= failed <= done, got failed={failed} done={done}")
    if width < 1:
        raise ValueError(f"progress bar width must be >= 1, got {width}")
    filled = width if total == 0 else done * width // total
    line = f"[{'#' * filled}{'.' * (width - filled)}] {str(done).rjust(len(str(total)))}/{total}"
    return f"{line}  ({failed} failed)" if failed else line
