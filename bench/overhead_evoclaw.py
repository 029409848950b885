"""Per-trial overhead against EvoClawBench's own local runner, side by side in one run (bench/local_overhead.py
--upstream DIR).

The same tasks of the shared EvoClawBench corpus, a do-nothing agent, the same number of workers, baseline mode:
- the benchmark's runner: `scripts/benchmark.py --environment local --runtime nanobot --mode baseline` from the
  checkout, with a `nanobot` that exits at once (bench/evoclaw_shim.py) first on PATH;
- this project: `python -m clawkube run run.yaml` with the `nop` agent, its default isolation (sandboxed agent and
  grader).
Each side is a fresh command (start-up, task loading, every trial, results), timed from the outside, in
alternating rounds (each side first every other round) so machine load hits both alike. Per-trial time = wall
time / trials; the figure is the ratio of the medians (this project / the benchmark's runner). Target: at most 2.
Also printed: the CPU time (user + system) of each side's whole process tree per trial, and the 1-min load
average before and after each round (the figure means little on a loaded machine: say the load with it).

Bytecode: both sides run with compiled modules, as installed software does (pip compiles a package's modules at
install; a checkout's scripts get their __pycache__ on first run). This machine's sessions set
PYTHONDONTWRITEBYTECODE, which would make the benchmark's runner compile its scripts from source on every start,
and this project too unless its package was compiled earlier (which then favours this side). So each side's
interpreter writes and reads its bytecode under a private PYTHONPYCACHEPREFIX (nothing is written into the
benchmark's checkout), clawkube's package is compiled once (`compileall`: its grading processes import it
read-only inside their sandboxes; the __pycache__ folders are git-ignored), and one warm-up round of each side
is run and not counted. (`bytecode=False`: the environment as it is, for comparison with figures taken that way.)

The floor: what this project's design cannot avoid per trial on this machine, measured in the same run: two
bubblewrap sandboxes started with this project's view (agent and grader, each running `true`) and one Python
interpreter started with `-S` (the grading process). Printed per trial, next to the benchmark's own per-trial
time.
"""
from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))

import conformance_evoclaw as conf  # noqa: E402
import evoclaw_shim  # noqa: E402

DEFAULT_TASKS = ("task_01_batch_data_transform", "task_05_config_migration", "task_22_finance_ledger_reconciliation")
TARGET = 2.0


def data_tasks_dir() -> Path:
    return conf.data_root() / "evoclawbench" / "tasks"


MORE_TASKS = ("task_03_api_scaffold", "task_08_schema_ops", "task_27_contract_clause_extraction",
              "task_32_appointment_referral_triage", "task_42_employee_onboarding_checklist",
              "task_52_kubernetes_policy_review", "task_63_messy_csv_normalization", "task_77_ecommerce_catalog_normalization",
              "task_87_civic_service_request_routing")


def tasks(n: int) -> list[str]:
    """The first n of the comparison's automated tasks (3: the issue's setting)."""
    pool = [*DEFAULT_TASKS, *MORE_TASKS]
    if not 1 <= n <= len(pool):
        raise SystemExit(f"--evoclaw-tasks must be 1..{len(pool)}")
    return pool[:n]


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd: list[str], **kw) -> tuple[subprocess.CompletedProcess, float, float]:
    """Run a command; its wall seconds and the CPU seconds of its whole process tree (user + system)."""
    c0, t0 = _children_cpu(), time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    return p, time.perf_counter() - t0, _children_cpu() - c0


def side_env(pycache: Optional[Path]) -> dict[str, str]:
    """The environment both sides start with: this one, with a private bytecode cache when `pycache` is given."""
    env = dict(os.environ)
    if pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def upstream_seconds(base: Path, python: str, tasks: list[str], workers: int, work: Path,
                     pycache: Optional[Path] = None) -> tuple[float, float]:
    work.mkdir(parents=True)
    shim = evoclaw_shim.install(work / "bin")
    env = {**side_env(pycache), "PATH": f"{shim}:{os.environ.get('PATH', '/usr/bin:/bin')}", "HOME": str(work / "home")}
    cmd = [python, str(base / "scripts" / "benchmark.py"), "--model", "scripted/nop", "--runtime", "nanobot",
           "--mode", "baseline", "--suite", ",".join(tasks), "--workers", str(workers), "--no-progress",
           "--environment", "local", "--output-dir", "results"]
    p, wall, cpu = timed(cmd, cwd=work, env=env)
    results = [f for f in (work / "results").glob("[0-9]*_*.json") if not f.name.endswith(".trajectories.json")]
    if p.returncode != 0 or not results:
        raise SystemExit(f"the benchmark's runner failed (exit {p.returncode}):\n{(p.stdout + p.stderr)[-1500:]}")
    got = json.loads(results[0].read_text()).get("baseline_results") or {}
    if sorted(got) != sorted(tasks):
        raise SystemExit(f"the benchmark's runner graded {sorted(got)}, expected {sorted(tasks)}")
    return wall, cpu


def ours_seconds(tasks_dir: Path, tasks: list[str], workers: int, work: Path,
                 pycache: Optional[Path] = None, repo: Path = REPO) -> tuple[float, float]:
    work.mkdir(parents=True)
    spec = {"tasks": {"path": str(tasks_dir)}, "selector": {"ids": tasks}, "agent": {"harness": "nop"},
            "trials": 1, "parallelism": workers}
    (work / "run.yaml").write_text(json.dumps(spec))
    env = {**side_env(pycache), "PYTHONPATH": str(repo / "operator")}
    p, wall, cpu = timed([sys.executable, "-m", "clawkube", "run", str(work / "run.yaml"), "--out", str(work / "out")],
                         env=env)
    results = list((work / "out" / "trials").glob("*/*/result.json"))
    scored = [r for r in results if json.loads(r.read_text()).get("score") is not None]
    if len(scored) != len(tasks):
        raise SystemExit(f"clawkube run graded {len(scored)} of {len(tasks)} trials (exit {p.returncode}):\n"
                         f"{(p.stdout + p.stderr)[-1500:]}")
    return wall, cpu


def floor_seconds(samples: int = 15) -> dict[str, float]:
    """Median seconds of: a bubblewrap sandbox with this project's view running `true` (backend bwrap's one-shot
    path, the grader's), and `python -S -c pass` on the host. (Empty without the bwrap backend.)"""
    sys.path.insert(0, str(REPO / "operator"))
    from clawkube import execution as ex

    if ex.backend("bwrap").unavailable() is not None:
        return {}
    spec = ex.SandboxSpec(name="floor")
    run = ex.ExecSpec(argv=["true"], cwd="/", limits=ex.Limits(timeout=30))

    def median(fn) -> float:
        xs = []
        for _ in range(samples):
            t0 = time.perf_counter()
            fn()
            xs.append(time.perf_counter() - t0)
        return statistics.median(xs)
    return {"bwrap_true": median(lambda: ex.run_once("bwrap", spec, run)),
            "python_S": median(lambda: subprocess.run([sys.executable, "-S", "-c", "pass"], check=True))}


def compare(upstream: Path, tasks: Optional[list[str]] = None, workers: int = 2, rounds: int = 3,
            python: Optional[str] = None, bytecode: bool = True, before: Optional[Path] = None) -> dict:
    """`before`: another checkout of this project (e.g. `git worktree add DIR COMMIT`), run as a third side in
    the same rounds: a before/after figure in the same conditions."""
    base = conf.upstream_layout(upstream)
    py = conf.upstream_python(base, python)
    tasks = list(tasks or DEFAULT_TASKS)
    root = Path(tempfile.mkdtemp(prefix="clawkube-bench-evoclaw-"))
    sides = ("upstream", "ours", *(("before",) if before else ()))
    wall: dict[str, list[float]] = {s: [] for s in sides}
    cpu: dict[str, list[float]] = {s: [] for s in sides}
    pycache = root / "pycache" if bytecode else None
    run = {"upstream": lambda r: upstream_seconds(base, py, tasks, workers, root / f"up{r}", pycache),
           "ours": lambda r: ours_seconds(data_tasks_dir(), tasks, workers, root / f"ours{r}", pycache)}
    if before:
        run["before"] = lambda r: ours_seconds(data_tasks_dir(), tasks, workers, root / f"before{r}", pycache,
                                               repo=before)
    try:
        if bytecode:  # compiled modules, as installed: not counted
            for repo in (REPO, *((before,) if before else ())):
                subprocess.run([sys.executable, "-m", "compileall", "-q", str(repo / "operator" / "clawkube")],
                               env=side_env(None), check=True)
            for side in sides:
                run[side]("warm")
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    load = [os.getloadavg()[0]]
    floor: dict[str, float] = {}
    try:
        for r in range(rounds):  # alternating, and each side first every other round
            for side in (sides if r % 2 == 0 else sides[::-1]):
                w, c = run[side](r)
                wall[side].append(w / len(tasks))
                cpu[side].append(c / len(tasks))
            load.append(os.getloadavg()[0])
        floor = floor_seconds()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    t, o = statistics.median(wall["upstream"]), statistics.median(wall["ours"])
    tc, oc = statistics.median(cpu["upstream"]), statistics.median(cpu["ours"])
    return {"tasks": tasks, "workers": workers, "rounds": rounds, "bytecode_cache": bytecode,
            "floor_seconds": {k: round(v, 4) for k, v in floor.items()},
            "upstream_trial_seconds": [round(x, 3) for x in wall["upstream"]],
            "ours_trial_seconds": [round(x, 3) for x in wall["ours"]],
            "upstream_trial_seconds_median": round(t, 3), "ours_trial_seconds_median": round(o, 3),
            "ratio": round(o / t, 2), "target": TARGET,
            "upstream_trial_cpu_seconds_median": round(tc, 3), "ours_trial_cpu_seconds_median": round(oc, 3),
            "cpu_ratio": round(oc / tc, 2), "loadavg_1min": [round(x, 2) for x in load], "nproc": os.cpu_count(),
            # each round's two runs are adjacent in time: their ratio is less at the mercy of a changing load
            "round_ratio_median": round(statistics.median(o_ / t_ for o_, t_ in zip(wall["ours"], wall["upstream"])), 2),
            **({"before": str(before), "before_trial_seconds": [round(x, 3) for x in wall["before"]],
                "before_trial_seconds_median": round(statistics.median(wall["before"]), 3),
                "before_ratio": round(statistics.median(wall["before"]) / t, 2),
                "before_trial_cpu_seconds_median": round(statistics.median(cpu["before"]), 3)} if before else {})}


def report(fig: dict) -> str:
    return (f"evoclawbench vs its own runner ({len(fig['tasks'])} tasks, do-nothing agent, {fig['workers']} workers, "
            f"{fig['rounds']} rounds): {fig['ours_trial_seconds_median'] * 1000:.0f} ms/trial here vs "
            f"{fig['upstream_trial_seconds_median'] * 1000:.0f} ms/trial there -> ratio {fig['ratio']:.2f} "
            f"(target <= {fig['target']:.0f})\n"
            f"  rounds (ms/trial): here {', '.join(f'{x * 1000:.0f}' for x in fig['ours_trial_seconds'])}; there "
            f"{', '.join(f'{x * 1000:.0f}' for x in fig['upstream_trial_seconds'])}\n"
            f"  median of the rounds' own ratios: {fig['round_ratio_median']:.2f}\n"
            f"  CPU (user+system, whole process tree): {fig['ours_trial_cpu_seconds_median'] * 1000:.0f} ms/trial here "
            f"vs {fig['upstream_trial_cpu_seconds_median'] * 1000:.0f} there -> {fig['cpu_ratio']:.2f}; "
            f"1-min load average {min(fig['loadavg_1min']):.1f}-{max(fig['loadavg_1min']):.1f} on {fig['nproc']} CPUs\n"
            f"  bytecode: {'compiled modules on both sides (private cache, one warm-up round each)' if fig['bytecode_cache'] else 'the environment as it is'}"
            + _floor_line(fig) + _before_line(fig))


def _before_line(fig: dict) -> str:
    if "before" not in fig:
        return ""
    return (f"\n  before ({fig['before']}), same rounds: {fig['before_trial_seconds_median'] * 1000:.0f} ms/trial "
            f"({', '.join(f'{x * 1000:.0f}' for x in fig['before_trial_seconds'])}) -> ratio {fig['before_ratio']:.2f}; "
            f"CPU {fig['before_trial_cpu_seconds_median'] * 1000:.0f} ms/trial")


def _floor_line(fig: dict) -> str:
    f = fig.get("floor_seconds") or {}
    if not f:
        return ""
    per_trial = 2 * f["bwrap_true"] + f["python_S"]
    w = fig["workers"]
    return (f"\n  floor per trial here: 2 sandboxes ({f['bwrap_true'] * 1000:.0f} ms each, running `true`) + one "
            f"`python -S` ({f['python_S'] * 1000:.0f} ms) = {per_trial * 1000:.0f} ms of latency; over {w} workers "
            f"{per_trial / w * 1000:.0f} ms/trial at best, vs the benchmark's "
            f"{fig['upstream_trial_seconds_median'] * 1000:.0f} ms/trial in all")
