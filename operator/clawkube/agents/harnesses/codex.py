"""OpenAI Codex CLI (npm @openai/codex) in exec mode.

    codex exec --json --skip-git-repo-check --cd WORKDIR --sandbox danger-full-access [--model M]
               [-c model_provider=clawkube -c model_providers.clawkube={...}] -- PROMPT

stdout is JSON lines (codex-rs exec events): thread.started{thread_id}, turn.started, item.started /
item.completed{item{id, type, ...}} with item types agent_message{text}, reasoning{text},
command_execution{command, aggregated_output, exit_code, status}, file_change{changes, status},
mcp_tool_call{server, tool, arguments, result, error}, web_search{query}, todo_list, error{message} (a
warning: the run goes on); turn.completed{usage{input_tokens, cached_input_tokens, output_tokens}},
turn.failed{error}, error{message}. Codex also writes ~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl; stdout
carries what is parsed. Codex reports no cost: it is priced from tokens. `input_tokens` includes the cached
ones (OpenAI's convention).

Model API: Codex ignores OPENAI_BASE_URL; the endpoint becomes a custom model provider given with `-c`
(base_url = .../v1, env_key = CLAWKUBE_MODEL_API_KEY, wire_api = responses; args.wire_api overrides).
CODEX_HOME (~/.codex) must exist before Codex starts: the wrapper creates it.
--sandbox danger-full-access: the trial sandbox is the boundary, and Codex's own landlock sandbox may not start
inside it (args.sandbox overrides). Skills: ~/.agents/skills (Codex's user skill scope).
Bootstrap: ~/.codex (sessions, bundled system skills); nothing is written into the workspace.
"""
from __future__ import annotations

import json
from typing import Any

from ..base import AgentContext, AgentOutput
from ..harness import CliFlag, HarnessAgent, Launch
from ..transcript import TranscriptEvent
from . import prelude
from .accounting import as_int, usage_events
from .environment import passthrough
from .jsonl import records, text_of

API_ENV = ("OPENAI_API_KEY", "CODEX_API_KEY")
KEY_ENV = "CLAWKUBE_MODEL_API_KEY"
PROVIDER = "clawkube"
TOOL_KINDS = {"shell": "exec", "exec_command": "exec", "write_stdin": "exec", "local_shell": "exec",
              "apply_patch": "write", "web_search": "web", "view_image": "read", "update_plan": "plan"}


def _toml(v: str) -> str:
    return json.dumps(v)  # a JSON string is a valid TOML basic string


def provider_overrides(ctx: AgentContext) -> list[str]:
    """`-c` options that make the run's endpoint Codex's model provider."""
    assert ctx.api is not None
    wire = str(ctx.args.get("wire_api", "responses"))
    table = (f"{{name={_toml(PROVIDER)}, base_url={_toml(ctx.api.openai_base)}, env_key={_toml(KEY_ENV)}, "
             f"wire_api={_toml(wire)}}}")
    return ["-c", f"model_provider={_toml(PROVIDER)}", "-c", f"model_providers.{PROVIDER}={table}"]


def _item_events(item: dict[str, Any], started: set[str], rec: dict[str, Any]) -> list[TranscriptEvent]:
    """Events for a completed item (the tool_call is skipped when item.started already produced it)."""
    kind, item_id = item.get("type"), str(item.get("id", ""))
    if kind == "agent_message":
        return [TranscriptEvent(type="message", role="assistant", content=str(item.get("text", "")), raw=rec)]
    if kind == "error":  # Codex's non-fatal notices (e.g. unknown model metadata); fatal ones are turn.failed
        return [TranscriptEvent(type="meta", content=f"codex: {item.get('message', '')}", raw=rec)]
    call = _call_event(item, rec)
    if call is None:
        return []
    events = [] if item_id in started else [call]
    if kind == "command_execution":
        result = TranscriptEvent(type="tool_result", role="tool", tool="shell", call_id=item_id,
                                 content=str(item.get("aggregated_output", "")),
                                 arguments={"exit_code": item.get("exit_code"), "status": item.get("status")}, raw=rec)
    elif kind == "file_change":
        result = TranscriptEvent(type="tool_result", role="tool", tool="apply_patch", call_id=item_id,
                                 content=str(item.get("status", "")), raw=rec)
    elif kind == "mcp_tool_call":
        res, err = item.get("result"), item.get("error")
        content = (err.get("message", "") if isinstance(err, dict)
                   else text_of((res or {}).get("content") if isinstance(res, dict) else None))
        result = TranscriptEvent(type="tool_result", role="tool", tool=call.tool, call_id=item_id, content=content,
                                 arguments={"is_error": True} if err else None, raw=rec)
    else:  # web_search
        result = TranscriptEvent(type="tool_result", role="tool", tool="web_search", call_id=item_id, content="",
                                 raw=rec)
    return events + [result]


def _call_event(item: dict[str, Any], rec: dict[str, Any]) -> TranscriptEvent | None:
    kind, item_id = item.get("type"), str(item.get("id", ""))
    if kind == "command_execution":
        tool, args = "shell", {"command": item.get("command", "")}
    elif kind == "file_change":
        tool, args = "apply_patch", {"changes": item.get("changes", [])}
    elif kind == "mcp_tool_call":
        tool = f"mcp__{item.get('server', '')}__{item.get('tool', '')}"
        args = item.get("arguments") if isinstance(item.get("arguments"), dict) else {}
    elif kind == "web_search":
        tool, args = "web_search", {"query": item.get("query", "")}
    else:
        return None
    return TranscriptEvent(type="tool_call", role="assistant", tool=tool, call_id=item_id, arguments=args, raw=rec)


class CodexAgent(HarnessAgent):
    name = "codex"
    package = "codex"
    credential_env = API_ENV
    tool_kinds = TOOL_KINDS
    apis = ("responses",)
    flags = (CliFlag(arg="sandbox", flag="--sandbox", default="danger-full-access"),)
    transcript = "stdout (exec --json); also ~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl"
    bootstrap = "~/.codex/ (CODEX_HOME: sessions, bundled skills); nothing in the workspace"

    def launch(self, ctx: AgentContext, binary: str) -> Launch:
        codex_home = ctx.home / ".codex"
        argv = [binary, "exec", "--json", "--skip-git-repo-check", "--cd", str(ctx.workdir)]
        if ctx.model:
            argv += ["--model", ctx.model]
        if ctx.args.get("reasoning_effort"):
            argv += ["-c", f"model_reasoning_effort={_toml(str(ctx.args['reasoning_effort']))}"]
        env = {"CODEX_HOME": str(codex_home)}
        if ctx.api is not None:
            argv += provider_overrides(ctx)
            env[KEY_ENV] = ctx.api.key
        else:
            env.update(passthrough(ctx, API_ENV))
        argv += ["--", ctx.task.prompt]  # a prompt starting with "-" stays the prompt
        return Launch(argv=argv, env=env, before=[
            f"mkdir -p {prelude.quote(codex_home)}",
            prelude.copy_tree(ctx.skills_dir, ctx.home / ".agents" / "skills")])

    def parse(self, ctx: AgentContext, out: AgentOutput) -> list[TranscriptEvent]:
        events = [TranscriptEvent(type="message", role="user", content=ctx.task.prompt)]
        started: set[str] = set()
        completed_turn = False
        for rec in records(out.stdout, "codex stdout"):
            if isinstance(rec, TranscriptEvent):
                events.append(rec)
                continue
            kind = rec.get("type")
            item = rec.get("item") if isinstance(rec.get("item"), dict) else None
            if kind == "thread.started":
                events.append(TranscriptEvent(type="meta", content=f"thread {rec.get('thread_id', '')}", raw=rec))
            elif kind == "item.started" and item is not None:
                call = _call_event(item, rec)
                if call is not None:
                    started.add(str(item.get("id", "")))
                    events.append(call)
            elif kind == "item.completed" and item is not None:
                events += _item_events(item, started, rec)
            elif kind == "turn.completed":
                completed_turn = True
                u = rec.get("usage") or {}
                cached = as_int(u.get("cached_input_tokens"))
                events += usage_events(ctx.model, input_tokens=max(as_int(u.get("input_tokens")) - cached, 0),
                                       output_tokens=as_int(u.get("output_tokens")), cache_read_tokens=cached,
                                       raw=rec)
            elif kind == "turn.failed":
                err = rec.get("error") if isinstance(rec.get("error"), dict) else {}
                events.append(TranscriptEvent(type="error", content=f"codex: turn failed: {err.get('message', '')}",
                                              raw=rec))
            elif kind == "error":
                events.append(TranscriptEvent(type="error", content=f"codex: {rec.get('message', '')}", raw=rec))
        if not completed_turn and not any(e.type == "error" for e in events):
            events.append(TranscriptEvent(type="error", content="codex: output ended without turn.completed"))
        return events
