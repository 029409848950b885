"""Anthropic Claude Code (npm @anthropic-ai/claude-code) in print mode.

    claude -p --output-format stream-json --verbose [--model M] --permission-mode bypassPermissions
           [--max-turns N] [--allowedTools a,b] [--disallowedTools c] -- PROMPT

stdout is JSON lines: `system/init` (session_id, model, tools), `assistant` (message.content blocks text /
thinking / tool_use{id,name,input}, message.usage), `user` (tool_result{tool_use_id,content,is_error}), and one
final `result` (subtype success | error_*, is_error, result, num_turns, total_cost_usd, usage{input_tokens,
output_tokens, cache_read_input_tokens, cache_creation_input_tokens}, modelUsage{model: {costUSD, costBasis}}).
Claude Code also keeps the session in ~/.claude/projects/<cwd>/<session>.jsonl; stdout carries the same
messages, so it is what is parsed.

Model API: ANTHROPIC_BASE_URL (without /v1) and ANTHROPIC_API_KEY; the small/fast model Claude Code uses for
side requests is set to the run's model too, so an endpoint serving one model answers them.
Permission mode bypassPermissions: the trial sandbox is the boundary and nobody answers prompts. Claude Code
refuses it as root unless IS_SANDBOX=1, which is set (it matters only where the agent runs as root).
Cost: the reported total_cost_usd, except when Claude Code priced an unknown model (costBasis "unknown"): then
the project's price table decides (0 with a note when the model has no price).
Skills: ~/.claude/skills/<name>/SKILL.md. Bootstrap: ~/.claude and ~/.claude.json, all under HOME; nothing is
written into the workspace.
"""
from __future__ import annotations

from typing import Any

from ..base import AgentContext, AgentOutput
from ..harness import CliFlag, HarnessAgent, Launch
from ..transcript import TranscriptEvent
from . import prelude
from .accounting import as_int, usage_events
from .environment import passthrough
from .jsonl import records, text_of

API_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL")
TOOL_KINDS = {"Bash": "exec", "BashOutput": "exec", "KillShell": "exec", "KillBash": "exec", "Read": "read",
              "Write": "write", "Edit": "write", "MultiEdit": "write", "NotebookEdit": "write", "Glob": "search",
              "Grep": "search", "LS": "search", "WebFetch": "web", "WebSearch": "web", "TodoWrite": "plan",
              "Task": "agent", "Agent": "agent", "Skill": "read"}


def _usage_of(u: dict[str, Any]) -> tuple[int, int, int]:
    # Cache writes are billed input; the normalised Usage has no field for them, so they count as input.
    return (as_int(u.get("input_tokens")) + as_int(u.get("cache_creation_input_tokens")),
            as_int(u.get("output_tokens")), as_int(u.get("cache_read_input_tokens")))


def _reported_cost(rec: dict[str, Any]) -> float | None:
    cost = rec.get("total_cost_usd", rec.get("cost_usd"))
    models = rec.get("modelUsage") if isinstance(rec.get("modelUsage"), dict) else {}
    if any(isinstance(m, dict) and m.get("costBasis") == "unknown" for m in models.values()):
        return None  # Claude Code guessed a price for a model it does not know
    return float(cost) if isinstance(cost, (int, float)) else None


class ClaudeCodeAgent(HarnessAgent):
    name = "claude-code"
    package = "claude-code"
    credential_env = API_ENV
    tool_kinds = TOOL_KINDS
    apis = ("anthropic",)
    flags = (CliFlag(arg="max_turns", flag="--max-turns", task_default="max_turns"),
             CliFlag(arg="permission_mode", flag="--permission-mode", default="bypassPermissions"),
             CliFlag(arg="allowed_tools", flag="--allowedTools", kind="csv"),
             CliFlag(arg="disallowed_tools", flag="--disallowedTools", kind="csv"))
    fixed_env = {"DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
                 "IS_SANDBOX": "1"}
    transcript = "stdout (--output-format stream-json); also ~/.claude/projects/<cwd>/<session>.jsonl"
    bootstrap = "~/.claude/, ~/.claude.json (HOME); nothing in the workspace"

    def launch(self, ctx: AgentContext, binary: str) -> Launch:
        argv = [binary, "-p", "--output-format", "stream-json", "--verbose"]
        if ctx.model:
            argv += ["--model", ctx.model]
        argv += ["--", ctx.task.prompt]  # after "--": a prompt starting with "-" (a markdown list) is not an option
        if ctx.api is not None:
            env = {"ANTHROPIC_BASE_URL": ctx.api.anthropic_base, "ANTHROPIC_API_KEY": ctx.api.key,
                   "ANTHROPIC_SMALL_FAST_MODEL": str(ctx.model), "ANTHROPIC_DEFAULT_HAIKU_MODEL": str(ctx.model)}
        else:
            env = passthrough(ctx, API_ENV)
        return Launch(argv=argv, env=env,
                      before=[prelude.copy_tree(ctx.skills_dir, ctx.home / ".claude" / "skills")])

    def parse(self, ctx: AgentContext, out: AgentOutput) -> list[TranscriptEvent]:
        events = [TranscriptEvent(type="message", role="user", content=ctx.task.prompt)]
        model = ctx.model
        tool_names: dict[str, str] = {}
        message_usage: dict[str, tuple[int, int, int]] = {}  # message id -> usage (fallback without `result`)
        saw_result = False
        for rec in records(out.stdout, "claude-code stdout"):
            if isinstance(rec, TranscriptEvent):
                events.append(rec)
                continue
            kind = rec.get("type")
            msg = rec.get("message") if isinstance(rec.get("message"), dict) else {}
            if kind == "system" and rec.get("subtype") == "init":
                model = rec.get("model") or model
                events.append(TranscriptEvent(type="meta", raw=rec,
                                              content=f"session {rec.get('session_id', '')} model {rec.get('model', '')}"))
            elif kind == "assistant":
                if isinstance(msg.get("usage"), dict):
                    message_usage[str(msg.get("id", len(message_usage)))] = _usage_of(msg["usage"])
                for block in msg.get("content") or []:
                    if not isinstance(block, dict):
                        continue
                    if block.get("type") == "text" and block.get("text"):
                        events.append(TranscriptEvent(type="message", role="assistant", content=block["text"], raw=rec))
                    elif block.get("type") == "tool_use":
                        call_id = str(block.get("id", ""))
                        tool_names[call_id] = str(block.get("name", ""))
                        args = block.get("input") if isinstance(block.get("input"), dict) else {}
                        events.append(TranscriptEvent(type="tool_call", role="assistant", tool=block.get("name"),
                                                      call_id=call_id, arguments=args, raw=rec))
            elif kind == "user":
                for block in msg.get("content") or []:
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        call_id = str(block.get("tool_use_id", ""))
                        events.append(TranscriptEvent(
                            type="tool_result", role="tool", tool=tool_names.get(call_id), call_id=call_id,
                            content=text_of(block.get("content")),
                            arguments={"is_error": True} if block.get("is_error") else None, raw=rec))
            elif kind == "result":
                saw_result = True
                inp, outp, cached = _usage_of(rec.get("usage") or {})
                events += usage_events(model, input_tokens=inp, output_tokens=outp, cache_read_tokens=cached,
                                       cost_usd=_reported_cost(rec), raw=rec, label=str(rec.get("subtype", "")))
                if rec.get("is_error") or rec.get("subtype") not in (None, "success"):
                    events.append(TranscriptEvent(
                        type="error", raw=rec, content=f"claude-code: {rec.get('subtype')}: {rec.get('result', '')}".strip()))
        if not saw_result:
            inp, outp, cached = (sum(u[i] for u in message_usage.values()) for i in range(3))
            if inp or outp or cached:
                events += usage_events(model, input_tokens=inp, output_tokens=outp, cache_read_tokens=cached,
                                       label="summed from assistant messages (no result event)")
            events.append(TranscriptEvent(type="error", content="claude-code: output ended without a result event"))
        return events
