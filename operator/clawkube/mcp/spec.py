"""An MCP server an agent's harness attaches (stdio): the contract between the lifecycle and the adapters."""
from __future__ import annotations

from pydantic import BaseModel, Field


class McpServer(BaseModel):
    """`command` starts the server inside the agent's sandbox (stdio transport); `env` is added to its
    environment. Adapters map it to their harness's own MCP configuration."""

    name: str = Field(pattern=r"^[A-Za-z0-9_-]+$")
    command: list[str] = Field(min_length=1)
    env: dict[str, str] = Field(default_factory=dict)


def sandbox_python() -> str:
    """An interpreter the sandbox user can run for this project's stdlib-only agent-side programs (the MCP tool
    server, the mcp-chat loop): the system python3, else the one running clawkube (which may sit under a home
    folder the sandbox user cannot enter)."""
    import shutil
    import sys

    return shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin") or sys.executable


OPERATOR_DIR = str(__import__("pathlib").Path(__file__).resolve().parents[2])  # PYTHONPATH for `-m clawkube...`
