"""This project's normalised transcript -> CLAW-Eval's conversation, as its runner writes it into a trace.

The benchmark's trace holds the conversation without the system prompt: the task prompt as a user message, then
per model turn one assistant message (its text, then one `tool_use` block per tool call), then one user message
with the turn's `tool_result` blocks; a simulated user's reply is a user message whose text starts with
`[user_agent]\\n`. Graders read it as `TraceMessage(message=Message(role, content=[blocks]))`.

Here (pure functions over dicts, no benchmark code):
- consecutive `tool_call` events after an assistant message belong to that message (a harness that logs a tool
  call without a text message first gets an assistant message with no text block);
- consecutive `tool_result` events form one user message;
- tool names a harness prefixes for MCP (`mcp__<server>__<tool>`, `<server>__<tool>`, `<server>.<tool>`) are
  given back their task name when the rest is one of the task's tools;
- a call of the simulated-user tool (`ASK_USER_TOOL`, answered `{"reply", "done", "round"}` by `usersim.py`)
  becomes what it stands for upstream: the message as the assistant's text, the reply as a `[user_agent]` user
  message; once the user is done (satisfied, or out of rounds) the conversation is over, as upstream, and later
  events are not part of it;
- usage/meta/error events carry no conversation.
"""
from __future__ import annotations

import json
import re
from typing import Any, Iterable, Optional

ASK_USER_TOOL = "ask_user"
USER_AGENT_PREFIX = "[user_agent]\n"
_PREFIXED = re.compile(r"^(?:mcp__[^_].*?__|[A-Za-z0-9_-]+?__|[A-Za-z0-9_-]+\.)(?P<tool>.+)$")


def task_tool_name(name: str, known: set[str]) -> str:
    if name in known or not known:
        return name
    m = _PREFIXED.match(name)
    if m and m.group("tool") in known:
        return m.group("tool")
    for tool in known:  # a prefix the pattern did not foresee
        if name.endswith("__" + tool) or name.endswith("." + tool):
            return tool
    return name


def _text(v: Any) -> str:
    return v if isinstance(v, str) else ("" if v is None else str(v))


def _msg(role: str, blocks: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "message", "trace_id": "", "message": {"role": role, "content": blocks}}


def to_messages(events: Iterable[dict[str, Any]], tools: Iterable[str] = ()) -> list[dict[str, Any]]:
    """TraceMessage dicts (validate each with `claw_eval.models.trace.TraceMessage`)."""
    known = set(tools)
    out: list[dict[str, Any]] = []
    assistant: Optional[dict[str, Any]] = None  # the open assistant message tool calls attach to
    results: Optional[dict[str, Any]] = None  # the open user message of tool results
    asks: dict[str, str] = {}  # call_id of an ask_user call -> its question

    def close_results() -> None:
        nonlocal results
        if results is not None:
            out.append(results)
            results = None

    for ev in events:
        kind, role = ev.get("type"), ev.get("role")
        if kind == "message" and role in ("user", "assistant", "system"):
            close_results()
            if role == "system":
                assistant = None
                continue
            text = _text(ev.get("content"))
            blocks = [{"type": "text", "text": text}] if text else []
            m = _msg(role, blocks)
            out.append(m)
            assistant = m if role == "assistant" else None
        elif kind == "tool_call":
            name = task_tool_name(_text(ev.get("tool")), known | {ASK_USER_TOOL})
            cid = _text(ev.get("call_id")) or f"call-{len(out)}"
            args = ev.get("arguments") if isinstance(ev.get("arguments"), dict) else {}
            if name == ASK_USER_TOOL and ASK_USER_TOOL not in known:
                close_results()
                asks[cid] = _text(args.get("message") or args.get("question"))
                if asks[cid]:  # what the user reads is the assistant's turn (an empty open one takes it)
                    block = {"type": "text", "text": asks[cid]}
                    if assistant is not None and not assistant["message"]["content"]:
                        assistant["message"]["content"].append(block)
                    else:
                        out.append(_msg("assistant", [block]))
                assistant = None
                continue
            if results is not None or assistant is None:
                close_results()
                assistant = _msg("assistant", [])
                out.append(assistant)
            assistant["message"]["content"].append({"type": "tool_use", "id": cid, "name": name, "input": args})
        elif kind == "tool_result":
            cid = _text(ev.get("call_id"))
            if cid in asks:
                close_results()
                assistant = None
                answer = _user_answer(_text(ev.get("content")))
                if answer is None:  # the tool failed: no round took place
                    continue
                reply, done = answer
                if reply:
                    out.append(_msg("user", [{"type": "text", "text": USER_AGENT_PREFIX + reply}]))
                if done:
                    break
                continue
            if results is None:
                results = _msg("user", [])
            results["message"]["content"].append({
                "type": "tool_result", "tool_use_id": cid or f"call-{len(out)}",
                "content": [{"type": "text", "text": _text(ev.get("content"))}],
                "is_error": bool(ev.get("is_error"))})
            assistant = None
    close_results()
    return out


def _user_answer(content: str) -> Optional[tuple[str, bool]]:
    """(reply, done) of an ask_user result, or None when the call failed."""
    try:
        v = json.loads(content)
    except ValueError:
        return None
    if not isinstance(v, dict) or "reply" not in v:
        return None
    return _text(v.get("reply")), bool(v.get("done"))


def final_assistant_text(messages: list[dict[str, Any]]) -> str:
    for m in reversed(messages):
        if m["message"]["role"] == "assistant":
            return "\n".join(b["text"] for b in m["message"]["content"] if b.get("type") == "text")
    return ""
