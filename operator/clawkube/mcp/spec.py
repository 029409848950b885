"""An MCP server an agent's harness attaches (stdio): the contract between the lifecycle and the adapters."""
from __future__ import annotations

from pydantic import BaseModel, Field


class McpServer(BaseModel):
    """`command` starts the server inside the agent's sandbox (stdio transport); `env` is added to its
    environment. Adapters map it to their harness's own MCP configuration."""

    name: str = Field(pattern=r"^[A-Za-z0-9_-]+$")
    command: list[str] = Field(min_length=1)
    env: dict[str, str] = Field(default_factory=dict)
