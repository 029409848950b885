"""Nous Research Hermes Agent (PyPI hermes-agent), single-query mode.

    hermes chat --query=PROMPT -Q --yolo --source tool [-m MODEL] [--provider custom] [--max-turns N] [-t TOOLSETS]

`-Q` prints only the final answer and `session_id: ...`. The transcript, tokens and cost are in Hermes' SQLite
database $HERMES_HOME/state.db: table `sessions` (id, model, input_tokens, output_tokens, cache_read_tokens,
cache_write_tokens, estimated_cost_usd, actual_cost_usd, cost_status) and table `messages` (role user /
assistant / tool, content, tool_calls JSON [{id, function{name, arguments}}], tool_call_id, tool_name).

Model API: `--provider custom` and $HERMES_HOME/config.yaml `model: {provider: custom, base_url: .../v1,
api_key, default: MODEL}` (Hermes sends a custom endpoint only a key from its config; CUSTOM_BASE_URL is set
too); Chat Completions. Without spec.agent.api the provider keys in the environment are passed through.
No downloads at start: `security: {allow_lazy_installs: false, tirith_enabled: false}` in config.yaml and
HERMES_DISABLE_LAZY_INSTALLS=1, TIRITH_ENABLED=false (no pip installs of optional features into its venv, no
download of the tirith command scanner). args.config is deep-merged over config.yaml. --yolo: no approval
prompts nobody answers.
Skills: $HERMES_HOME/skills. Bootstrap: HERMES_HOME = ~/.hermes (SOUL.md, state.db, logs, caches); nothing is
written into the workspace.
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
from .jsonl import arguments_of
from .openclaw import merge
from .. import harness_files

API_ENV = ("OPENROUTER_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "NOUS_API_KEY")
STATE_DB = ".hermes/state.db"
TOOL_KINDS = {"terminal": "exec", "process": "exec", "execute_code": "exec", "read_file": "read",
              "write_file": "write", "patch": "write", "search_files": "search", "web_search": "web",
              "web_extract": "web", "web_crawl": "web", "browser_navigate": "browser", "browser_click": "browser",
              "browser_type": "browser", "browser_snapshot": "browser", "todo": "plan", "delegate_task": "agent",
              "skill_view": "read", "skills_list": "read", "vision_analyze": "read"}


def _session(conn, stdout: str) -> Optional[dict[str, Any]]:
    wanted = None
    for line in stdout.splitlines():
        if line.strip().startswith("session_id:"):
            wanted = line.split(":", 1)[1].strip()
    rows = [dict(r) for r in conn.execute("SELECT * FROM sessions ORDER BY started_at")]
    for r in rows:
        if r.get("id") == wanted:
            return r
    return rows[-1] if rows else None


def _cost(s: dict[str, Any]) -> Optional[float]:
    for key in ("actual_cost_usd", "estimated_cost_usd"):
        if isinstance(s.get(key), (int, float)) and (s.get("cost_status") not in (None, "unknown") or s[key] > 0):
            return float(s[key])
    return None


def _message_events(m: dict[str, Any], names: dict[str, str]) -> list[TranscriptEvent]:
    role, content = m.get("role"), m.get("content") or ""
    if role == "assistant":
        events = [TranscriptEvent(type="message", role="assistant", content=content, ts=m.get("timestamp"))] \
            if content.strip() else []
        try:
            calls = json.loads(m.get("tool_calls") or "[]")
        except ValueError:
            calls = []
        for c in calls if isinstance(calls, list) else []:
            fn = c.get("function") if isinstance(c, dict) and isinstance(c.get("function"), dict) else {}
            call_id = str(c.get("id") or c.get("call_id") or "")
            names[call_id] = str(fn.get("name", ""))
            events.append(TranscriptEvent(type="tool_call", role="assistant", tool=fn.get("name"), call_id=call_id,
                                          arguments=arguments_of(fn.get("arguments")), ts=m.get("timestamp")))
        return events
    if role == "tool":
        call_id = str(m.get("tool_call_id") or "")
        return [TranscriptEvent(type="tool_result", role="tool", tool=m.get("tool_name") or names.get(call_id),
                                call_id=call_id, content=content, ts=m.get("timestamp"))]
    if role == "user":
        return [TranscriptEvent(type="message", role="user", content=content, ts=m.get("timestamp"))]
    return []


class HermesAgent(HarnessAgent):
    name = "hermes"
    package = "hermes"
    credential_env = API_ENV
    tool_kinds = TOOL_KINDS
    apis = ("chat",)
    flags = (CliFlag(arg="max_turns", flag="--max-turns", task_default="max_turns"),
             CliFlag(arg="toolsets", flag="--toolsets", kind="csv"))
    fixed_env = {"HERMES_DISABLE_LAZY_INSTALLS": "1", "TIRITH_ENABLED": "false"}
    transcript = "$HERMES_HOME/state.db (SQLite: sessions, messages)"
    bootstrap = "~/.hermes/ (HERMES_HOME: SOUL.md, state.db, logs); nothing in the workspace"

    def launch(self, ctx: AgentContext, binary: str) -> Launch:
        hermes_home = ctx.home / ".hermes"
        argv = [binary, "chat", f"--query={ctx.task.prompt}", "-Q", "--yolo", "--source", "tool"]
        if ctx.model:
            argv += ["-m", ctx.model]
        env = {"HERMES_HOME": str(hermes_home)}
        cfg: dict[str, Any] = {"security": {"allow_lazy_installs": False, "tirith_enabled": False}}
        if ctx.api is not None:
            argv += ["--provider", "custom"]
            env["CUSTOM_BASE_URL"] = ctx.api.openai_base
            cfg["model"] = {"provider": "custom", "base_url": ctx.api.openai_base, "api_key": ctx.api.key,
                            "default": ctx.model}
        else:
            if ctx.args.get("provider"):
                argv += ["--provider", str(ctx.args["provider"])]
            env.update(passthrough(ctx, API_ENV))
        extra = ctx.args.get("config") or {}
        if not isinstance(extra, dict):
            raise ValueError("hermes agent: args.config must be a mapping (merged into config.yaml)")
        return Launch(argv=argv, env=env, before=[
            prelude.write_file(hermes_home / "config.yaml", json.dumps(merge(cfg, extra), indent=1)),
            prelude.copy_tree(ctx.skills_dir, hermes_home / "skills")])

    def parse(self, ctx: AgentContext, out: AgentOutput) -> list[TranscriptEvent]:
        events = [TranscriptEvent(type="message", role="user", content=ctx.task.prompt)]
        with harness_files.sqlite(ctx.home, STATE_DB) as conn:
            session = _session(conn, out.stdout) if conn is not None else None
            if session is None:
                events.append(TranscriptEvent(type="error", content=f"hermes: no session in ~/{STATE_DB}"))
                answer = "\n".join(l for l in out.stdout.splitlines() if not l.startswith("session_id:")).strip()
                if answer:
                    events.append(TranscriptEvent(type="message", role="assistant", content=answer))
                return events
            rows = [dict(r) for r in conn.execute(
                "SELECT * FROM messages WHERE session_id = ? ORDER BY id", (session["id"],))]
        events.append(TranscriptEvent(type="meta", content=f"session {session['id']} model {session.get('model')}"))
        names: dict[str, str] = {}
        first_user = True
        for m in rows:
            if m.get("role") == "user" and first_user:
                first_user = False  # the task prompt, already the first event
                continue
            events += _message_events(m, names)
        events += usage_events(session.get("model") or ctx.model,
                               input_tokens=as_int(session.get("input_tokens")) + as_int(session.get("cache_write_tokens")),
                               output_tokens=as_int(session.get("output_tokens")),
                               cache_read_tokens=as_int(session.get("cache_read_tokens")), cost_usd=_cost(session),
                               label="hermes session")
        if session.get("end_reason") not in (None, "", "completed", "complete", "stop"):
            events.append(TranscriptEvent(type="meta", content=f"hermes: session ended: {session['end_reason']}"))
        return events
