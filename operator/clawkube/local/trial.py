"""One trial on the local machine: the stages of its mode (the trial plan, plan.py) in order, evidence
collected, result.json written last; `run_trial_with_retries` repeats attempts as the retry policy says.

The task's services (if any) start before the agent as local processes, are reset before every execution, and
their audit logs are collected into <trial>/audit/ after it. A preparatory stage keeps its evidence in
<trial>/<stage>/ (PreSkill `authoring`, PostSkill `first_run` and `summary`). `result.usage` is end-to-end
(every stage); `score.details` holds the mode details (contracts/details.py).
"""
from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

from ..agents.base import Agent
from ..agents.api import model_env
from ..agents.registry import get_agent
from ..benchmarks import registry
from ..benchmarks.base import AgentSetup, EnvironmentRequest, EnvironmentStartError, TrialEnvironment
from .. import plan as trial_plan
from ..contracts import judge as judges
from ..contracts.details import StageRecord, mode_details, with_mode_details
from ..contracts.skills import SkillReport
from ..plan import Next, Role, Stage
from ..results.model import ErrorKind, Score, TrialResult, TrialState, Usage
from ..runspec import AgentSpec, EvalMode, JudgeSpec, RetryPolicy
from ..services.client import ServiceError
from ..services.command import agent_env as service_env
from ..services.injection import InjectionConfig
from ..services.local import LocalServices
from ..benchmarks.evoclaw.protocol import phase_of
from ..skills import scan
from ..skills.context import context_from_artifacts, facts_of
from ..skills.hashing import hashes
from ..skills.hashing import report as skill_report
from ..skills.phase_args import phase_args
from ..skills.writing import phase_manifest, write_skills
from ..lifecycle import bundle as bundles
from ..lifecycle import sandbox
from ..lifecycle import phases, workspace
from ..lifecycle.scoring import GradingError
from ..lifecycle.task_env import task_env

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
    retry: RetryPolicy = field(default_factory=RetryPolicy)
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


def planned(task_spec, private_root: Path) -> PreparedTask:
    """Where the task's bundles go under private_root (hidden from agents); nothing is written (`extract`)."""
    base = private_root / "tasks" / task_spec.id
    return PreparedTask(task_id=task_spec.id, category=task_spec.category, format=task_spec.format,
                        agent_dir=base / "agent", grading_dir=base / "grading", timeout_seconds=task_spec.timeout_seconds)


def extract(task_spec, harness: str, task: PreparedTask) -> None:
    """Build the task's two bundles and extract them into task.agent_dir and task.grading_dir."""
    stored = 0  # extracted at once: not worth compressing
    for d, data in ((task.agent_dir, bundles.agent_bundle(task_spec, harness, stored)),
                    (task.grading_dir, bundles.grading_bundle(task_spec, stored))):
        if d.exists():
            shutil.rmtree(d)
        bundles.extract(data, d)


def prepare(task_spec, harness: str, private_root: Path) -> PreparedTask:
    """Build and extract the task's bundles under private_root (hidden from agents)."""
    task = planned(task_spec, private_root)
    extract(task_spec, harness, task)
    return task


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


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
    bundle: Path  # the extracted agent bundle
    retries: dict[str, int] = field(default_factory=dict)  # the result's: failures that were retried, by kind
    open_boxes: list = field(default_factory=list)  # agent sandboxes kept open for grading; run_trial closes them

    @property
    def timeout(self) -> int:
        return self.plan.timeout_override or self.plan.task.timeout_seconds

    @property
    def mode(self) -> EvalMode:
        return EvalMode(self.plan.mode or EvalMode.BASELINE.value)

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
    box: Optional[sandbox.AgentBox] = None  # still open: its warmup's servers live on into grading (closed later)


def _execute(tr: _Trial, dirs: phases.TrialDirs, skills_from: Optional[Path], label: str, stage: str,
             graded: bool = False) -> _Execution:
    """The graded execution of a task with a warmup keeps its sandbox open: servers the warmup started in the
    background are still there when the grader queries them (as in the benchmark's container)."""
    for d in (dirs.workspace, dirs.home, dirs.skills, dirs.scratch / "tmp", dirs.scratch / "system-overlay"):
        workspace.rmtree(d)
    m = phase_manifest(tr.manifest, phase_of(tr.mode.value, stage))  # the prompt as the mode puts it
    try:
        tr.services.reset()
        urls = tr.services.urls
        env = {**tr.env, **service_env(urls)}
        initial, box = tr.timed("setup", phases.setup, dirs, m, tr.plan.isolation, env, skills_from, urls, tr.agent)
    except (phases.InfraError, ServiceError, EnvironmentStartError, OSError) as e:
        raise phases.InfraError(f"setup{'' if label == 'execution' else f' ({label})'}: {e}") from e
    keep = graded and bool(m.warmup) and box.isolating
    if keep:
        tr.open_boxes.append(box)
    try:
        try:
            setup = tr.services.agent_setup(dirs.home)
        except (EnvironmentStartError, OSError) as e:
            raise phases.InfraError(f"setup{'' if label == 'execution' else f' ({label})'}: {e}") from e
        before = hashes(dirs.skills)
        ctx = phases.agent_context(dirs, m, tr.agent, tr.plan.agent.model,
                                   phase_args(tr.plan.agent.args, "execution"), env, urls, box, setup)
        ap = tr.timed("agent", phases.run_agent, dirs, ctx, tr.agent, box, tr.timeout)
    finally:
        if not keep:
            box.close()
    try:
        tr.services.collect(dirs.out)
    except (ServiceError, EnvironmentStartError) as e:
        raise phases.InfraError(f"audit ({label}): {e}") from e
    tr.timed("capture", phases.capture, dirs, initial)
    return _Execution(dirs=dirs, agent_phase=ap, skills=skill_report("authored" if skills_from else "task", before,
                                                                      dirs.skills), initial=initial,
                      box=box if keep else None)


def _author(tr: _Trial, stage: str, out: Path, context: Optional[dict] = None
            ) -> tuple[Path, phases.AgentPhase, list[scan.CreatedSkill]]:
    """A skill-writing stage (skills/writing.py) in the trial's scratch: the authored skills folder, the outcome
    and the skills it created."""
    return tr.timed(stage, write_skills, phase_of(tr.mode.value, stage), tr.scratch / stage, out, tr.bundle,
                    tr.manifest, tr.agent, tr.plan.agent.model, tr.plan.agent.args, tr.env, tr.plan.isolation,
                    tr.timeout, context)


def _grade(tr: _Trial, dirs: phases.TrialDirs, box: Optional[sandbox.AgentBox] = None
           ) -> tuple[Optional[Score], Optional[str]]:
    t = tr.plan.task
    grading_ws, gm = tr.timed("firewall", phases.firewall, dirs, t.grading_dir, tr.env, tr.plan.isolation)
    judge = judges.JudgeConfig.of(tr.plan.judge)
    failed = 0
    reach = box.services() if box is not None else []
    while True:
        try:
            return tr.timed("grade", phases.grade, dirs, t.grading_dir, grading_ws, gm, tr.grading_env,
                            tr.plan.grader_timeout, judge, tr.plan.isolation, reach), None
        except GradingError as e:
            failed += 1
            if trial_plan.after_failure(tr.plan.retry, ErrorKind.GRADING_ERROR, failed) is not Next.RETRY:
                return None, str(e)
            kind = ErrorKind.GRADING_ERROR.value
            tr.retries[kind] = tr.retries.get(kind, 0) + 1


class _Retry(Exception):
    """The graded execution failed (agent error/timeout) and the retry policy starts a new attempt."""

    def __init__(self, kind: ErrorKind, message: Optional[str]):
        self.kind, self.message = kind, message
        super().__init__(message)


@dataclass
class _Attempt:
    """The stages of one attempt run so far (trial plan, plan.py)."""

    records: dict[str, StageRecord] = field(default_factory=dict)
    executions: dict[str, _Execution] = field(default_factory=dict)
    skills: dict[str, Path] = field(default_factory=dict)  # author stage -> the skills it wrote
    usage: Usage = field(default_factory=Usage)


def _stage_dirs(dirs: phases.TrialDirs, st: Stage) -> phases.TrialDirs:
    """The graded execution works in the trial's own folders; a preparatory one keeps its evidence apart."""
    if st.graded:
        return dirs
    sub = phases.TrialDirs(bundle=dirs.bundle, workspace=dirs.workspace, home=dirs.home, skills=dirs.skills,
                           out=dirs.out / st.name, grading=dirs.grading / st.name)
    sub.grading.mkdir(parents=True, exist_ok=True)
    return sub


def _context(tr: _Trial, a: _Attempt, st: Stage) -> Optional[dict]:
    """An author stage's account of an earlier execution (the benchmark's first_run_context.json): its agent-side
    artifacts and score, never grader output. Kept as <execution>/first_run_context.json."""
    if st.context_from is None:
        return None
    run = a.executions[st.context_from]
    g = trial_plan.grade_of(tr.mode, st.context_from)
    graded = a.records.get(g.name) if g else None
    score = graded.score.model_dump() if graded and graded.score else None
    context = context_from_artifacts(run.dirs.out, facts_of(tr.manifest), score, tr.scratch / f"{st.name}-input")
    workspace.write_json(run.dirs.out / "first_run_context.json", context)
    return context


def _run_stage(tr: _Trial, dirs: phases.TrialDirs, a: _Attempt, st: Stage, failures: dict[ErrorKind, int]) -> None:
    if st.role is Role.AUTHOR:
        skills, ap, created = _author(tr, st.name, dirs.out / st.name, _context(tr, a, st))
        a.skills[st.name] = skills
        a.usage = a.usage.add(ap.usage)
        a.records[st.name] = StageRecord(name=st.name, usage=ap.usage, error_kind=ap.error_kind,
                                         error_message=ap.error_message,
                                         created_skills=[c.model_dump() for c in created],
                                         skill_quality=scan.skill_quality(created))
    elif st.role is Role.EXECUTE:
        label = st.name if st.graded else st.name.replace("_", " ")
        run = _execute(tr, _stage_dirs(dirs, st), a.skills.get(st.skills_from) if st.skills_from else None, label,
                       st.name, graded=st.graded)
        ap = run.agent_phase
        a.executions[st.name] = run
        a.usage = a.usage.add(ap.usage)
        a.records[st.name] = StageRecord(name=st.name, usage=ap.usage, error_kind=ap.error_kind,
                                         error_message=ap.error_message, skills=run.skills)
        if st.graded and ap.error_kind is not None:
            n = failures.get(ap.error_kind, 0) + 1
            if trial_plan.after_failure(tr.plan.retry, ap.error_kind, n, evidence=True) is Next.RETRY:
                raise _Retry(ap.error_kind, ap.error_message)
    elif not st.graded:  # a preparatory grade (the graded one runs after the task's services have stopped)
        score, error = _grade(tr, a.executions[st.grades].dirs)
        a.records[st.name] = StageRecord(name=st.name, score=score, error_message=error,
                                         error_kind=ErrorKind.GRADING_ERROR if error else None)


def run_trial_with_retries(plan: TrialPlan) -> TrialResult:
    """Attempts of one trial until one is final under the retry policy (plan.after_failure)."""
    failures: dict[ErrorKind, int] = {}
    attempt = 0
    while True:
        attempt += 1
        r = run_trial(plan, attempt, failures)
        kind = r.error_kind
        if r.state is TrialState.SUCCEEDED or kind is None or kind is ErrorKind.GRADING_ERROR:
            return r  # graded (perhaps with the agent's error recorded), or regrades exhausted inside the attempt
        failures[kind] = failures.get(kind, 0) + 1
        if trial_plan.after_failure(plan.retry, kind, failures[kind]) is not Next.RETRY:
            return r


def run_trial(plan: TrialPlan, attempt: int = 1, failures: Optional[dict[ErrorKind, int]] = None) -> TrialResult:
    """Run the stages of the trial's mode (plan.py) once; never raises for a trial-level failure (it is in the
    result). `failures`: earlier attempts' failures by kind, for the retry decision after an agent failure."""
    t = plan.task
    res_dir = plan.result_dir
    workspace.rmtree(res_dir)  # an unfinished earlier try: redo it from scratch
    tag = f"{t.task_id}-{plan.dir_name or plan.trial_index}-a{attempt}"
    scratch = plan.scratch_root / tag
    grading_scratch = plan.out_root / ".grading" / tag
    for d in (scratch, grading_scratch):
        workspace.rmtree(d)
    grading_scratch.mkdir(parents=True, mode=0o700)
    dirs = phases.TrialDirs.under(scratch, res_dir, grading_scratch)
    result = TrialResult(task_id=t.task_id, category=t.category, task_format=t.format, trial_index=plan.trial_index,
                         attempt=attempt, state=TrialState.RUNNING, started_at=now_iso(), agent=plan.agent.harness,
                         model=plan.agent.model, mode=plan.mode, firewall=plan.isolation.mode,
                         retries={k.value: n for k, n in (failures or {}).items() if n})
    clock: dict[str, float] = {}
    services: Optional[TrialEnvironment] = None
    open_boxes: list[sandbox.AgentBox] = []
    try:
        manifest = bundles.read_agent_manifest(t.agent_dir)
        if manifest.mounts.initial_workspace:  # its workspace is mounted into the agent's sandbox, and a mount's
            # source path shows inside (bubblewrap's command line): from a per-trial copy, never from the hidden folder
            shutil.copytree(t.agent_dir, dirs.bundle)
            shutil.rmtree(dirs.bundle / bundles.SERVICES_DIR, ignore_errors=True)  # for the services only
        else:  # the task's extracted bundle, shared by its trials, only read (the agent gets copies of its files)
            dirs = replace(dirs, bundle=t.agent_dir)
        if manifest.setup_error:  # the task cannot run here (e.g. its workspace is not downloaded)
            return _finish(result, dirs, clock, ErrorKind.SETUP_ERROR, manifest.setup_error)
        dirs = dirs.for_manifest(manifest)  # EvoClawBench keeps the skills inside the workspace
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
                    scratch=scratch, clock=clock, bundle=dirs.bundle, retries=result.retries, open_boxes=open_boxes)
        try:
            try:
                if manifest.services or not isinstance(services, _TaskServices):
                    tr.timed("services", services.start)
            except (ServiceError, EnvironmentStartError, OSError) as e:
                return _finish(result, dirs, clock, ErrorKind.INFRA, f"services: {e}")
            a = _Attempt()
            try:
                for st in trial_plan.stages(tr.mode):
                    if not (st.graded and st.role is Role.GRADE):
                        _run_stage(tr, dirs, a, st, failures or {})
            except phases.InfraError as e:
                return _finish(result, dirs, clock, ErrorKind.INFRA, str(e))
            except phases.SetupError as e:  # the task's own warmup: its fault, not ours; not retried
                return _finish(result, dirs, clock, ErrorKind.SETUP_ERROR, str(e))
            except _Retry as e:
                result.usage = a.usage
                return _finish(result, dirs, clock, e.kind, e.message)
        finally:
            services.stop()
        result.usage = a.usage
        execution_name = trial_plan.graded_execution(tr.mode).name
        execution = a.records[execution_name]
        result.score, grade_error = _grade(tr, dirs, a.executions[execution_name].box)
        if result.score is None:
            return _finish(result, dirs, clock, ErrorKind.GRADING_ERROR, grade_error)
        result.score.details = with_mode_details(result.score.details, mode_details(tr.mode, a.records))
        workspace.write_json(dirs.out / "score.json", result.score.model_dump())
        return _finish(result, dirs, clock, execution.error_kind, execution.error_message)
    except Exception as e:  # anything unexpected in our own machinery is infra, and still leaves a result
        return _finish(result, dirs, clock, ErrorKind.INFRA, f"{type(e).__name__}: {e}")
    finally:
        for box in open_boxes:
            box.close()
        if services is not None:
            services.stop()
        workspace.rmtree(scratch)
        workspace.rmtree(grading_scratch)


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
