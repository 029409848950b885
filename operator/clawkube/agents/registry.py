"""Agent adapters selected by name, or by import path for adapters outside this repository.

`spec.agent.harness` is a built-in name (oracle, nop, script, claude-code, codex, openclaw, hermes, nanobot) or
`package.module:ClassName` naming an `Agent` subclass importable where the agent runs (locally: this Python;
on a cluster: the agent image). A built-in adapter that fails to import is an error naming the adapter and the
cause, never a silently shorter list.
"""
from __future__ import annotations

import importlib
from typing import Optional

from .base import Agent
from .mcp_chat import McpChatAgent
from .simple import NopAgent, OracleAgent, ScriptAgent

BUILTIN: dict[str, str] = {
    "claude-code": "clawkube.agents.harnesses.claude_code:ClaudeCodeAgent",
    "codex": "clawkube.agents.harnesses.codex:CodexAgent",
    "openclaw": "clawkube.agents.harnesses.openclaw:OpenClawAgent",
    "hermes": "clawkube.agents.harnesses.hermes:HermesAgent",
    "nanobot": "clawkube.agents.harnesses.nanobot:NanobotAgent",
}
_AGENTS: dict[str, type[Agent]] = {a.name: a for a in (OracleAgent, NopAgent, ScriptAgent, McpChatAgent)}


class AdapterError(KeyError):
    """The harness name is unknown, or its adapter cannot be loaded."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


def register(cls: type[Agent]) -> type[Agent]:
    """Register an adapter class under its `name` (for adapters that are imported before they are used)."""
    _AGENTS[cls.name] = cls
    return cls


def load(path: str, label: Optional[str] = None) -> type[Agent]:
    """The Agent subclass at `module:Class`; AdapterError with the cause when that fails."""
    label = label or repr(path)
    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        raise AdapterError(f"agent harness {label}: expected a built-in name or 'package.module:ClassName'")
    try:
        module = importlib.import_module(module_name)
    except Exception as e:  # ImportError, SyntaxError, anything the module raises at import
        raise AdapterError(f"agent harness {label}: cannot import {module_name}: {type(e).__name__}: {e}") from e
    cls = getattr(module, attr, None)
    if not (isinstance(cls, type) and issubclass(cls, Agent)):
        raise AdapterError(f"agent harness {label}: {attr} is not an Agent subclass in {module_name}")
    return cls


def agent_class(name: str) -> type[Agent]:
    if name in _AGENTS:
        return _AGENTS[name]
    if name in BUILTIN:
        cls = load(BUILTIN[name], f"'{name}' (built in, {BUILTIN[name]})")
        _AGENTS[name] = cls
        return cls
    if ":" in name:
        return load(name)
    raise AdapterError(f"unknown agent harness '{name}' (known: {', '.join(known_agents())}; "
                       f"or an adapter outside this repo as 'package.module:ClassName')")


def get_agent(name: str) -> Agent:
    return agent_class(name)()


def known_agents() -> list[str]:
    return sorted(set(_AGENTS) | set(BUILTIN))


def broken_adapters() -> dict[str, str]:
    """Built-in adapters that fail to load, with the reason (for `clawkube doctor`)."""
    out: dict[str, str] = {}
    for name in BUILTIN:
        try:
            agent_class(name)
        except AdapterError as e:
            out[name] = str(e)
    return out


def harness_of(name: str) -> Optional[type[Agent]]:
    try:
        return agent_class(name)
    except AdapterError:
        return None
