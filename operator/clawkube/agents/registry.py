"""Agent adapters selected by name."""
from __future__ import annotations

from .base import Agent
from .mcp_chat import McpChatAgent
from .simple import NopAgent, OracleAgent, ScriptAgent

_AGENTS: dict[str, type[Agent]] = {a.name: a for a in (OracleAgent, NopAgent, ScriptAgent, McpChatAgent)}


def register(cls: type[Agent]) -> type[Agent]:
    _AGENTS[cls.name] = cls
    return cls


def _load_harnesses() -> None:
    try:
        from . import harnesses  # noqa: F401  (registers openclaw, claude-code, codex, hermes, nanobot)
    except ImportError:
        pass


def get_agent(name: str) -> Agent:
    _load_harnesses()
    try:
        return _AGENTS[name]()
    except KeyError:
        raise KeyError(f"unknown agent harness '{name}' (known: {', '.join(sorted(_AGENTS))})") from None


def known_agents() -> list[str]:
    _load_harnesses()
    return sorted(_AGENTS)
