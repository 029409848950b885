"""The benchmark plugin interface: everything that differs between benchmarks lives behind `Benchmark`.

One plugin per benchmark (a module or package under `clawkube/benchmarks/`, registered in `registry.py`) owns:
- recognising its tasks on disk (`detect`, `is_template`) and loading them into the common `TaskSpec` (`load`);
- where the agent and the grader see the task workspace (`workspace_mount`), their HOME, skills and the
  untouched workspace (`trial_mounts`), and which task files go into the
  agent's workspace and which are grading-only (`workspace_layout`);
- the grader invocation inside the grading process (`run_grader`, with `grader_kwargs` building its inputs),
  and the modules its graders import (`grader_requirements`, checked by `clawkube validate`);
- which tasks need the run's LLM judge (`needs_judge`) and how its graders receive it (`judge_env`, the `judge`
  grader argument);
- what runs beside the agent for a trial, when the benchmark brings its own (`environment`: e.g. CLAW-Eval's mock
  services, tool server and simulated user), in place of the engine's generic task services;
- how the grader's raw output and the engine's own evidence become a `Score` (`score`);
- its run-level summary section (`summarize`, a `summary_model`) and how the report shows it (`report_lines`).

The core never names a benchmark: it asks the registry for the plugin whose `name` a task, a bundle manifest,
a grading request or a trial result carries.
"""
from __future__ import annotations

import importlib.util
import inspect
import math
import os
import sys
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Callable, ClassVar, Optional

from pydantic import BaseModel

from ..contracts.grading import GradeRequest
from ..mcp.spec import McpServer
from ..contracts.judge import Judge
from ..contracts.manifests import GradingManifest, TrialMounts
from ..results.model import Score, TrialResult
from ..services.evidence import Evidence
from ..tasks.grader_code import required_args
from ..tasks.model import FileMapping, TaskSpec


class EnvironmentStartError(Exception):
    """A trial environment did not start or its evidence could not be collected (an infra error)."""


class AgentSetup(BaseModel):
    """What a trial environment tells the agent side beyond its service URLs: MCP servers, the prompt."""

    mcp_servers: list[McpServer] = []
    prompt: Optional[str] = None  # replaces the task prompt (None: the task's own)


class TrialEnvironment(ABC):
    """Processes a benchmark runs beside the agent for one trial, outside the agent's sandbox (the local
    runner's counterpart of the agent pod's sidecars). `start` before the agent, `agent_setup` for it,
    `collect` after it (evidence into the trial's out folder), `stop` always; `reset` between executions of one
    trial (EvoClawBench-style modes) gives a fresh state. Failures raise EnvironmentStartError."""

    @abstractmethod
    def start(self) -> None: ...

    @abstractmethod
    def stop(self) -> None: ...

    def reset(self) -> None:
        self.stop()
        self.start()

    @property
    @abstractmethod
    def urls(self) -> dict[str, str]:
        """Service name -> base URL as the agent reaches it (for the `*_API_URL` variables)."""

    @abstractmethod
    def agent_setup(self, home: Path) -> AgentSetup:
        """Called once per execution, after start; may write files the agent needs into its `home`."""

    @abstractmethod
    def collect(self, out: Path) -> None:
        """After the agent: the evidence (audit logs into out/audit/, ...) as artifacts of the trial."""


class EnvironmentRequest(BaseModel):
    """What a plugin gets to build a trial environment (all from the run and the trial plan)."""

    private: Path  # a folder for the environment's own files: grading side, hidden from agents
    error_injection_rate: float = 0.0
    seed: int = 0
    trial_key: str = ""
    judge_model: Optional[str] = None  # the run's judge (spec.judge), e.g. to play a simulated user
    judge_base_url: Optional[str] = None
    judge_key_env: Optional[str] = None  # the variable holding its key in the trial process's environment


class GradingError(Exception):
    """The grader's output cannot be a score (recorded as ErrorKind.GRADING_ERROR)."""


class WorkspaceLayout(BaseModel):
    """Where a task's files go: the agent's workspace, and grading-only files added after the agent finished
    (both relative to the workspace root), and the path at which agent and grader see that root."""

    mount: Optional[str] = None  # absolute path inside the sandbox; None = wherever the engine puts it
    agent_files: list[FileMapping] = []
    grading_files: list[FileMapping] = []
    dirs: list[str] = []  # empty folders made in the workspace before the agent starts (e.g. outputs/)
    skills_path: Optional[str] = None  # where the agent's skills live inside the workspace; None = outside it


def check_range(raw: dict[str, float]) -> None:
    for k, v in raw.items():
        if not 0.0 <= v <= 1.0:
            raise GradingError(f"criterion {k!r} = {v} is outside 0..1")


def check_scores(out: Any) -> dict[str, float]:
    """A grader's return value as a dict of criterion -> float, or TypeError."""
    if not isinstance(out, dict):
        raise TypeError(f"grade() returned {type(out).__name__}, expected a dict of criterion -> score")
    scores: dict[str, float] = {}
    for k, v in out.items():
        if isinstance(v, bool):
            v = float(v)
        if not isinstance(v, (int, float)) or math.isnan(v):
            raise TypeError(f"criterion {k!r} = {v!r} is not a number")
        scores[str(k)] = float(v)
    return scores


def load_grader_module(path: str, name: str = "clawkube_task_grader"):
    """Import a grader file as a module (its folder first on sys.path, for its sibling imports)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(Path(path).parent))
    spec.loader.exec_module(module)
    return module


def call_with_declared(fn: Callable, available: dict[str, Callable[[], Any]]) -> Any:
    """Call `fn` with the keyword arguments it declares among `available` (all of them if it takes **kwargs);
    each value is built only when asked for."""
    params = inspect.signature(fn).parameters
    takes_all = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    return fn(**{k: make() for k, make in available.items() if takes_all or k in params})


class Benchmark(ABC):
    """One benchmark format. Subclasses set the class attributes and implement `detect`, `load` and `score`."""

    name: ClassVar[str]  # the format id: TaskSpec.format, manifests' `format`, TrialResult.task_format
    title: ClassVar[str]  # how reports name it
    detect_priority: ClassVar[int] = 50  # lower is asked first; a catch-all format asks last
    workspace_mount: ClassVar[Optional[str]] = None  # where agent and grader see the workspace; None = anywhere
    trial_mounts: ClassVar[TrialMounts] = TrialMounts()  # more fixed paths of the benchmark's container (HOME, ...)
    grader_requirements: ClassVar[tuple[str, ...]] = ()  # modules the graders import (validate checks them)
    grader_packages: ClassVar[dict[str, str]] = {}  # module -> the pip package that provides it, where they differ
    summary_model: ClassVar[Optional[type[BaseModel]]] = None  # the run-level section `summarize` returns
    engine_evidence: ClassVar[bool] = True  # the engine's checks over audit/ (its own services' log format)
    # a module whose `main(request_dict)` the grading process runs instead of importing the plugin (a fast start,
    # standard library only); it must do what `run_grader` does
    light_grader: ClassVar[Optional[str]] = None
    criteria_in_unit_range: ClassVar[bool] = True  # every numeric grader field must be in 0..1 (else a grading error)
    probes_see_grading_files: ClassVar[bool] = False  # env snapshot probes run after the grading-only files are placed

    # --- tasks on disk -------------------------------------------------------------------------------------------
    @abstractmethod
    def detect(self, path: Path) -> bool:
        """Is this file or folder a task of this benchmark? May raise TaskLoadError for a file that is one of
        its kind but malformed beyond recognition. A folder it claims is one task: the walk does not enter it."""

    def is_template(self, path: Path) -> bool:
        """A detected path that is a template or example of the format, not a task: skipped, not an error."""
        return False

    def task_id(self, path: Path) -> Optional[str]:
        """The id of the task at `path` when it can be told cheaply without loading it (a run's selector passes
        over the tasks it does not name); None: unknown, load it."""
        return None

    @abstractmethod
    def load(self, path: Path) -> TaskSpec:
        """The task at `path` (detected as this benchmark's); TaskLoadError naming the field when malformed."""

    # --- workspace ---------------------------------------------------------------------------------------------
    def workspace_layout(self, task: TaskSpec) -> WorkspaceLayout:
        return WorkspaceLayout(mount=self.workspace_mount, agent_files=list(task.workspace),
                               grading_files=list(task.grading_files))

    def authoring_skills(self, task: TaskSpec) -> list[Path]:
        """Skill folders seeded into the skill-writing phases of PreSkill/PostSkill only (never executions)."""
        return []

    def agent_data(self, task: TaskSpec) -> dict[str, Any]:
        """The plugin's own agent-side data (AgentManifest.benchmark_data)."""
        return {}

    def grading_data(self, task: TaskSpec) -> dict[str, Any]:
        """The plugin's own grading-side data (GradingManifest.benchmark_data); never reaches the agent."""
        return {}

    def phase_prompt(self, phase: str, prompt: str) -> str:
        """The prompt the agent gets in a phase of an evaluation mode (the modes are EvoClawBench's: its
        protocol.py names the phases): the skill-writing and skill-reuse phases put the mode's prefix before it; a
        plain execution gets the task's prompt as it is."""
        from .evoclaw import protocol

        return prompt if phase in protocol.BASELINE_PHASES else protocol.phase_prompt(phase, prompt)

    # --- judge -------------------------------------------------------------------------------------------------
    def needs_judge(self, task: TaskSpec) -> bool:
        """Whether grading this task needs the run's LLM judge; without one the trial is a grading error
        ("no judge configured"), never a silent 0. Default: its grader requires a `judge` argument."""
        g = task.grader
        code = g.inline_code if g.inline_code is not None else Path(g.source_file).read_text()
        return "judge" in required_args(code, g.entry)

    def judge_env(self, judge: Judge) -> dict[str, str]:
        """Environment variables the graders read the judge from (set in the grading process before the grader
        is imported); e.g. a benchmark whose graders read OPENAI_API_KEY / OPENAI_BASE_URL maps them here."""
        return {}

    # --- trial environment ---------------------------------------------------------------------------------------
    def environment(self, manifest: Any, req: EnvironmentRequest) -> Optional[TrialEnvironment]:
        """This benchmark's own trial environment for a task (its agent manifest), or None: the engine starts
        the task's `services` generically."""
        return None

    def cluster_task(self, task: TaskSpec, run_spec: Any) -> TaskSpec:
        """A loaded task as the operator stages it for the run's pods (`run_spec`: the BenchmarkRunSpec), or
        ValueError with the reason it cannot run on a cluster (the run's status says it)."""
        return task

    def pod_environment(self, manifest: Any) -> Optional[TrialEnvironment]:
        """On a cluster, in the agent pod's supervisor (`clawkube pod agent`): the client of this benchmark's own
        environment sidecar(s) for a task, or None: the task's `services` run as generic sidecars."""
        return None

    # --- grading process -----------------------------------------------------------------------------------------
    def grader_kwargs(self, req: GradeRequest, judge: Optional[Judge]) -> dict[str, Callable[[], Any]]:
        """The arguments a task's grader may declare, each built on demand inside the grading process."""
        from .grader_inputs import default_kwargs

        return default_kwargs(req, judge)

    def grading_inputs(self, m: GradingManifest, out: Path) -> list[Path]:
        """Host files or folders, beyond the grading bundle, workspace, transcript and audit folder, that the
        grading sandbox must show read-only (e.g. a benchmark checkout and its Python; `out` = the trial's
        artifacts folder)."""
        return []

    def run_grader(self, req: GradeRequest, judge: Optional[Judge]) -> dict[str, float]:
        """Inside the grading process: run the task's grader and return its raw criterion scores."""
        if judge is not None:
            os.environ.update(self.judge_env(judge))
        module = load_grader_module(req.grader_file)
        fn = getattr(module, req.entry, None)
        if not callable(fn):
            raise AttributeError(f"grader defines no callable {req.entry}()")
        return check_scores(call_with_declared(fn, self.grader_kwargs(req, judge)))

    # --- score -----------------------------------------------------------------------------------------------------
    @abstractmethod
    def score(self, m: GradingManifest, raw: dict[str, float], evidence: Optional[Evidence]) -> Score:
        """The trial's Score from the grader's raw criteria (already checked to be in 0..1) and the engine's own
        evidence (audit logs + transcript). Raises GradingError when the output cannot be a score."""

    # --- run summary and report -------------------------------------------------------------------------------------
    def summarize(self, seen: list[TrialResult], finished: list[TrialResult]) -> Optional[BaseModel]:
        """This benchmark's run-level section over its own trials (`seen`: the latest result of every trial,
        `finished`: those that succeeded or failed); None = no section."""
        return None

    def report_lines(self, section: dict[str, Any]) -> list[str]:
        """The report's lines for this benchmark's summary section (as stored in summary.json)."""
        return []

    def __repr__(self) -> str:
        return f"<benchmark {self.name}>"
