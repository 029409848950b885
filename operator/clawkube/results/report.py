"""Plain-text views of a run: `render(summary)` (fixed-width tables) and `render_progress(...)` (one line).

No colour codes: the output is meant for terminals, logs and files alike.
"""
from __future__ import annotations

from typing import Optional, Sequence

from clawkube.results.summary import Metrics, Ratios, RunSummary, UsageStats

MISSING = "-"


def _num(x: Optional[float], digits: int = 3) -> str:
    return MISSING if x is None else f"{x:.{digits}f}"


def _ratio(x: Optional[float]) -> str:
    return MISSING if x is None else f"{x:.2f}x"


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """First column left-aligned, the others right-aligned, two spaces apart."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        out = [cells[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(cells[1:], widths[1:])]
        return "  ".join(out).rstrip()

    return [line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)]


def shown_ks(k_max: int) -> list[int]:
    """The k columns of the score table: all of 1..K up to 5, else 1, 2, 5 and K (summary.json has all)."""
    return list(range(1, k_max + 1)) if k_max <= 5 else sorted({1, 2, 5, k_max})


def _score_table(summary: RunSummary) -> list[str]:
    ks = shown_ks(summary.trials_per_task)
    headers = ["category", "tasks", "planned", "finished", "failed", "missing", "mean", "graded", "pass",
               *(f"pass@{k}" for k in ks), *(f"pass^{k}" for k in ks), "all-pass"]

    def row(name: str, m: Metrics) -> list[str]:
        return [name, str(m.tasks), str(m.trials_planned), str(m.trials_finished), str(m.trials_failed),
                str(m.trials_missing), _num(m.mean_score), _num(m.mean_score_graded), _num(m.pass_rate),
                *(_num(m.pass_at_k.get(k)) for k in ks), *(_num(m.pass_hat_k.get(k)) for k in ks),
                _num(m.all_passed)]

    rows = [row("ALL", summary.overall), *(row(c, m) for c, m in summary.by_category.items())]
    return _table(headers, rows)


def _errors_table(summary: RunSummary) -> list[str]:
    """Failed trials by error kind, and (when any) the failed attempts that were retried."""
    if not any(summary.retries.values()):
        if not any(summary.errors.values()):
            return ["no failed trials"]
        return _table(["error kind", "trials"], [[k, str(n)] for k, n in summary.errors.items()])
    kinds = list(dict.fromkeys([*summary.errors, *summary.retries]))
    return _table(["error kind", "trials", "retried"],
                  [[k, str(summary.errors.get(k, 0)), str(summary.retries.get(k, 0))] for k in kinds])


def _usage_rows(name: str, u: UsageStats) -> list[list[str]]:
    t, m = u.total, u.mean_per_trial
    rows = [[f"{name} total", str(u.trials), f"{t.input_tokens:,}", f"{t.output_tokens:,}",
             f"{t.total_tokens:,}", f"{t.cost_usd:.4f}", f"{t.wall_seconds:.1f}"]]
    if m is not None:
        rows.append([f"{name} per trial", "", f"{m.input_tokens:,.1f}", f"{m.output_tokens:,.1f}",
                     f"{m.total_tokens:,.1f}", f"{m.cost_usd:.4f}", f"{m.wall_seconds:.1f}"])
    return rows


def _usage_table(summary: RunSummary) -> list[str]:
    rows = _usage_rows("end-to-end", summary.usage_end_to_end)
    if summary.usage_execution is not None:
        rows += _usage_rows("execution", summary.usage_execution)
    return _table(["usage", "trials", "tokens in", "tokens out", "tokens", "cost $", "wall s"], rows)


def _claw_eval_lines(summary: RunSummary) -> list[str]:
    c = summary.claw_eval
    if c is None:
        return []
    return [f"CLAW-Eval: {c.tasks} tasks, {c.trials_finished} trials finished, {c.trials_graded} graded; "
            f"mean task score {_num(c.mean_task_score)}",
            *_table(["dimension", "mean"], [[d, _num(v)] for d, v in c.dimensions.items()])]


def _evoclaw_lines(summary: RunSummary) -> list[str]:
    e = summary.evoclaw
    if e is None:
        return []
    lines = [f"EvoClawBench: {e.tasks} tasks, {e.trials_finished} trials finished, {e.trials_graded} graded; "
             f"mean score {_num(e.mean_score)}"]
    if e.sub_problems:
        lines += _table(["sub-problem", "mean"], [[s, _num(v)] for s, v in e.sub_problems.items()])
    return lines


def _mode_table(summary: RunSummary, execution: bool) -> list[str]:
    rows = []
    for mode, s in summary.by_mode.items():
        usage = s.usage_execution if execution else s.usage_end_to_end
        ratios: Optional[Ratios] = s.vs_baseline_execution if execution else s.vs_baseline
        m = usage.mean_per_trial if usage else None
        per_trial = [_num(m.total_tokens, 1), _num(m.cost_usd, 4), _num(m.wall_seconds, 1)] if m else [MISSING] * 3
        r = ratios or Ratios(score=None, tokens=None, cost=None, time=None)
        rows.append([mode, str(s.metrics.trials_finished), _num(s.metrics.mean_score), _num(s.metrics.pass_rate),
                     *per_trial, _ratio(r.score), _ratio(r.tokens), _ratio(r.cost), _ratio(r.time)])
    return _table(["mode", "finished", "mean", "pass", "tokens/trial", "cost/trial", "s/trial",
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
        _claw_eval_lines(summary),
        _evoclaw_lines(summary),
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
