"""Typed per-trial results: what `score.json`, `usage.json` and `result.json` hold."""
from __future__ import annotations

from enum import Enum
from typing import Optional

from pydantic import BaseModel, Field


class ErrorKind(str, Enum):
    AGENT_TIMEOUT = "agent_timeout"
    AGENT_ERROR = "agent_error"
    GRADING_ERROR = "grading_error"  # grader crashed, timed out or returned garbage
    INFRA = "infra"  # setup/services/sandbox/S3/apiserver faults
    SETUP_ERROR = "setup_error"  # the task cannot run here (workspace not downloaded, a Warmup line failed): not retried


class TrialState(str, Enum):
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"  # graded (any score, including 0)
    FAILED = "failed"  # no score: see error_kind


# Kinds of tool calls counted in `Usage.tool_calls_by_kind` (each adapter maps its harness's tool names).
TOOL_KINDS = ("exec", "read", "write", "search", "web", "browser", "plan", "agent", "mcp", "other")


class Usage(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    total_tokens: int = 0
    cost_usd: float = 0.0
    wall_seconds: float = 0.0
    turns: int = 0
    tool_calls: int = 0
    tool_calls_by_kind: dict[str, int] = Field(default_factory=dict)  # exec, read, write, search, web, ... (agents/)

    def add(self, other: "Usage") -> "Usage":
        out = {k: getattr(self, k) + getattr(other, k) for k in Usage.model_fields if k != "tool_calls_by_kind"}
        kinds = dict(self.tool_calls_by_kind)
        for k, n in other.tool_calls_by_kind.items():
            kinds[k] = kinds.get(k, 0) + n
        return Usage(**out, tool_calls_by_kind=kinds)


class Score(BaseModel):
    """The graded outcome of one trial."""

    score: float = Field(ge=0.0, le=1.0)
    passed: bool
    dimensions: dict[str, float] = Field(default_factory=dict)  # CLAW-Eval completion/robustness/safety/communication
    criteria: dict[str, float] = Field(default_factory=dict)  # raw criterion scores from the grader
    sub_problems: dict[str, float] = Field(default_factory=dict)  # EvoClawBench sub_N means, key "sub_N"
    details: dict = Field(default_factory=dict)


class TrialResult(BaseModel):
    """Written last, atomically, as result.json: its presence means the trial is finished."""

    task_id: str
    category: str
    task_format: str
    trial_index: int = Field(ge=0)
    attempt: int = 1
    state: TrialState
    error_kind: Optional[ErrorKind] = None
    error_message: Optional[str] = None
    score: Optional[Score] = None
    usage: Usage = Field(default_factory=Usage)
    phase_seconds: dict[str, float] = Field(default_factory=dict)  # setup/agent/firewall/grade/collect
    started_at: Optional[str] = None
    finished_at: Optional[str] = None
    artifacts: dict[str, str] = Field(default_factory=dict)  # name -> relative path or URI
    firewall: str = "namespace"  # how the agent phase was isolated: namespace | none
    agent: str = ""
    model: Optional[str] = None
    mode: Optional[str] = None  # EvoClawBench evaluation mode: baseline/preskill/postskill
    # error kind -> earlier attempts (or gradings) of this trial that failed with it and were retried
    retries: dict[str, int] = Field(default_factory=dict)

    @property
    def key(self) -> tuple[str, int]:
        return (self.task_id, self.trial_index)
