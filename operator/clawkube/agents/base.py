"""The agent adapter interface.

An adapter never runs anything itself: it describes one process (`Invocation`) that the lifecycle
starts inside the trial sandbox (so every agent, scripted or real, is behind the same firewall),
and afterwards turns what that process left (stdout, a transcript file) into normalised events.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, ClassVar, Optional

from pydantic import BaseModel, Field

from ..mcp.spec import McpServer
from ..results.model import Usage
from ..tasks.model import AgentView
from .api import ModelEndpoint
from .transcript import TranscriptEvent, total_usage


class AgentContext(BaseModel):
    task: AgentView
    workdir: Path  # fresh workspace copy; the agent's cwd
    skills_dir: Path
    home: Path  # the agent's HOME (scratch, inside the trial dir)
    model: Optional[str] = None
    env: dict[str, str] = Field(default_factory=dict)  # task env + service URLs
    services: dict[str, str] = Field(default_factory=dict)  # service name -> base URL
    args: dict[str, Any] = Field(default_factory=dict)  # adapter options from the run spec
    reference_solution: Optional[str] = None  # set only for agents with needs_reference
    api: Optional[ModelEndpoint] = None  # spec.agent.api as the agent process reaches it (None: harness default)
    mcp_servers: list[McpServer] = Field(default_factory=list)  # the task's tools as MCP servers (stdio), to attach


class Invocation(BaseModel):
    argv: list[str]
    env: dict[str, str] = Field(default_factory=dict)
    stdin: Optional[str] = None
    transcript_file: Optional[str] = None  # where the harness writes its transcript, relative to home
    read_paths: list[Path] = Field(default_factory=list)  # folders the process needs to read/execute (its install)


class AgentOutput(BaseModel):
    exit_code: Optional[int]
    stdout: str = ""
    stderr: str = ""
    transcript_raw: Optional[str] = None  # content of Invocation.transcript_file, if any
    timed_out: bool = False
    wall_seconds: float = 0.0


class Agent(ABC):
    name: ClassVar[str]
    needs_reference: ClassVar[bool] = False  # oracle only
    credential_env: ClassVar[tuple[str, ...]] = ()  # env names (API keys, base URLs) passed through when set
    tool_kinds: ClassVar[dict[str, str]] = {}  # harness tool name -> kind (exec, read, write, search, web, ...)

    @abstractmethod
    def invocation(self, ctx: AgentContext) -> Invocation: ...

    @abstractmethod
    def parse(self, ctx: AgentContext, out: AgentOutput) -> list[TranscriptEvent]: ...

    def usage(self, events: list[TranscriptEvent], out: AgentOutput) -> Usage:
        u = total_usage(events, self.tool_kinds)
        u.wall_seconds = out.wall_seconds
        return u
