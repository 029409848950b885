"""`mcp-chat`: this project's own minimal agent loop (clawkube/mcp/chat_loop.py) as an adapter.

An OpenAI-compatible chat model (the run's `spec.agent.api` + `spec.agent.model`; or args `base_url`,
`api_key_env`) plus the tools of the trial's MCP servers (`ctx.mcp_servers`), nothing else: no shell, no files.
It is the agent of the CLAW-Eval parity check (the same scripted model drives it and the benchmark's own loop)
and a way to dry-run a task's tools without a harness installed. Args: `max_turns` (default: the task's, else
20), `system` (a system prompt; default none).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

from .base import Agent, AgentContext, AgentOutput, Invocation
from ..mcp.spec import sandbox_python
from .transcript import TranscriptEvent

TRANSCRIPT = "mcp-chat.jsonl"
CONFIG = "mcp-chat.json"
_OPERATOR = str(Path(__file__).resolve().parents[2])


class McpChatAgent(Agent):
    name = "mcp-chat"
    credential_env = ()

    def installed(self) -> SimpleNamespace:
        """What the agent's sandbox must show: this project's package (the loop and the MCP tool server)."""
        return SimpleNamespace(read_paths=[Path(_OPERATOR)])

    def invocation(self, ctx: AgentContext) -> Invocation:
        api = getattr(ctx, "api", None)
        base_url = (api.openai_base if api is not None else None) or ctx.args.get("base_url")
        if not base_url:
            raise ValueError("mcp-chat needs a model API: set spec.agent.api.baseUrl (or args.base_url)")
        if not ctx.model:
            raise ValueError("mcp-chat needs a model name (spec.agent.model / --model)")
        env: dict[str, str] = {"PYTHONPATH": _OPERATOR}
        key_env = None
        if api is not None and api.api_key:
            key_env, env["CLAWKUBE_MCP_CHAT_KEY"] = "CLAWKUBE_MCP_CHAT_KEY", api.api_key
        elif ctx.args.get("api_key_env"):
            key_env = str(ctx.args["api_key_env"])
            if key_env in ctx.env:
                env[key_env] = ctx.env[key_env]
        cfg = {"base_url": base_url, "model": ctx.model, "api_key_env": key_env, "prompt": ctx.task.prompt,
               "system": ctx.args.get("system"), "max_turns": int(ctx.args.get("max_turns") or ctx.task.max_turns or 20),
               "mcp_servers": [s.model_dump() for s in ctx.mcp_servers], "transcript": str(ctx.home / TRANSCRIPT)}
        (ctx.home / CONFIG).write_text(json.dumps(cfg, ensure_ascii=False))
        return Invocation(argv=[sandbox_python(), "-m", "clawkube.mcp.chat_loop", str(ctx.home / CONFIG)], env=env,
                          transcript_file=TRANSCRIPT, read_paths=[Path(_OPERATOR)])

    def parse(self, ctx: AgentContext, out: AgentOutput) -> list[TranscriptEvent]:
        events = []
        for line in (out.transcript_raw or "").splitlines():
            if line.strip():
                events.append(TranscriptEvent.model_validate_json(line))
        return events
