"""What `decide` asks `act` to do. Plain data; `act.py` executes them in order."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional, Union

from ..contracts.pod_env import FirstRunRecord
from ..results.model import TrialResult
from .model import RunStatus, TaskTrialSpec, TrialStatus


@dataclass(frozen=True)
class StageTasks:
    """Load the run's task source, create the bundle ConfigMaps, record TasksLoaded + status.tasks."""

    run: str


@dataclass(frozen=True)
class CreateTrial:
    name: str
    spec: TaskTrialSpec


@dataclass(frozen=True)
class CreatePod:
    trial: str
    role: Literal["agent", "grade"]
    name: str
    attempt: int
    grade_attempt: int = 0
    artifact_uri: Optional[str] = None  # where the pod uploads its --out
    # the artifacts of an agent run that this pod reads: grading pods grade them, summary pods summarise them
    agent_artifacts_uri: Optional[str] = None
    # agent pods: execution | authoring | first_run | summary; grading pods: execution | first_run
    stage: str = "execution"
    skills_uri: Optional[str] = None  # execution pods of PreSkill/PostSkill: the authored skills they start with
    first_run: Optional[FirstRunRecord] = None  # summary pods: what they are told of the first run
    warmup_peer: Optional[str] = None  # grading pods: the agent pod's warmup relay (host:port, or LOST_PEER)


@dataclass(frozen=True)
class DeletePod:
    trial: str
    name: str
    reason: str


@dataclass(frozen=True)
class PatchTrial:
    """Write `status` (the whole new status) over `before`, guarded by the observed resourceVersion."""

    name: str
    before: TrialStatus
    status: TrialStatus


@dataclass(frozen=True)
class UploadResult:
    """Write result.json (+ score.json) under `prefix_uri` and set ArtifactsUploaded on the trial."""

    trial: str
    prefix_uri: str  # s3://bucket/<prefix>/<run>/<task>/<trial>/
    result: TrialResult
    status: TrialStatus  # the trial status the outcome condition is added to


@dataclass(frozen=True)
class UploadSummary:
    """Write summary.json and run.json under the run's prefix and set SummaryUploaded on the run."""

    run: str
    prefix_uri: str  # s3://bucket/<prefix>/<run>/
    summary: dict[str, Any]
    run_record: dict[str, Any]  # run.json: spec, tasks, task errors, modes (as the local results folder has)
    status: RunStatus  # the run status the outcome condition is added to


@dataclass(frozen=True)
class PatchRun:
    before: RunStatus
    status: RunStatus


@dataclass(frozen=True)
class Emit:
    """A Kubernetes Event on a run or trial."""

    kind: Literal["BenchmarkRun", "TaskTrial"]
    name: str
    reason: str
    message: str
    type: Literal["Normal", "Warning"] = "Normal"


Action = Union[StageTasks, CreateTrial, CreatePod, DeletePod, PatchTrial, UploadResult, PatchRun, Emit]
