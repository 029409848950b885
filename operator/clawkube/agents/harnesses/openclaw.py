"""OpenClaw (npm openclaw; Node >= 24), one headless embedded turn with `agent exec`.

    openclaw agent exec --json --config ~/.openclaw/openclaw.json --cwd WORKDIR --state-dir ~/.openclaw
                        --timeout SECONDS [--model provider/model] [--thinking LEVEL] -- PROMPT

`agent exec` is OpenClaw's entry point for CI: no Gateway, no workspace bootstrap files (AGENTS.md, SOUL.md...
are skipped), tools scoped to --cwd. stdout is one JSON envelope {ok, status, final, usage{input, output,
cacheRead, cacheWrite, total, cost{total}}, toolSummary, model, provider, sessionId, error?}. The transcript is
in SQLite: <state>/agents/<agent>/agent/openclaw-agent.sqlite, table transcript_events(session_id, seq,
event_json | event_zstd): a `session` event, then `message` events whose message.role is user | assistant |
toolResult; assistant content blocks text / thinking / toolCall{id, name, arguments} with message.usage{input
(cache reads excluded), output, cacheRead, cacheWrite, cost{total}}; toolResult {toolCallId, toolName, content,
isError}. Larger events are zstd-compressed (event_zstd).

Model API: the config file gets a provider `clawkube` {baseUrl = .../v1, apiKey, api = openai-completions
(args.api: openai-responses, or anthropic-messages with the base URL without /v1), models [the run's model]}
and the run uses model `clawkube/<model>`. args.config is deep-merged over the config. Skills:
~/.openclaw/skills. Bootstrap: all state under ~/.openclaw (and ~/.cache/openclaw-*); nothing in the workspace.
"""
from __future__ import annotations

import json
from typing import Any, Optional

from ..base import AgentContext, AgentOutput
from ..harness import CliFlag, HarnessAgent, Launch
from ..transcript import TranscriptEvent
from . import prelude
from .accounting import as_int, usage_events
from .environment import passthrough
from .jsonl import arguments_of, last_object, text_of
from .. import harness_files

API_ENV = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "GEMINI_API_KEY")
PROVIDER = "clawkube"
TOOL_KINDS = {"exec": "exec", "process": "exec", "bash": "exec", "read": "read", "ls": "search", "find": "search",
              "grep": "search", "write": "write", "edit": "write", "apply_patch": "write", "web_search": "web",
              "web_fetch": "web", "browser": "browser", "sessions_spawn": "agent", "sessions_send": "agent",
              "sessions_yield": "agent", "image": "read", "memory_search": "search", "memory_get": "read"}


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def config(ctx: AgentContext) -> dict[str, Any]:
    base: dict[str, Any] = {"agents": {"defaults": {"workspace": str(ctx.workdir)}}}
    if ctx.api is not None:
        api = str(ctx.args.get("api", "openai-completions"))
        url = ctx.api.anthropic_base if api.startswith("anthropic") else ctx.api.openai_base
        base["models"] = {"mode": "merge", "providers": {PROVIDER: {
            "baseUrl": url, "apiKey": ctx.api.key, "api": api,
            "models": [{"id": ctx.model, "name": ctx.model, "reasoning": False, "input": ["text"],
                        "contextWindow": int(ctx.args.get("context_window", 200000)),
                        "maxTokens": int(ctx.args.get("max_tokens", 8192))}]}}}
        base["agents"]["defaults"]["model"] = {"primary": f"{PROVIDER}/{ctx.model}"}
    extra = ctx.args.get("config") or {}
    if not isinstance(extra, dict):
        raise ValueError("openclaw agent: args.config must be a mapping (merged into openclaw.json)")
    return merge(base, extra)


def _decoded(row: Any) -> Optional[dict[str, Any]]:
    text = row["event_json"]
    if text is None and row["event_zstd"] is not None:
        import zstandard

        text = zstandard.ZstdDecompressor().decompress(row["event_zstd"], max_output_size=8 * 1024 * 1024).decode(
            "utf-8", errors="replace")
    obj = json.loads(text) if text else None
    return obj if isinstance(obj, dict) else None


def _usage_from(u: Any, model: Optional[str], label: str) -> list[TranscriptEvent]:
    if not isinstance(u, dict):
        return []
    cost = u.get("cost")
    total = cost.get("total") if isinstance(cost, dict) else cost
    return usage_events(model, input_tokens=as_int(u.get("input")) + as_int(u.get("cacheWrite")),
                        output_tokens=as_int(u.get("output")), cache_read_tokens=as_int(u.get("cacheRead")),
                        cost_usd=float(total) if isinstance(total, (int, float)) and total > 0 else None, label=label)


def _event(rec: dict[str, Any], ctx: AgentContext, first_user: list[bool]) -> list[TranscriptEvent]:
    if rec.get("type") == "session":
        return [TranscriptEvent(type="meta", content=f"session {rec.get('id', '')}")]
    msg = rec.get("message")
    if rec.get("type") != "message" or not isinstance(msg, dict):
        return []
    role, out = msg.get("role"), []
    if role == "user":
        if not first_user[0]:  # the first user message is the task prompt, already the first event
            out.append(TranscriptEvent(type="message", role="user", content=text_of(msg.get("content"))))
        first_user[0] = False
    elif role == "assistant":
        for block in msg.get("content") or []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and block.get("text"):
                out.append(TranscriptEvent(type="message", role="assistant", content=block["text"]))
            elif block.get("type") == "toolCall":
                out.append(TranscriptEvent(type="tool_call", role="assistant", tool=block.get("name"),
                                           call_id=str(block.get("id", "")),
                                           arguments=arguments_of(block.get("arguments"))))
        out += _usage_from(msg.get("usage"), msg.get("model") or ctx.model, "assistant message")
        if msg.get("errorMessage") or msg.get("stopReason") == "error":
            out.append(TranscriptEvent(type="error", content=f"openclaw: {msg.get('errorMessage', 'model error')}"))
    elif role == "toolResult":
        details = msg.get("details") if isinstance(msg.get("details"), dict) else {}
        content = text_of(msg.get("content")) or str(details.get("aggregated") or "")
        out.append(TranscriptEvent(type="tool_result", role="tool", tool=msg.get("toolName"),
                                   call_id=str(msg.get("toolCallId", "")), content=content,
                                   arguments={"is_error": True} if msg.get("isError") else None))
    return out


class OpenClawAgent(HarnessAgent):
    name = "openclaw"
    package = "openclaw"
    credential_env = API_ENV
    tool_kinds = TOOL_KINDS
    apis = ("chat", "responses", "anthropic")
    flags = (CliFlag(arg="thinking", flag="--thinking"),
             CliFlag(arg="timeout", flag="--timeout", task_default="timeout_seconds"))
    transcript = "~/.openclaw/agents/<agent>/agent/openclaw-agent.sqlite (table transcript_events); stdout envelope"
    bootstrap = "~/.openclaw/ (state dir, config), ~/.cache/openclaw-*; agent exec skips workspace bootstrap files"

    def _agent_id(self, ctx: AgentContext) -> str:
        return str(ctx.args.get("agent", "main"))

    def launch(self, ctx: AgentContext, binary: str) -> Launch:
        state = ctx.home / ".openclaw"
        cfg = state / "openclaw.json"
        argv = [binary, "agent", "exec", "--json", "--config", str(cfg), "--cwd", str(ctx.workdir),
                "--state-dir", str(state)]
        if ctx.model:
            argv += ["--model", f"{PROVIDER}/{ctx.model}" if ctx.api is not None else ctx.model]
        argv += ["--", ctx.task.prompt]
        env = {} if ctx.api is not None else passthrough(ctx, API_ENV)
        return Launch(argv=argv, env=env, before=[
            prelude.write_file(cfg, json.dumps(config(ctx), indent=1)),
            prelude.copy_tree(ctx.skills_dir, state / "skills")])

    def _db(self, ctx: AgentContext) -> str:
        return f".openclaw/agents/{self._agent_id(ctx)}/agent/openclaw-agent.sqlite"

    def parse(self, ctx: AgentContext, out: AgentOutput) -> list[TranscriptEvent]:
        events = [TranscriptEvent(type="message", role="user", content=ctx.task.prompt)]
        env = last_object(out.stdout) or {}
        body: list[TranscriptEvent] = []
        with harness_files.sqlite(ctx.home, self._db(ctx)) as conn:
            if conn is not None:
                sid = env.get("sessionId")
                rows = conn.execute("SELECT * FROM transcript_events WHERE session_id = ? ORDER BY seq", (sid,)) \
                    if sid else conn.execute("SELECT * FROM transcript_events ORDER BY created_at, seq")
                first_user = [True]
                for row in rows:
                    try:
                        rec = _decoded(row)
                    except Exception as e:  # a corrupt or oversized event: say so, keep the rest
                        body.append(TranscriptEvent(type="error", content=f"openclaw: transcript event {row['seq']}: {e}"))
                        continue
                    body += _event(rec, ctx, first_user) if rec else []
        if not any(e.type in ("message", "tool_call", "usage") for e in body):
            body.append(TranscriptEvent(type="meta", content="openclaw: no transcript in its database; using stdout"))
            if isinstance(env.get("final"), str) and env["final"].strip():
                body.append(TranscriptEvent(type="message", role="assistant", content=env["final"]))
            body += _usage_from(env.get("usage"), env.get("model") or ctx.model, "run total")
        if not env:
            body.append(TranscriptEvent(type="error", content="openclaw: no JSON envelope on stdout"))
        elif env.get("error") or env.get("ok") is False:
            err = env.get("error")
            body.append(TranscriptEvent(type="error", content=f"openclaw: {env.get('status')}: "
                                        f"{err.get('message') if isinstance(err, dict) else err}"))
        return events + body
