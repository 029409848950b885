"""Typed models of the two custom resources (clawkube.io/v1alpha1): BenchmarkRun and TaskTrial.

`BenchmarkRun.spec` is `clawkube.runspec.BenchmarkRunSpec`. The status models and `TaskTrialSpec` live
here. Field names are camelCase on the wire (aliases), snake_case in Python. The CRD schemas in crds/
are generated from these models (`python -m clawkube.k8s.crdgen crds/`).
"""
from __future__ import annotations

from enum import Enum
from typing import Any, Literal, Optional

from pydantic import Field

from ..results.model import ErrorKind, Score, TrialState, Usage
from ..runspec import EvalMode, _Camel
from ..tasks.model import ServiceSpec

GROUP = "clawkube.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
RUNS = "benchmarkruns"
TRIALS = "tasktrials"


class Condition(_Camel):
    type: str
    status: Literal["True", "False", "Unknown"]
    reason: str = ""
    message: str = ""
    observed_generation: Optional[int] = None
    last_transition_time: str


class UsageStatus(_Camel, Usage):
    """`Usage` with camelCase keys."""

    def plain(self) -> Usage:
        return Usage(**self.model_dump())

    @classmethod
    def of(cls, usage: Usage) -> "UsageStatus":
        return cls(**usage.model_dump())


class ScoreStatus(_Camel, Score):
    """`Score` with camelCase keys."""

    def plain(self) -> Score:
        return Score(**self.model_dump())

    @classmethod
    def of(cls, score: Score) -> "ScoreStatus":
        return cls(**score.model_dump())


# ---------------------------------------------------------------- BenchmarkRun status

class RunPhase(str, Enum):
    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"  # every trial finished (graded or failed for good), results uploaded
    FAILED = "Failed"  # the run could not start (e.g. no task could be loaded)


class TaskRef(_Camel):
    """A staged task: its two bundle ConfigMaps and what the trials need to know."""

    id: str
    category: str = "uncategorized"
    format: str = ""
    content_hash: str
    agent_bundle: str  # ConfigMap name (key bundle.tar.gz)
    grading_bundle: str  # ConfigMap name (key bundle.tar.gz)
    timeout_seconds: int = Field(ge=1)
    grader_timeout_seconds: int = Field(ge=1)
    services: list[ServiceSpec] = Field(default_factory=list)  # mock services: sidecars of the agent pod
    warmup: bool = False  # the task has Warmup lines: its agent pods get the "svc-warmup" sidecar


class TrialCounts(_Camel):
    total: int = 0
    queued: int = 0  # not yet scheduled (includes retries waiting for a slot)
    running: int = 0  # agent pod scheduled or running
    grading: int = 0
    succeeded: int = 0
    failed: int = 0


class RunStatus(_Camel):
    phase: Optional[RunPhase] = None
    observed_generation: Optional[int] = None
    conditions: list[Condition] = Field(default_factory=list)
    tasks: list[TaskRef] = Field(default_factory=list)
    counts: TrialCounts = Field(default_factory=TrialCounts)
    progress: Optional[str] = None  # "done/total" (printer column)
    mean_score: Optional[float] = None
    pass_rate: Optional[float] = None
    usage: UsageStatus = Field(default_factory=UsageStatus)
    failures: dict[str, int] = Field(default_factory=dict)  # final failures by error kind
    retries: dict[str, int] = Field(default_factory=dict)  # failed attempts that were retried, by error kind
    summary: Optional[dict[str, Any]] = None  # clawkube.reporting.summary.RunSummary, when available
    task_errors: list[str] = Field(default_factory=list)  # task files that could not be loaded (the run fails)
    summary_uri: Optional[str] = None  # s3://.../<run>/summary.json once written
    summary_upload_attempts: int = 0
    last_summary_upload: Optional[str] = None
    started_at: Optional[str] = None
    finished_at: Optional[str] = None


# ---------------------------------------------------------------- TaskTrial

class TaskTrialSpec(_Camel):
    run: str  # owning BenchmarkRun
    task_id: str
    category: str = "uncategorized"
    task_format: str = ""
    trial_index: int = Field(ge=0)
    content_hash: str
    agent_bundle: str
    grading_bundle: str
    timeout_seconds: int = Field(ge=1)
    grader_timeout_seconds: int = Field(ge=1)
    services: list[ServiceSpec] = Field(default_factory=list)  # mock services: sidecars of the agent pod
    warmup: bool = False  # the task has Warmup lines: its agent pods get the "svc-warmup" sidecar
    mode: EvalMode = EvalMode.BASELINE  # EvoClawBench mode: the stages each attempt runs (decide_trial.py)


class AgentOutcome(_Camel):
    """The agent pod's termination message (DESIGN.md "Pods")."""

    exit_code: Optional[int] = None
    timed_out: bool = False
    usage: UsageStatus = Field(default_factory=UsageStatus)
    error_kind: Optional[ErrorKind] = None
    error_message: Optional[str] = None
    finished_at: Optional[str] = None
    skills: Optional[dict[str, Any]] = None  # skill files hashed as the execution started + its mutations
    warmup_ports: list[int] = Field(default_factory=list)  # servers the warmup left running in the agent pod
    created_skills: Optional[list[str]] = None  # an author stage: the skills it created
    skill_quality: Optional[float] = None


class StageOutcome(_Camel):
    """A finished stage of the current attempt before its graded execution (PreSkill/PostSkill modes):
    `authoring`, `first_run`, `first_run_grade` or `summary`. What the stage's own process reported (an agent
    error or timeout, a grading error) is recorded here and the attempt goes on, as on the local runner."""

    name: str
    usage: UsageStatus = Field(default_factory=UsageStatus)
    error_kind: Optional[ErrorKind] = None
    error_message: Optional[str] = None
    score: Optional[ScoreStatus] = None  # first_run_grade: the first run's score
    skills: Optional[dict[str, Any]] = None  # first_run: its skills report
    created_skills: Optional[list[str]] = None  # authoring / summary: the skills they created
    skill_quality: Optional[float] = None  # authoring / summary: their quality score
    seconds: float = 0.0


class AttemptRecord(_Camel):
    """One failed attempt (kept for the history; the trial's final outcome is in the top-level fields)."""

    attempt: int
    grade_attempt: int = 0
    error_kind: ErrorKind
    reason: str
    message: str = ""
    at: str


class TrialPhase(str, Enum):
    QUEUED = "Queued"
    AGENT = "Agent"
    GRADING = "Grading"
    DONE = "Done"


class TrialStatus(_Camel):
    state: TrialState = TrialState.PENDING
    phase: TrialPhase = TrialPhase.QUEUED
    attempt: int = Field(default=0, ge=0)  # current attempt (agent + grading); 0 = never scheduled
    scheduled: bool = False  # the agent pod of `attempt` was created
    grade_attempt: int = Field(default=0, ge=0)  # grading attempt within the current attempt
    grade_scheduled: bool = False
    failures: dict[str, int] = Field(default_factory=dict)  # failed attempts by error kind
    history: list[AttemptRecord] = Field(default_factory=list)
    conditions: list[Condition] = Field(default_factory=list)
    stages: list[StageOutcome] = Field(default_factory=list)  # finished stages of the current attempt (modes)
    agent: Optional[AgentOutcome] = None  # of the current attempt
    score: Optional[ScoreStatus] = None
    usage: UsageStatus = Field(default_factory=UsageStatus)  # summed over all attempts
    error_kind: Optional[ErrorKind] = None
    error_message: Optional[str] = None
    artifacts: dict[str, str] = Field(default_factory=dict)  # name -> s3:// URI
    phase_seconds: dict[str, float] = Field(default_factory=dict)  # queue / agent / grade (last attempt)
    upload_attempts: int = 0
    last_upload_attempt: Optional[str] = None
    scheduled_at: Optional[str] = None  # first agent pod of this trial
    agent_finished_at: Optional[str] = None
    finished_at: Optional[str] = None

    @property
    def finished(self) -> bool:
        return self.state in (TrialState.SUCCEEDED, TrialState.FAILED)
