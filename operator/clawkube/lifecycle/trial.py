"""One trial on the local machine: every phase in order, evidence collected, result.json written last.

The task's services (if any) start before the agent as local processes, are reset before every execution, and
their audit logs are collected into <trial>/audit/ after it. The run's EvoClawBench mode decides the phases
(skills/__init__.py): PreSkill's authoring transcript is in <trial>/authoring/, PostSkill's first run in
<trial>/first_run/ and its summary phase in <trial>/summary/. `result.usage` is end-to-end (every phase);
`score.details` holds `execution_usage` (the graded execution only), `phase_usage`, `skills` (hashes as the
execution started and the mutations it made) and, for PostSkill, the first run's score.
"""
from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

from ..agents.base import Agent
from ..agents.api import model_env
from ..agents.registry import get_agent
from ..benchmarks import registry
from ..benchmarks.base import AgentSetup, EnvironmentRequest, EnvironmentStartError, TrialEnvironment
from ..results.model import ErrorKind, Score, TrialResult, TrialState, Usage
from ..contracts import judge as judges
from ..runspec import AgentSpec, EvalMode, JudgeSpec
from ..services.client import ServiceError
from ..services.command import agent_env as service_env
from ..services.injection import InjectionConfig
from ..services.local import LocalServices
from ..skills.context import context_from_artifacts
from ..skills.hashing import SkillReport, hashes
from ..skills.hashing import report as skill_report
from ..skills.phase_args import phase_args
from ..skills.writing import write_skills
from . import bundle as bundles
from . import phases, workspace
from .scoring import GradingError

RESULT_FILE = "result.json"


@dataclass
class PreparedTask:
    """A task's two bundles, extracted once per run into private folders."""

    task_id: str
    category: str
    format: str
    agent_dir: Path
    grading_dir: Path
    timeout_seconds: int


@dataclass
class TrialPlan:
    task: PreparedTask
    trial_index: int
    agent: AgentSpec
    out_root: Path
    scratch_root: Path  # agent-side scratch (workspace, home, skills); outside every hidden path
    isolation: phases.Isolation
    timeout_override: Optional[int] = None
    grading_attempts: int = 2
    mode: Optional[str] = None
    env: dict[str, str] = field(default_factory=dict)
    grader_timeout: Optional[float] = None  # overrides the task's grader time limit
    error_injection_rate: float = 0.0
    seed: int = 0
    dir_name: Optional[str] = None  # result folder name under trials/<task>/ (default: the trial index)
    judge: Optional[JudgeSpec] = None  # the run's LLM judge: grading process only

    @property
    def result_dir(self) -> Path:
        return self.out_root / "trials" / self.task.task_id / (self.dir_name or str(self.trial_index))

    @property
    def trial_key(self) -> str:
        """What fault injection is keyed on (with the run seed): task and trial index, not mode or attempt."""
        return f"{self.task.task_id}/{self.trial_index}"


def prepare(task_spec, harness: str, private_root: Path) -> PreparedTask:
    """Build and extract the task's bundles under private_root (hidden from agents)."""
    base = private_root / "tasks" / task_spec.id
    agent_dir, grading_dir = base / "agent", base / "grading"
    for d, data in ((agent_dir, bundles.agent_bundle(task_spec, harness)), (grading_dir, bundles.grading_bundle(task_spec))):
        if d.exists():
            shutil.rmtree(d)
        bundles.extract(data, d)
    return PreparedTask(task_id=task_spec.id, category=task_spec.category, format=task_spec.format,
                        agent_dir=agent_dir, grading_dir=grading_dir, timeout_seconds=task_spec.timeout_seconds)


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def task_env(names: list[str], source: dict[str, str]) -> dict[str, str]:
    return {n: source[n] for n in names if n in source}


@dataclass
class _Trial:
    """What the phases of one trial share."""

    plan: TrialPlan
    manifest: bundles.AgentManifest
    agent: Agent
    env: dict[str, str]  # agent side (and the env-snapshot probes)
    grading_env: dict[str, str]  # the grading process: env + the judge's key
    services: TrialEnvironment  # the plugin's own (environment()) or the task's generic services
    scratch: Path
    clock: dict[str, float]

    @property
    def timeout(self) -> int:
        return self.plan.timeout_override or self.plan.task.timeout_seconds

    def timed(self, name: str, fn, *a, **kw):
        start = time.monotonic()
        try:
            return fn(*a, **kw)
        finally:
            self.clock[name] = round(self.clock.get(name, 0.0) + time.monotonic() - start, 4)


@dataclass
class _Execution:
    """One run of the agent on the task: fresh workspace, services reset, evidence in dirs.out."""

    dirs: phases.TrialDirs
    agent_phase: phases.AgentPhase
    skills: SkillReport
    initial: dict[str, str]


def _execute(tr: _Trial, dirs: phases.TrialDirs, skills_from: Optional[Path], label: str) -> _Execution:
    for d in (dirs.workspace, dirs.home, dirs.skills):
        shutil.rmtree(d, ignore_errors=True)
    try:
        tr.services.reset()
        urls = tr.services.urls
        env = {**tr.env, **service_env(urls)}
        initial = tr.timed("setup", phases.setup, dirs, tr.manifest, tr.plan.isolation, env, skills_from)
        setup = tr.services.agent_setup(dirs.home)
    except (phases.InfraError, ServiceError, EnvironmentStartError, OSError) as e:
        raise phases.InfraError(f"setup{'' if label == 'execution' else f' ({label})'}: {e}") from e
    before = hashes(dirs.skills)
    ctx = phases.agent_context(dirs, tr.manifest, tr.agent, tr.plan.agent.model, phase_args(tr.plan.agent.args, "execution"),
                               env, urls, setup)
    ap = tr.timed("agent", phases.run_agent, dirs, ctx, tr.agent, tr.plan.isolation, tr.timeout)
    try:
        tr.services.collect(dirs.out)
    except (ServiceError, EnvironmentStartError) as e:
        raise phases.InfraError(f"audit ({label}): {e}") from e
    tr.timed("capture", phases.capture, dirs, initial)
    return _Execution(dirs=dirs, agent_phase=ap, skills=skill_report("authored" if skills_from else "task", before,
                                                                      dirs.skills), initial=initial)


def _author(tr: _Trial, phase: str, out: Path, context: Optional[str] = None) -> tuple[Path, phases.AgentPhase]:
    """A skill-writing phase (skills/writing.py) in the trial's scratch; returns the skills dir and the outcome."""
    return tr.timed(phase, write_skills, phase, tr.scratch / phase, out, tr.manifest, tr.agent, tr.plan.agent.model,
                    tr.plan.agent.args, tr.env, tr.plan.isolation, tr.timeout, context)


def _grade(tr: _Trial, dirs: phases.TrialDirs) -> tuple[Optional[Score], Optional[str]]:
    t = tr.plan.task
    grading_ws, gm = tr.timed("firewall", phases.firewall, dirs, t.grading_dir, tr.env)
    judge = judges.JudgeConfig.of(tr.plan.judge)
    last_error = None
    for _ in range(max(1, tr.plan.grading_attempts)):
        try:
            return tr.timed("grade", phases.grade, dirs, t.grading_dir, grading_ws, gm, tr.grading_env,
                            tr.plan.grader_timeout, judge), None
        except GradingError as e:
            last_error = str(e)
    return None, last_error


def _run_mode(tr: _Trial, dirs: phases.TrialDirs, result: TrialResult) -> tuple[_Execution, dict]:
    """The executions and skill phases of the trial's mode; returns the graded execution and mode details."""
    mode = tr.plan.mode or EvalMode.BASELINE.value
    details: dict = {"mode": mode, "phase_usage": {}}
    usage = Usage()
    if mode == EvalMode.PRESKILL.value:
        skills, ap = _author(tr, "authoring", dirs.out / "authoring")
        details["phase_usage"]["authoring"] = ap.usage.model_dump()
        details["authoring_error"] = ap.error_message
        usage = usage.add(ap.usage)
        run = _execute(tr, dirs, skills, "execution")
    elif mode == EvalMode.POSTSKILL.value:
        first_dirs = phases.TrialDirs(bundle=dirs.bundle, workspace=dirs.workspace, home=dirs.home, skills=dirs.skills,
                                      out=dirs.out / "first_run", grading=dirs.grading / "first_run")
        first_dirs.grading.mkdir(parents=True, exist_ok=True)
        first = _execute(tr, first_dirs, None, "first run")
        usage = usage.add(first.agent_phase.usage)
        details["phase_usage"]["first_run"] = first.agent_phase.usage.model_dump()
        first_score, grade_error = _grade(tr, first_dirs)
        details["first_run"] = {"score": first_score.model_dump() if first_score else None, "grading_error": grade_error,
                                "agent_error": first.agent_phase.error_message, "skills": first.skills.model_dump()}
        context = context_from_artifacts(first_dirs.out, first_score, first.agent_phase.error_message, grade_error,
                                         tr.scratch / "summary-input")
        (dirs.out / "first_run" / "context.txt").write_text(context)
        skills, ap = _author(tr, "summary", dirs.out / "summary", context)
        details["phase_usage"]["summary"] = ap.usage.model_dump()
        details["summary_error"] = ap.error_message
        usage = usage.add(ap.usage)
        run = _execute(tr, dirs, skills, "second run")
    elif mode == EvalMode.BASELINE.value:
        run = _execute(tr, dirs, None, "execution")
    else:
        raise ValueError(f"unknown evaluation mode {mode!r}")
    details["phase_usage"]["execution"] = run.agent_phase.usage.model_dump()
    details["skills"] = run.skills.model_dump()
    details["skills_mutated"] = run.skills.mutated
    result.usage = usage.add(run.agent_phase.usage)
    return run, details


def run_trial(plan: TrialPlan, attempt: int = 1) -> TrialResult:
    """Run all phases; never raises for a trial-level failure (it is in the result)."""
    t = plan.task
    res_dir = plan.result_dir
    if res_dir.exists():
        shutil.rmtree(res_dir)  # an unfinished earlier try: redo it from scratch
    tag = f"{t.task_id}-{plan.dir_name or plan.trial_index}-a{attempt}"
    scratch = plan.scratch_root / tag
    grading_scratch = plan.out_root / ".grading" / tag
    for d in (scratch, grading_scratch):
        if d.exists():
            shutil.rmtree(d)
    grading_scratch.mkdir(parents=True, mode=0o700)
    dirs = phases.TrialDirs.under(scratch, res_dir, grading_scratch)
    result = TrialResult(task_id=t.task_id, category=t.category, task_format=t.format, trial_index=plan.trial_index,
                         attempt=attempt, state=TrialState.RUNNING, started_at=now_iso(), agent=plan.agent.harness,
                         model=plan.agent.model, mode=plan.mode, firewall=plan.isolation.mode)
    clock: dict[str, float] = {}
    services: Optional[TrialEnvironment] = None
    try:
        shutil.copytree(t.agent_dir, dirs.bundle)
        shutil.rmtree(dirs.bundle / bundles.SERVICES_DIR, ignore_errors=True)  # for the services only, not the agent
        manifest = bundles.read_agent_manifest(dirs.bundle)
        agent = get_agent(plan.agent.harness)
        source = plan.env or dict(os.environ)
        hidden_env = judges.agent_must_not_see(plan.judge, plan.agent)
        env = {**task_env([n for n in [*manifest.view.env, *agent.credential_env] if n not in hidden_env], source),
               **model_env(plan.agent.api, source)}
        grading_env = {**task_env(manifest.view.env, source), **judges.key_env(plan.judge, source)}
        services = registry.get(manifest.format).environment(manifest, EnvironmentRequest(
            private=grading_scratch / "environment", error_injection_rate=plan.error_injection_rate, seed=plan.seed,
            trial_key=plan.trial_key, judge_model=plan.judge.model if plan.judge else None,
            judge_base_url=plan.judge.base_url if plan.judge else None,
            judge_key_env=plan.judge.api_key_env if plan.judge else None)) or _TaskServices(LocalServices(
                manifest.services, t.agent_dir / bundles.SERVICE_FIXTURES, grading_scratch / "services",
                InjectionConfig(rate=plan.error_injection_rate, seed=plan.seed, trial_key=plan.trial_key)),
                bool(manifest.services))
        tr = _Trial(plan=plan, manifest=manifest, agent=agent, env=env, grading_env=grading_env, services=services,
                    scratch=scratch, clock=clock)
        try:
            try:
                if manifest.services or not isinstance(services, _TaskServices):
                    tr.timed("services", services.start)
            except (ServiceError, EnvironmentStartError, OSError) as e:
                return _finish(result, dirs, clock, ErrorKind.INFRA, f"services: {e}")
            try:
                run, details = _run_mode(tr, dirs, result)
            except phases.InfraError as e:
                return _finish(result, dirs, clock, ErrorKind.INFRA, str(e))
        finally:
            services.stop()
        ap = run.agent_phase
        result.error_kind, result.error_message = ap.error_kind, ap.error_message
        result.score, grade_error = _grade(tr, dirs)
        if result.score is None:
            return _finish(result, dirs, clock, ErrorKind.GRADING_ERROR, grade_error)
        details["execution_usage"] = ap.usage.model_dump()
        result.score.details.update(details)
        workspace.write_json(dirs.out / "score.json", result.score.model_dump())
        return _finish(result, dirs, clock, result.error_kind, result.error_message)
    except Exception as e:  # anything unexpected in our own machinery is infra, and still leaves a result
        return _finish(result, dirs, clock, ErrorKind.INFRA, f"{type(e).__name__}: {e}")
    finally:
        if services is not None:
            services.stop()
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(grading_scratch, ignore_errors=True)


class _TaskServices(TrialEnvironment):
    """The task's generic services (services/local.py) as a trial environment."""

    def __init__(self, services: LocalServices, any_declared: bool):
        self.services, self.any = services, any_declared

    def start(self) -> None:
        if self.any:
            self.services.start()

    def stop(self) -> None:
        self.services.stop()

    def reset(self) -> None:
        self.services.reset()

    @property
    def urls(self) -> dict[str, str]:
        return self.services.urls

    def agent_setup(self, home: Path) -> AgentSetup:
        return AgentSetup()

    def collect(self, out: Path) -> None:
        self.services.collect(out / "audit")


def _finish(result: TrialResult, dirs: phases.TrialDirs, clock: dict[str, float], kind: Optional[ErrorKind],
            message: Optional[str]) -> TrialResult:
    result.error_kind, result.error_message = kind, message
    result.state = TrialState.SUCCEEDED if result.score is not None else TrialState.FAILED
    result.phase_seconds = clock
    result.finished_at = now_iso()
    dirs.out.mkdir(parents=True, exist_ok=True)
    result.artifacts = {p.name: p.relative_to(dirs.out).as_posix()
                        for p in sorted(dirs.out.iterdir()) if p.name != RESULT_FILE}
    workspace.write_json(dirs.out / RESULT_FILE, result.model_dump(mode="json"))
    return result


def load_result(res_dir: Path) -> Optional[TrialResult]:
    f = res_dir / RESULT_FILE
    if not f.exists():
        return None
    try:
        return TrialResult.model_validate_json(f.read_text())
    except ValueError:
        return None  # a corrupt result is an unfinished trial
