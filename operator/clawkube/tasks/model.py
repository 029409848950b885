"""The one typed task model every format is loaded into.

A task has two halves that must never meet before the agent has finished:
- agent-visible material: prompt, workspace files, skills, env names, warmup, services;
- grading-only material: ground truth files, grader code, reference solution, probes.
`TaskSpec.agent_view()` returns only the first half; the lifecycle hands agents nothing else.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field


class FileMapping(BaseModel):
    """Copy `src` (file or folder on the task's disk) to `dest` (relative path inside the target dir)."""

    model_config = ConfigDict(frozen=True)
    src: Path
    dest: str = "."


class ServiceSpec(BaseModel):
    """A mock service a task needs while the agent runs (CLAW-Eval `services[]`)."""

    name: str
    command: list[str]
    port: int = Field(ge=1, le=65535)
    health_check: Optional[str] = None  # path (e.g. /health) or full URL
    reset_endpoint: Optional[str] = None  # path POSTed to between trials
    env: dict[str, str] = Field(default_factory=dict)


class SubProblem(BaseModel):
    index: int = Field(ge=1)
    title: str
    text: str = ""


class GraderSpec(BaseModel):
    """Grader code (grading-only). Exactly one of `source_file` / `inline_code` is set."""

    source_file: Optional[Path] = None
    inline_code: Optional[str] = None
    entry: str = "grade"
    timeout_seconds: int = Field(default=120, ge=1)


class AgentView(BaseModel):
    """Everything an agent may see of a task. Nothing grading-only is in here."""

    id: str
    name: str
    category: str
    prompt: str
    timeout_seconds: int
    max_turns: Optional[int] = None
    tools: list[Any] = Field(default_factory=list)
    tool_endpoints: list[Any] = Field(default_factory=list)
    env: list[str] = Field(default_factory=list)
    attachments: list[str] = Field(default_factory=list)
    sub_problems: list[SubProblem] = Field(default_factory=list)


class TaskSpec(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    # identity
    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
    name: str
    category: str = "uncategorized"
    format: str = Field(min_length=1)  # the benchmark plugin's name (clawkube.benchmarks)
    source_path: Path  # the task file (md) or folder (CLAW-Eval)
    difficulty: Optional[str] = None
    tags: list[str] = Field(default_factory=list)
    modality: Optional[str] = None

    # agent-visible
    prompt: str = Field(min_length=1)
    language: Optional[str] = None
    attachments: list[str] = Field(default_factory=list)
    timeout_seconds: int = Field(default=600, ge=1)
    max_turns: Optional[int] = None
    workspace: list[FileMapping] = Field(default_factory=list)  # copied into the agent's working dir
    skills: list[Path] = Field(default_factory=list)  # copied into the agent's skills dir
    env: list[str] = Field(default_factory=list)  # names of env vars passed to agent and grader
    warmup: list[str] = Field(default_factory=list)  # shell lines run in the workspace before the agent
    services: list[ServiceSpec] = Field(default_factory=list)
    fixtures: list[Path] = Field(default_factory=list)  # CLAW-Eval environment.fixtures: service data files
    tools: list[Any] = Field(default_factory=list)
    tool_endpoints: list[Any] = Field(default_factory=list)
    sub_problems: list[SubProblem] = Field(default_factory=list)
    skill_category: Optional[str] = None

    # documentation of intent (not shown to the agent)
    expected_behavior: str = ""
    grading_criteria: str = ""
    judge_rubric: str = ""
    grading_type: Literal["automated", "hybrid", "llm_judge"] = "automated"
    grading_weights: dict[str, float] = Field(default_factory=dict)

    # grading-only
    grader: GraderSpec
    grading_files: list[FileMapping] = Field(default_factory=list)  # gt/, sandbox_grader_files
    reference_solution: Optional[str] = None  # shell script; only the oracle agent gets it
    safety_checks: list[Any] = Field(default_factory=list)
    expected_actions: list[Any] = Field(default_factory=list)
    env_snapshot_files: list[str] = Field(default_factory=list)
    env_snapshot_commands: list[str] = Field(default_factory=list)
    pass_threshold: float = 0.75

    # benchmark-specific data its plugin writes at load and reads back from the bundle manifests
    # (`extra["grading_only_paths"]`: more paths to hide from agents)
    extra: dict[str, Any] = Field(default_factory=dict)
    # a task that loads but cannot run here (e.g. its workspace is not downloaded): every trial of it ends as a
    # setup error with this message, never retried; `validate` prints it
    setup_error: Optional[str] = None
    load_warnings: list[str] = Field(default_factory=list)  # printed by `validate`; the task still runs

    def agent_view(self) -> AgentView:
        return AgentView(
            id=self.id, name=self.name, category=self.category, prompt=self.prompt,
            timeout_seconds=self.timeout_seconds, max_turns=self.max_turns, tools=self.tools,
            tool_endpoints=self.tool_endpoints, env=self.env, attachments=self.attachments,
            sub_problems=self.sub_problems,
        )

    def grading_only_paths(self) -> list[Path]:
        """Paths on disk that hold grading-only material (hidden from agents)."""
        paths = [m.src for m in self.grading_files]
        if self.grader.source_file is not None:
            paths.append(self.grader.source_file)
        paths += [Path(p) for p in self.extra.get("grading_only_paths", [])]
        return paths


class TaskLoadError(Exception):
    """A malformed task file. Names the file, the field and what is wrong."""

    def __init__(self, path: Path | str, field: str, problem: str):
        self.path = Path(path)
        self.field = field
        self.problem = problem
        super().__init__(f"{path}: field '{field}': {problem}")


class TaskUnavailable(TaskLoadError):
    """A well-formed task that cannot run here: a file it names is not on this machine (e.g. a fixture the shared
    corpus leaves out). The loader lists it as skipped with the reason, not as malformed."""
