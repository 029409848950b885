"""HKUDS nanobot (PyPI nanobot-ai), one message from the command line.

    nanobot agent --message=PROMPT -s cli:clawkube --no-markdown -c ~/.nanobot/config.json -w WORKDIR

Configuration is a file the wrapper writes (~/.nanobot/config.json): agents.defaults {workspace = the task
workdir (nanobot's tools resolve paths and run commands there), model, provider, maxToolIterations}; with
spec.agent.api the provider is `custom` {apiBase = .../v1, apiKey} (Chat Completions), else a provider per API
key found in the environment. args.config is deep-merged over it.
Transcript: ~/.nanobot/sessions/<workspace hash>/<base64 session key>.jsonl: a metadata line {"_type":
"metadata", "key", "metadata": {"_last_usage": {input_tokens (cache reads included), output_tokens,
cache_read_tokens, cache_write_tokens}}}, then OpenAI-style messages (user; assistant {content, tool_calls
[{id, function{name, arguments}}]}; tool {tool_call_id, name, content}). nanobot reports no cost: it is priced.
Bootstrap: nanobot seeds its workspace (the task workdir) with AGENTS.md, SOUL.md, USER.md, HEARTBEAT.md,
memory/, prompts/, skills/, .git, .gitignore, .nanobot/ and cron/. The agent sees them during the run (that is
how nanobot works); afterwards the wrapper moves every one that was not in the workspace before the run to
~/.nanobot/bootstrap/, so the snapshot graders see holds only the task's files and the agent's work. The
task's skills are copied to <workdir>/skills when the task has no skills/ folder of its own (and moved out too).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

from ..base import AgentContext, AgentOutput
from ..harness import HarnessAgent, Launch
from ..transcript import TranscriptEvent
from . import prelude
from .accounting import as_int, usage_events
from .jsonl import arguments_of, records, text_of
from .openclaw import merge
from .. import harness_files

SESSION_KEY = "cli:clawkube"
PROVIDER_KEYS = {"ANTHROPIC_API_KEY": "anthropic", "OPENAI_API_KEY": "openai", "OPENROUTER_API_KEY": "openrouter",
                 "DEEPSEEK_API_KEY": "deepseek", "GEMINI_API_KEY": "gemini"}
BOOTSTRAP = ("AGENTS.md", "SOUL.md", "USER.md", "HEARTBEAT.md", "TOOLS.md", "IDENTITY.md", "memory", "prompts",
             "skills", ".git", ".gitignore", ".nanobot", "cron", "sessions")
TOOL_KINDS = {"exec": "exec", "exec_session": "exec", "list_exec_sessions": "exec", "run_cli_app": "exec",
              "read_file": "read", "write_file": "write", "edit_file": "write", "apply_patch": "write",
              "list_dir": "search", "find_files": "search", "grep": "search", "web_fetch": "web",
              "web_search": "web", "spawn": "agent", "create_goal": "plan", "update_goal": "plan"}


def config(ctx: AgentContext) -> dict[str, Any]:
    defaults: dict[str, Any] = {"workspace": str(ctx.workdir)}
    if ctx.model:
        defaults["model"] = ctx.model
    max_turns = ctx.args.get("max_turns", ctx.task.max_turns)
    if max_turns:
        defaults["maxToolIterations"] = int(max_turns)
    providers: dict[str, Any] = {}
    if ctx.api is not None:
        defaults["provider"] = "custom"
        providers["custom"] = {"apiKey": ctx.api.key, "apiBase": ctx.api.openai_base}
    else:
        for env, provider in PROVIDER_KEYS.items():
            if ctx.env.get(env):
                providers[provider] = {"apiKey": ctx.env[env]}
    extra = ctx.args.get("config") or {}
    if not isinstance(extra, dict):
        raise ValueError("nanobot agent: args.config must be a mapping (merged into config.json)")
    return merge({"agents": {"defaults": defaults}, "providers": providers}, extra)


def _bootstrap_steps(workdir: Path, state: Path) -> tuple[str, str]:
    ws, listing, dest = prelude.quote(workdir), prelude.quote(state / ".clawkube-preexisting"), prelude.quote(
        state / "bootstrap")
    names = " ".join(BOOTSTRAP)
    before = (f"mkdir -p {prelude.quote(state)} && : > {listing} && for p in {names}; do "
              f"if [ -e {ws}/$p ] || [ -L {ws}/$p ]; then echo \"$p\" >> {listing}; fi; done")
    after = (f"mkdir -p {dest} && for p in {names}; do if ! grep -qxF \"$p\" {listing} && "
             f"{{ [ -e {ws}/$p ] || [ -L {ws}/$p ]; }}; then rm -rf {dest}/$p; mv {ws}/$p {dest}/; fi; done")
    return before, after


def _session_text(ctx: AgentContext) -> Optional[str]:
    for rel in harness_files.glob(ctx.home, ".nanobot/sessions/*/*.jsonl"):
        text = harness_files.read_text(ctx.home, rel) or ""
        first = text.split("\n", 1)[0]
        try:
            if json.loads(first).get("key") == SESSION_KEY:
                return text
        except (ValueError, AttributeError):
            continue
    return None


def _message_events(msg: dict[str, Any], names: dict[str, str]) -> list[TranscriptEvent]:
    role = msg.get("role")
    events: list[TranscriptEvent] = []
    if role == "assistant":
        text = text_of(msg.get("content"))
        if text.strip():
            events.append(TranscriptEvent(type="message", role="assistant", content=text, raw=msg))
        for call in msg.get("tool_calls") or []:
            fn = call.get("function") if isinstance(call, dict) and isinstance(call.get("function"), dict) else {}
            call_id = str(call.get("id", ""))
            names[call_id] = str(fn.get("name", ""))
            events.append(TranscriptEvent(type="tool_call", role="assistant", tool=fn.get("name"), call_id=call_id,
                                          arguments=arguments_of(fn.get("arguments")), raw=msg))
    elif role == "tool":
        call_id = str(msg.get("tool_call_id", ""))
        events.append(TranscriptEvent(type="tool_result", role="tool", tool=msg.get("name") or names.get(call_id),
                                      call_id=call_id, content=text_of(msg.get("content")), raw=msg))
    elif role == "user":
        events.append(TranscriptEvent(type="message", role="user", content=text_of(msg.get("content")), raw=msg))
    return events


class NanobotAgent(HarnessAgent):
    name = "nanobot"
    package = "nanobot"
    credential_env = tuple(PROVIDER_KEYS)
    tool_kinds = TOOL_KINDS
    apis = ("chat",)
    transcript = "~/.nanobot/sessions/<workspace hash>/<base64 key>.jsonl (usage in its metadata line)"
    bootstrap = ("AGENTS.md, SOUL.md, USER.md, HEARTBEAT.md, memory/, prompts/, skills/, .git, .gitignore, .nanobot/ "
                 "in the workspace during the run; moved to ~/.nanobot/bootstrap/ after it")

    def launch(self, ctx: AgentContext, binary: str) -> Launch:
        state = ctx.home / ".nanobot"
        cfg = state / "config.json"
        argv = [binary, "agent", f"--message={ctx.task.prompt}", "-s", SESSION_KEY, "--no-markdown",
                "-c", str(cfg), "-w", str(ctx.workdir)]
        record, restore = _bootstrap_steps(ctx.workdir, state)
        skills = prelude.quote(ctx.workdir / "skills")
        copy_skills = f"if [ ! -e {skills} ] && [ ! -L {skills} ]; then {prelude.copy_tree(ctx.skills_dir, ctx.workdir / 'skills')}; fi"
        return Launch(argv=argv, before=[record, prelude.write_file(cfg, json.dumps(config(ctx), indent=1)),
                                         copy_skills], after=[restore])

    def parse(self, ctx: AgentContext, out: AgentOutput) -> list[TranscriptEvent]:
        events = [TranscriptEvent(type="message", role="user", content=ctx.task.prompt)]
        text = _session_text(ctx)
        if text is None:
            events.append(TranscriptEvent(type="error", content="nanobot: no session file; reply taken from stdout"))
            reply = "\n".join(l for l in out.stdout.strip().splitlines()
                              if l.strip() and not l.startswith(("Using config", "  Created", "🐈"))).strip()
            if reply:
                events.append(TranscriptEvent(type="message", role="assistant", content=reply))
            return events
        names: dict[str, str] = {}
        first_user, usage = True, None
        for rec in records(text, "nanobot session"):
            if isinstance(rec, TranscriptEvent):
                events.append(rec)
            elif rec.get("_type") == "metadata":
                meta = rec.get("metadata") if isinstance(rec.get("metadata"), dict) else {}
                usage = meta.get("_last_usage") if isinstance(meta.get("_last_usage"), dict) else None
                events.append(TranscriptEvent(type="meta", content=f"session {rec.get('key', '')}"))
            elif rec.get("role") == "user" and first_user:
                first_user = False  # the task prompt, already the first event
            else:
                events += _message_events(rec, names)
        if usage is None:
            events.append(TranscriptEvent(type="meta", content="nanobot recorded no token usage: tokens and cost are 0"))
        else:
            cached = as_int(usage.get("cache_read_tokens"))
            events += usage_events(ctx.model, input_tokens=max(as_int(usage.get("input_tokens")) - cached, 0)
                                   + as_int(usage.get("cache_write_tokens")),
                                   output_tokens=as_int(usage.get("output_tokens")), cache_read_tokens=cached,
                                   label="nanobot session")
        return events
