"""The real CLAW-Eval `tasks/<id>/task.yaml`, as its own runner reads it (claw-eval/claw-eval, `TaskDefinition`).

Typed here from the published schema (this project's own model, no code of the benchmark): what the benchmark's
runner accepts loads, with the same defaults; what it refuses is a `TaskLoadError` naming the field.

Layout of a checkout (the *benchmark root*): `tasks/<id>/{task.yaml, grader.py, fixtures/}`, `src/claw_eval/`
(graders' base classes, judge), `mock_services/<svc>/server.py` (started from the root, as the task says).
The data-only copy in ../shared/benchmarks/claw-eval has the same layout without any code.
"""
from __future__ import annotations

import re
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .names import GRADER_FILE, TASK_FILE  # noqa: F401 (re-exported)


class Prompt(BaseModel):
    text: str
    language: str = "zh"
    attachments: list[str] = Field(default_factory=list)


class ToolSpec(BaseModel):
    """A function the model may call (name, description, JSON-schema `input_schema`)."""

    name: str
    description: str
    input_schema: dict[str, Any] = Field(default_factory=dict)


class ToolEndpoint(BaseModel):
    """Where a tool call goes: the tool's arguments as the JSON body of `method url` (never shown to the model)."""

    tool_name: str
    url: str
    method: str = "POST"


class Check(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: str
    field: Optional[str] = None
    tool_name: Optional[str] = None
    min_calls: Optional[int] = None
    categories: Optional[list[str]] = None
    min_length: Optional[int] = None
    patterns: Optional[list[str]] = None
    keywords: Optional[list[str]] = None
    description: Optional[str] = None
    rubric: Optional[str] = None

    @field_validator("keywords", mode="before")
    @classmethod
    def _keywords_as_text(cls, v: Any) -> Any:
        return v if v is None else [str(x) for x in v]  # YAML reads bare numbers as ints


class ScoringComponent(BaseModel):
    name: str
    weight: float
    check: Check


class SafetyCheck(BaseModel):
    type: str
    tool_name: Optional[str] = None
    patterns: Optional[list[str]] = None
    description: str = ""


class Environment(BaseModel):
    timeout_seconds: int = 300
    max_turns: int = 20
    fixtures: list[str] = Field(default_factory=list)
    env_snapshot_timeout: int = 10


class Service(BaseModel):
    """A mock service: `command` run from the benchmark root with `env`, ready when `health_check` answers
    `health_check_method` with a status below 500 within `ready_timeout` seconds."""

    name: str
    command: str
    port: int
    health_check: str
    health_check_method: str = "POST"
    ready_timeout: int = 10
    reset_endpoint: Optional[str] = None
    env: dict[str, str] = Field(default_factory=dict)


class ExpectedAction(BaseModel):
    service: str
    action_key: str
    required: bool = True


class UserAgent(BaseModel):
    """The simulated user of a multi-turn task (persona, at most `max_rounds` replies)."""

    enabled: bool = False
    persona: str = ""
    max_rounds: int = 3
    system_prompt_suffix: str = ""


class TaskYaml(BaseModel):
    task_id: str
    task_name: str
    version: str = "1.0"
    category: str = ""
    difficulty: str = "simple"
    prompt: Prompt
    tools: list[ToolSpec] = Field(default_factory=list)
    tool_endpoints: list[ToolEndpoint] = Field(default_factory=list)
    environment: Environment = Field(default_factory=Environment)
    scoring_components: list[ScoringComponent] = Field(default_factory=list)
    safety_checks: list[SafetyCheck] = Field(default_factory=list)
    services: list[Service] = Field(default_factory=list)
    expected_actions: list[ExpectedAction] = Field(default_factory=list)
    judge_rubric: str = ""
    reference_solution: str = ""
    primary_dimensions: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    user_agent: UserAgent = Field(default_factory=UserAgent)
    sandbox_files: list[str] = Field(default_factory=list)
    sandbox_grader_files: list[str] = Field(default_factory=list)
    env_snapshot_files: list[str] = Field(default_factory=list)
    env_snapshot_commands: list[str] = Field(default_factory=list)
    local_grader_files: list[str] = Field(default_factory=list)

    def endpoint(self, tool_name: str) -> Optional[ToolEndpoint]:
        return next((e for e in self.tool_endpoints if e.tool_name == tool_name), None)

    def agent_files(self) -> list[str]:
        """What goes into the agent's /workspace (relative to the task folder): `sandbox_files`, else
        `environment.fixtures` (the benchmark's own fallback)."""
        return list(self.sandbox_files or self.environment.fixtures)


_URL = re.compile(r"^https?://(localhost|127\.0\.0\.1)(?::(\d+))?(/[^?#]*)?")


def url_port_path(url: str) -> Optional[tuple[int, str]]:
    """(port, path) of a task's localhost URL, or None for any other URL."""
    m = _URL.match(url)
    if not m:
        return None
    return int(m.group(2) or 80), m.group(3) or "/"


def consistency_problems(t: TaskYaml) -> list[tuple[str, str]]:
    """(field, problem) for what the benchmark's runner would only trip over at run time."""
    out: list[tuple[str, str]] = []
    tools = {x.name for x in t.tools}
    ports = {s.port: s.name for s in t.services}
    names = [s.name for s in t.services]
    for i, n in enumerate(names):
        if names.index(n) != i:
            out.append((f"services[{i}].name", f"service {n!r} is declared twice"))
    for i, s in enumerate(t.services):
        for fld in ("health_check", "reset_endpoint"):
            v = getattr(s, fld)
            if v is not None and url_port_path(v) is None:
                out.append((f"services[{i}].{fld}", f"{v!r} is not a localhost URL"))
        if not s.command.split():
            out.append((f"services[{i}].command", "empty"))
        if not 1 <= s.port <= 65535:
            out.append((f"services[{i}].port", f"{s.port} is not a TCP port (1..65535)"))
    for i, e in enumerate(t.tool_endpoints):
        if e.tool_name not in tools:
            out.append((f"tool_endpoints[{i}].tool_name", f"no tool named {e.tool_name!r} in tools"))
        pp = url_port_path(e.url)
        if pp is None:
            out.append((f"tool_endpoints[{i}].url", f"{e.url!r} is not a localhost URL of one of the task's services"))
        elif ports and pp[0] not in ports:
            out.append((f"tool_endpoints[{i}].url", f"port {pp[0]} is not the port of any service "
                                                    f"({', '.join(f'{n}={p}' for p, n in ports.items())})"))
    return out
