"""Request bodies of the three APIs -> `RequestView` (roles, texts, tools offered, assistant turns)."""
from __future__ import annotations

import json
from typing import Any

from .script import Api, RequestView


def _text(content: Any) -> str:
    """Text of a content field: a string, or a list of parts/blocks of any of the three APIs."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return str(content)
    out = []
    for part in content:
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, dict):
            if isinstance(part.get("text"), str):
                out.append(part["text"])
            elif part.get("type") == "tool_result":
                out.append(_text(part.get("content")))
            elif part.get("type") == "tool_use":
                out.append(json.dumps(part.get("input", {}), sort_keys=True))
    return "\n".join(out)


def _chat(body: dict) -> RequestView:
    system, messages, turns = [], [], 0
    for m in body.get("messages") or []:
        role = m.get("role")
        if role in ("system", "developer"):
            system.append(_text(m.get("content")))
            continue
        text = _text(m.get("content"))
        if role == "assistant":
            turns += 1
            calls = [json.dumps(c.get("function", {}), sort_keys=True) for c in m.get("tool_calls") or []]
            text = "\n".join([text] + calls) if calls else text
        elif role == "function":
            role = "tool"
        messages.append((role if role in ("user", "assistant", "tool") else "user", text))
    tools = {}
    for t in body.get("tools") or []:
        name = (t.get("function") or {}).get("name") or t.get("name")
        if name:
            tools[name] = t.get("type", "function")
    for f in body.get("functions") or []:
        tools[f.get("name", "")] = "function"
    return RequestView(api="chat", system="\n".join(system), messages=messages, tools=tools, assistant_turns=turns)


_ASSISTANT_ITEMS = {"function_call", "custom_tool_call", "local_shell_call", "reasoning", "web_search_call"}
_TOOL_OUTPUTS = {"function_call_output", "custom_tool_call_output", "local_shell_call_output"}


def _responses(body: dict) -> RequestView:
    system = [body["instructions"]] if isinstance(body.get("instructions"), str) else []
    items = body.get("input")
    items = [{"type": "message", "role": "user", "content": items}] if isinstance(items, str) else items or []
    messages, turns, in_assistant = [], 0, False
    for it in items:
        kind = it.get("type", "message")
        role = it.get("role", "assistant" if kind in _ASSISTANT_ITEMS else "tool" if kind in _TOOL_OUTPUTS else "user")
        if role in ("system", "developer"):
            system.append(_text(it.get("content")))
            continue
        if role == "assistant":
            turns += not in_assistant  # consecutive assistant items (reasoning, text, calls) are one turn
            in_assistant = True
            text = _text(it.get("content")) if kind == "message" else json.dumps(
                {k: it.get(k) for k in ("name", "arguments", "input", "action") if k in it}, sort_keys=True)
        else:
            in_assistant = False
            text = _text(it.get("output")) if role == "tool" else _text(it.get("content"))
        messages.append((role if role in ("user", "assistant", "tool") else "user", text))
    tools = {}
    for t in body.get("tools") or []:
        kind = t.get("type", "function")
        tools[t.get("name") or kind] = kind
    return RequestView(api="responses", system="\n".join(system), messages=messages, tools=tools,
                       assistant_turns=turns)


def _anthropic(body: dict) -> RequestView:
    messages, turns = [], 0
    for m in body.get("messages") or []:
        role = m.get("role")
        content = m.get("content")
        if role == "assistant":
            turns += 1
        elif isinstance(content, list) and content and all(
                isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            role = "tool"
        messages.append((role if role in ("user", "assistant") else "tool" if role == "tool" else "user",
                         _text(content)))
    tools = {t.get("name") or t.get("type", ""): t.get("type", "custom") for t in body.get("tools") or []}
    return RequestView(api="anthropic", system=_text(body.get("system")), messages=messages, tools=tools,
                       assistant_turns=turns)


def view(api: Api, body: dict, raw_len: int) -> RequestView:
    v = {"chat": _chat, "responses": _responses, "anthropic": _anthropic}[api](body)
    v.model = str(body.get("model") or "")
    v.stream = bool(body.get("stream"))
    v.body_chars = raw_len
    return v
