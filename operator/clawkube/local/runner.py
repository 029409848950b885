"""The local run: the same tasks, lifecycle, graders and result files as the cluster, on this machine.

Resume: a trial whose `result.json` exists is kept; every other planned trial is (re)done. The output folder
remembers the spec's hash so results of a different spec are never mixed in.
Budgets: before a trial starts, the usage of every finished trial is added up; at the limit, no more start.
Modes: a run may hold several EvoClawBench modes (`spec.modes`, CLI `--mode all` or `--mode baseline,preskill`):
each mode runs every task's K trials, into `trials/<task>/<mode>-<i>/` (a single-mode run keeps `trials/<task>/<i>/`),
every result carries its mode, and the summary's `by_mode` holds each mode's ratios against baseline.
"""
from __future__ import annotations

import hashlib
import fcntl
import json
import os
import shutil
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, TextIO

from ..agents.registry import known_agents
from ..contracts import judge as judges
from ..lifecycle import sandbox, workspace
from . import trial
from ..lifecycle.phases import Isolation
from ..results.model import TrialResult
from ..reporting.report import render_progress
from ..reporting.summary import RunSummary, summarize
from ..runspec import BenchmarkRunSpec, EvalMode
from ..benchmarks.loader import load_tasks, select
from ..tasks.model import TaskSpec


class RunError(Exception):
    """The run cannot start (bad spec, no tasks, conflicting output folder)."""


def spec_hash(spec: BenchmarkRunSpec, modes: Optional[list[str]] = None) -> str:
    """The spec's hash; a multi-mode run's hash also covers its list of modes."""
    text = spec.model_dump_json(by_alias=True)
    if modes and len(modes) > 1:
        text += "\nmodes=" + ",".join(modes)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def parse_modes(value: str) -> list[str]:
    """`all` | a mode | a comma-separated list of modes -> ordered, de-duplicated mode names."""
    known = [m.value for m in EvalMode]
    names = known if value.strip() == "all" else [v.strip() for v in value.split(",") if v.strip()]
    bad = [n for n in names if n not in known]
    if bad or not names:
        raise ValueError(f"--mode {value!r}: expected all, or one or more of {', '.join(known)} (comma-separated)")
    return list(dict.fromkeys(names))


@dataclass
class RunOutcome:
    summary: RunSummary
    results: list[TrialResult]
    task_errors: list[dict]
    skipped_budget: int = 0
    firewall: str = "namespace"
    out: Path = field(default_factory=Path)


def isolation(spec: BenchmarkRunSpec, mode: str) -> Isolation:
    """The run's sandbox settings: backend, spec.resources as limits, the endpoints agents and graders may reach."""
    api = spec.agent.api.base_url if spec.agent.api and spec.agent.api.base_url else None
    judge = spec.judge.base_url if spec.judge and spec.judge.base_url else None
    return Isolation(mode=mode, memory=spec.resources.memory_bytes(), cpu=spec.resources.cpu_cores(),
                     agent_endpoints=[api] if api else [], judge_endpoints=[judge] if judge else [])


class OutLock:
    """An exclusive lock on OUT/.lock for the whole run: a second runner on the same folder stops at once with a
    clear error instead of mixing its results in. The kernel releases it when the runner dies."""

    def __init__(self, out: Path):
        self.path = out / ".lock"
        self.fd: Optional[int] = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.read(fd, 64).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise RunError(f"{self.path.parent} is in use by another clawkube run (pid {holder}); wait for it to "
                           "finish or use another --out") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class Bundles:
    """Each task's bundles, extracted once, by the first of its trials to start: in the workers, so the tasks are
    prepared side by side and while other trials run, not one after another before the first trial."""

    def __init__(self, harness: str, private: Path):
        self.harness, self.private = harness, private
        self._specs: dict[str, TaskSpec] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._done: set[str] = set()

    def plan(self, t: TaskSpec) -> trial.PreparedTask:
        self._specs[t.id], self._locks[t.id] = t, threading.Lock()
        return trial.planned(t, self.private)

    def ready(self, task: trial.PreparedTask) -> None:
        with self._locks[task.task_id]:
            if task.task_id not in self._done:
                trial.extract(self._specs[task.task_id], self.harness, task)
                self._done.add(task.task_id)


def _key(r: TrialResult) -> tuple[str, str, int]:
    return (r.mode or EvalMode.BASELINE.value, r.task_id, r.trial_index)


class LocalRunner:
    def __init__(self, spec: BenchmarkRunSpec, out: Path, *, sandbox_mode: str = "auto",
                 progress: Optional[TextIO] = sys.stderr, fresh: bool = False,
                 on_result: Optional[Callable[[TrialResult], None]] = None,
                 grader_timeout: Optional[float] = None, modes: Optional[list[str]] = None):
        if not spec.tasks.path:
            raise RunError("the local runner reads tasks from a folder: set spec.tasks.path (--tasks)")
        # Paths are made absolute once, at the CLI edge (cli.local_path): trials work in other directories
        relative = [str(p) for p in (Path(spec.tasks.path), Path(out)) if not p.is_absolute()]
        if relative:
            raise RunError(f"the local runner takes absolute paths (the CLI resolves them): {', '.join(relative)}")
        known = known_agents()
        if spec.agent.harness not in known:
            raise RunError(f"spec.agent.harness: unknown harness {spec.agent.harness!r} (known: {', '.join(known)})")
        self.spec, self.out, self.progress, self.on_result = spec, out, progress, on_result
        try:
            self.mode = sandbox.resolve_mode(sandbox_mode)
        except RuntimeError as e:  # an unknown or unavailable backend
            raise RunError(str(e)) from None
        self.fresh = fresh
        self.grader_timeout = grader_timeout
        self.modes = list(modes) if modes else spec.mode_list()
        self._lock = threading.Lock()
        self._results: dict[tuple[str, str, int], TrialResult] = {}  # (mode, task, trial index)
        self._skipped_budget = 0
        self._done = self._failed = self._total = 0
        self._out_lock = OutLock(out)
        self._bundles: Optional[Bundles] = None

    # ---- gather
    def _load(self) -> tuple[list[TaskSpec], list[dict]]:
        root = Path(self.spec.tasks.path)
        if not root.exists():
            raise RunError(f"tasks folder {root} does not exist")
        report = load_tasks(root, ids=self.spec.selector.ids)  # tasks the selector does not name: not loaded
        errors = [e.model_dump(mode="json") if hasattr(e, "model_dump") else dict(e) for e in report.errors]
        tasks = select(report.tasks, self.spec.selector)
        if not tasks:
            raise RunError(f"no task selected from {root} ({len(report.tasks)} loaded, {len(errors)} malformed)")
        return tasks, errors

    def _claim_out(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        self._out_lock.acquire()
        try:
            run_file = self.out / "run.json"
            h = spec_hash(self.spec, self.modes)
            if run_file.exists() and not self.fresh:
                old = json.loads(run_file.read_text())
                if old.get("spec_hash") != h:
                    raise RunError(f"{self.out} holds results of a different run spec (hash {old.get('spec_hash')} "
                                   f"!= {h}); use another --out, or --fresh to discard them")
            elif self.fresh:
                workspace.rmtree(self.out / "trials")
        except BaseException:
            self._out_lock.release()
            raise

    # ---- decide
    def _budget_left(self) -> bool:
        b = self.spec.budgets
        with self._lock:
            cost = sum(r.usage.cost_usd for r in self._results.values())
            tokens = sum(r.usage.total_tokens or (r.usage.input_tokens + r.usage.output_tokens)
                         for r in self._results.values())
        if b.max_cost_usd is not None and cost >= b.max_cost_usd:
            return False
        if b.max_tokens is not None and tokens >= b.max_tokens:
            return False
        return True

    # ---- act
    def _run_one(self, plan: trial.TrialPlan) -> None:
        if not self._budget_left():
            with self._lock:
                self._skipped_budget += 1
            return
        self._bundles.ready(plan.task)
        r = trial.run_trial_with_retries(plan)
        with self._lock:
            self._results[_key(r)] = r
            self._done += 1
            self._failed += r.score is None
            self._draw()
        if self.on_result:
            self.on_result(r)

    def _draw(self) -> None:
        if self.progress is not None:
            self.progress.write("\r" + render_progress(self._done, self._total, self._failed, 30))
            self.progress.flush()

    def run(self) -> RunOutcome:
        problem = judges.missing_key(self.spec.judge, os.environ)
        if problem:
            raise RunError(problem)
        tasks, task_errors = self._load()
        self._claim_out()
        try:
            return self._run(tasks, task_errors)
        finally:
            self._out_lock.release()

    def _run(self, tasks: list[TaskSpec], task_errors: list[dict]) -> RunOutcome:
        private = self.out / ".private"
        for d in (private, self.out / ".grading"):
            workspace.rmtree(d)
            d.mkdir(parents=True, mode=0o700)
        iso = isolation(self.spec, self.mode)
        scratch = Path(tempfile.mkdtemp(prefix="clawkube-work-"))
        scratch.chmod(0o755)
        plans: list[trial.TrialPlan] = []
        several = len(self.modes) > 1
        self._bundles = Bundles(self.spec.agent.harness, private)
        for t in tasks:
            prepared = self._bundles.plan(t)
            for mode in self.modes:
                for i in range(self.spec.trials):
                    plan = trial.TrialPlan(task=prepared, trial_index=i, agent=self.spec.agent, out_root=self.out,
                                           scratch_root=scratch, isolation=iso,
                                           timeout_override=self.spec.timeout_seconds,
                                           retry=self.spec.retry, mode=mode,
                                           grader_timeout=self.grader_timeout,
                                           error_injection_rate=self.spec.error_injection_rate, seed=self.spec.seed,
                                           dir_name=f"{mode}-{i}" if several else None, judge=self.spec.judge)
                    done = trial.load_result(plan.result_dir)
                    if done is not None:
                        self._results[_key(done)] = done
                    else:
                        plans.append(plan)
        self._total = len(tasks) * self.spec.trials * len(self.modes)
        self._done = len(self._results)
        self._failed = sum(r.score is None for r in self._results.values())
        self._write_run_file(tasks, task_errors)
        self._draw()
        try:
            with ThreadPoolExecutor(max_workers=self.spec.parallelism) as pool:
                list(pool.map(self._run_one, plans))
        finally:
            for d in (scratch, private, self.out / ".grading"):
                workspace.rmtree(d)
            if self.progress is not None:
                self.progress.write("\n")
        results = sorted(self._results.values(), key=_key)
        summary = summarize(results, self.spec.trials, planned_tasks=[t.id for t in tasks], planned_modes=self.modes)
        (self.out / "summary.json").write_text(summary.model_dump_json(indent=1))
        return RunOutcome(summary=summary, results=results, task_errors=task_errors,
                          skipped_budget=self._skipped_budget, firewall=self.mode, out=self.out)

    def _write_run_file(self, tasks: list[TaskSpec], task_errors: list[dict]) -> None:
        data = {"spec_hash": spec_hash(self.spec, self.modes), "modes": self.modes,
                "spec": self.spec.model_dump(mode="json", by_alias=True),
                "tasks": [t.id for t in tasks], "task_errors": task_errors, "firewall": self.mode,
                "pid": os.getpid()}
        tmp = self.out / "run.json.tmp"
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(self.out / "run.json")
