"""Local runner overhead per trial, and local throughput.

1. Overhead: a synthetic WildClawBench task with a small workspace, the `nop` agent. The runner's wall time per
   trial (setup + agent sandbox + capture + firewall + grade + collect) is compared with the grader alone: the same
   grader process invocation (`phases.grade`, i.e. `python -m clawkube.lifecycle.grader_main`, sandboxed with the
   same backend and limits as in the runner) on the same grading workspace. Agent and grader are both sandboxed
   (the runner's default backend: bwrap when root). Both are measured in alternating rounds within one run, so
   machine noise hits both alike.
   Target: ratio < 1.5.
2. Sandbox cost: the same runner trials with the agent and the grader sandboxed (bwrap) and unsandboxed (`none`),
   in alternating rounds within one run: ratio sandboxed / unsandboxed per trial. Target: <= 1.5.
3. Throughput: trials/s of the local runner with --parallel 1, 2, 4 on the sample tasks (`tasks/`), nop agent.

4. With `--upstream DIR` (a checkout of EvoClawBench): per-trial time against EvoClawBench's own local runner on
   the same shared-corpus tasks, do-nothing agent, 2 workers, side by side in alternating rounds
   (bench/overhead_evoclaw.py). Target: ratio <= 2. `--only-upstream` runs just that.

    python bench/local_overhead.py [--trials 20] [--rounds 3] [--files 10] [--parallel 1,2,4] [--json OUT.json]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "operator"))

from clawkube.lifecycle import phases, sandbox  # noqa: E402
from clawkube.local import trial  # noqa: E402
from clawkube.local.runner import LocalRunner, isolation  # noqa: E402
from clawkube.runspec import AgentSpec, BenchmarkRunSpec, RetryPolicy, TaskSource  # noqa: E402
from clawkube.benchmarks.loader import load_tasks  # noqa: E402

GRADER = '''
import os
def grade(transcript, workspace_path):
    out = os.path.join(workspace_path, "answer.txt")
    got = open(out).read().strip() if os.path.exists(out) else ""
    gt = open(os.path.join(workspace_path, "gt", "answer.txt")).read().strip()
    ok = float(got == gt)
    return {"answer_right": ok, "overall_score": ok}
'''


def make_task(root: Path, files: int, file_bytes: int) -> Path:
    """A WildClawBench task whose workspace holds `files` files of `file_bytes` bytes; returns the tasks folder."""
    fx = root / "fixtures" / "small"
    (fx / "exec").mkdir(parents=True)
    (fx / "gt").mkdir()
    for i in range(files):
        (fx / "exec" / f"f{i:03d}.txt").write_text(("x" * 63 + "\n") * max(1, file_bytes // 64))
    (fx / "gt" / "answer.txt").write_text("42\n")
    tasks = root / "tasks"
    tasks.mkdir()
    (tasks / "small.md").write_text(textwrap.dedent("""\
        ---
        id: small
        name: Small workspace
        category: bench
        timeout_seconds: 60
        ---

        ## Prompt

        Write 42 to answer.txt.

        ## Automated Checks

        ```python
        {grader}
        ```

        ## Workspace Path

        `{fx}`
        """).format(grader=GRADER.strip(), fx=fx))
    return tasks


def run_spec(tasks: Path, trials: int, parallel: int) -> BenchmarkRunSpec:
    return BenchmarkRunSpec(tasks=TaskSource(path=str(tasks)), agent=AgentSpec(harness="nop"), trials=trials,
                            parallelism=parallel, retry=RetryPolicy(grading_error=1))


def runner_trial_seconds(tasks: Path, out: Path, trials: int, mode: str = "auto"
                         ) -> tuple[list[float], dict[str, float]]:
    """Per-trial wall seconds at parallelism 1 (gaps between consecutive results) and mean phase seconds."""
    stamps: list[float] = []
    runner = LocalRunner(run_spec(tasks, trials, 1), out, progress=None, fresh=True, sandbox_mode=mode,
                         on_result=lambda r: stamps.append(time.perf_counter()))
    stamps.append(time.perf_counter())
    outcome = runner.run()
    bad = [r for r in outcome.results if r.score is None]
    if bad:
        raise SystemExit(f"a benchmark trial failed: {bad[0].error_kind}: {bad[0].error_message}")
    per_trial = [b - a for a, b in zip(stamps, stamps[1:])][1:]  # the first also holds loading + staging
    phase_names = sorted({k for r in outcome.results for k in r.phase_seconds})
    phase = {k: statistics.mean(r.phase_seconds.get(k, 0.0) for r in outcome.results) for k in phase_names}
    return per_trial, phase


def grader_alone_seconds(tasks: Path, finished: Path, scratch: Path, n: int) -> list[float]:
    """The same grader invocation the runner makes, on the same grading workspace, `n` times."""
    task = load_tasks(tasks).tasks[0]
    prepared = trial.prepare(task, "nop", scratch / "private")
    out = scratch / "out"
    shutil.copytree(finished, out)
    dirs = phases.TrialDirs.under(scratch / "agent", out, scratch / "grading")
    dirs.grading.mkdir(parents=True)
    iso = isolation(run_spec(tasks, 1, 1), sandbox.resolve_mode("auto"))  # sandboxed exactly as in the runner
    ws, manifest = phases.firewall(dirs, prepared.grading_dir, {}, iso)
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        phases.grade(dirs, prepared.grading_dir, ws, manifest, {}, iso=iso)
        times.append(time.perf_counter() - t0)
    return times


def overhead(trials: int, rounds: int, files: int, file_bytes: int) -> dict:
    root = Path(tempfile.mkdtemp(prefix="clawkube-bench-local-"))
    try:
        tasks = make_task(root, files, file_bytes)
        runner_times: list[float] = []
        grader_times: list[float] = []
        phase_sums: dict[str, list[float]] = {}
        for r in range(rounds):  # alternate, so load changes on the machine hit both sides
            out = root / f"out{r}"
            per_trial, phase = runner_trial_seconds(tasks, out, trials + 1)
            runner_times += per_trial
            for k, v in phase.items():
                phase_sums.setdefault(k, []).append(v)
            grader_times += grader_alone_seconds(tasks, out / "trials" / "small" / "0", root / f"g{r}", trials)
        runner_med, grader_med = statistics.median(runner_times), statistics.median(grader_times)
        return {"trials_per_round": trials, "rounds": rounds, "workspace_files": files, "file_bytes": file_bytes,
                "runner_trial_seconds_median": round(runner_med, 4),
                "grader_alone_seconds_median": round(grader_med, 4),
                "ratio": round(runner_med / grader_med, 3),
                "phase_seconds_mean": {k: round(statistics.mean(v), 4) for k, v in phase_sums.items()}}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def sandbox_cost(trials: int, rounds: int, files: int, file_bytes: int) -> dict:
    """Runner seconds per trial with bwrap vs with no sandbox, alternating rounds in one run."""
    root = Path(tempfile.mkdtemp(prefix="clawkube-bench-sandbox-"))
    try:
        tasks = make_task(root, files, file_bytes)
        times: dict[str, list[float]] = {"bwrap": [], "none": []}
        phases_by: dict[str, dict[str, list[float]]] = {"bwrap": {}, "none": {}}
        for r in range(rounds):
            for mode in (("bwrap", "none") if r % 2 == 0 else ("none", "bwrap")):
                per_trial, phase = runner_trial_seconds(tasks, root / f"{mode}{r}", trials + 1, mode)
                times[mode] += per_trial
                for k, v in phase.items():
                    phases_by[mode].setdefault(k, []).append(v)
        med = {m: statistics.median(v) for m, v in times.items()}
        return {"trials_per_round": trials, "rounds": rounds,
                "sandboxed_trial_seconds_median": round(med["bwrap"], 4),
                "unsandboxed_trial_seconds_median": round(med["none"], 4),
                "ratio": round(med["bwrap"] / med["none"], 3),
                "phase_seconds_mean": {m: {k: round(statistics.mean(v), 4) for k, v in ph.items()}
                                       for m, ph in phases_by.items()}}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def throughput(tasks: Path, trials: int, parallels: list[int]) -> dict:
    root = Path(tempfile.mkdtemp(prefix="clawkube-bench-tput-"))
    out: dict = {"tasks_folder": str(tasks), "trials_per_task": trials, "by_parallel": {}}
    try:
        for p in parallels:
            t0 = time.perf_counter()
            outcome = LocalRunner(run_spec(tasks, trials, p), root / f"p{p}", progress=None, fresh=True).run()
            wall = time.perf_counter() - t0
            n = len(outcome.results)
            out["by_parallel"][str(p)] = {"trials": n, "seconds": round(wall, 3),
                                          "trials_per_second": round(n / wall, 3),
                                          "infra_errors": sum(r.error_kind is not None and r.error_kind.value == "infra"
                                                              for r in outcome.results)}
    finally:
        shutil.rmtree(root, ignore_errors=True)
    base = out["by_parallel"].get(str(parallels[0]), {}).get("trials_per_second")
    if base:
        for v in out["by_parallel"].values():
            v["speedup"] = round(v["trials_per_second"] / base, 2)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=20, help="trials per round for the overhead measurement")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--files", type=int, default=10, help="files in the synthetic workspace")
    ap.add_argument("--file-bytes", type=int, default=1024)
    ap.add_argument("--tasks", default=str(REPO / "tasks"), help="tasks folder for the throughput measurement")
    ap.add_argument("--tput-trials", type=int, default=2, help="trials per sample task for throughput")
    ap.add_argument("--parallel", default="1,2,4")
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument("--upstream", type=Path, help="a checkout of EvoClawBench: also compare per-trial time with its "
                                                  "own local runner, side by side (bench/overhead_evoclaw.py)")
    ap.add_argument("--upstream-python", help="a Python with the EvoClawBench runner's dependencies")
    ap.add_argument("--evoclaw-tasks", type=int, default=3, help="shared-corpus tasks in that comparison")
    ap.add_argument("--only-upstream", action="store_true", help="run only the comparison with the upstream runner")
    ap.add_argument("--before", type=Path, help="another checkout of this project, run as a third side of that "
                                                "comparison in the same rounds (a before/after figure)")
    args = ap.parse_args(argv)

    figures: dict = {}
    if args.upstream:
        import overhead_evoclaw

        evo = overhead_evoclaw.compare(args.upstream, overhead_evoclaw.tasks(args.evoclaw_tasks), rounds=args.rounds,
                                       python=args.upstream_python,
                                       before=args.before)
        print(overhead_evoclaw.report(evo))
        figures["evoclawbench_vs_upstream"] = evo
        if args.only_upstream:
            if args.json:
                Path(args.json).write_text(json.dumps(figures, indent=1))
            return 0
    ov = overhead(args.trials, args.rounds, args.files, args.file_bytes)
    print(f"overhead: runner {ov['runner_trial_seconds_median'] * 1000:.0f} ms/trial vs grader alone "
          f"{ov['grader_alone_seconds_median'] * 1000:.0f} ms -> ratio {ov['ratio']:.2f} (target < 1.5)")
    print("  phases (mean s): " + ", ".join(f"{k} {v:.3f}" for k, v in ov["phase_seconds_mean"].items()))
    sc = None
    if sandbox.namespace_mode_available():
        sc = sandbox_cost(args.trials, args.rounds, args.files, args.file_bytes)
        print(f"sandbox cost: runner {sc['sandboxed_trial_seconds_median'] * 1000:.0f} ms/trial sandboxed (bwrap) vs "
              f"{sc['unsandboxed_trial_seconds_median'] * 1000:.0f} ms unsandboxed -> ratio {sc['ratio']:.2f} "
              "(target <= 1.5)")
        for m, ph in sc["phase_seconds_mean"].items():
            print(f"  phases {m} (mean s): " + ", ".join(f"{k} {v:.3f}" for k, v in ph.items()))
    else:
        print("sandbox cost: not measured (the bwrap backend is unavailable here: "
              f"{sandbox.ex.backend('bwrap').unavailable()})")
    tp = throughput(Path(args.tasks), args.tput_trials, [int(p) for p in args.parallel.split(",")])
    for p, v in tp["by_parallel"].items():
        print(f"throughput --parallel {p}: {v['trials']} trials in {v['seconds']:.1f}s = "
              f"{v['trials_per_second']:.2f} trials/s (x{v.get('speedup', 1):.2f})")
    figures.update({"overhead": ov, "sandbox_cost": sc, "throughput": tp, "loadavg_at_end": os.getloadavg(),
                    "nproc": os.cpu_count()})
    print(f"load average at the end: {figures['loadavg_at_end'][0]:.1f} on {figures['nproc']} CPUs")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
