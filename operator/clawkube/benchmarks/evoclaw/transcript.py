"""The transcript as EvoClawBench's graders and judge read it: OpenClaw's session format.

EvoClawBench's runner hands graders the agent runtime's own session records; with OpenClaw (the runtime its task
graders are written against, e.g. the sanity task's) that is one JSON object per line:
    {"type": "message", "message": {"role": "user", "content": [{"type": "text", "text": ...}]}}
    {"type": "message", "message": {"role": "assistant", "content": [{"type": "text", "text": ...},
                                    {"type": "toolCall", "id": ..., "name": ..., "arguments": {...}}],
                                    "usage": {"input", "output", "cacheRead", "cacheWrite", "totalTokens",
                                              "cost": {"total"}}}}
    {"type": "message", "message": {"role": "toolResult", "toolCallId": ..., "toolName": ...,
                                    "content": [{"type": "text", "text": ...}], "isError": bool}}
This module rebuilds those records from this project's normalised transcript (any harness): one assistant
message per model turn (its text and the tool calls that follow it, up to the next tool result or user message),
the turn's usage on it, and one toolResult message per tool result. Error and meta events have no counterpart.
"""
from __future__ import annotations

TYPE_CHECKING = False  # (typing's: the grading process imports this module and need not import typing)
if TYPE_CHECKING:
    from typing import Any, Optional


def _usage(u: Optional[dict[str, Any]]) -> Optional[dict[str, Any]]:
    if not u:
        return None
    inp, out = int(u.get("input_tokens") or 0), int(u.get("output_tokens") or 0)
    cache = int(u.get("cache_read_tokens") or 0)
    return {"input": inp, "output": out, "cacheRead": cache, "cacheWrite": 0,
            "totalTokens": int(u.get("total_tokens") or 0) or inp + out,
            "cost": {"total": float(u.get("cost_usd") or 0.0)}}


def _add_usage(msg: dict[str, Any], u: Optional[dict[str, Any]]) -> None:
    new = _usage(u)
    if new is None:
        return
    old = msg.get("usage")
    if old is None:
        msg["usage"] = new
        return
    for k in ("input", "output", "cacheRead", "cacheWrite", "totalTokens"):
        old[k] += new[k]
    old["cost"]["total"] += new["cost"]["total"]


def to_openclaw(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Normalised transcript events (dicts) -> OpenClaw session records."""
    records: list[dict[str, Any]] = []
    turn: Optional[dict[str, Any]] = None  # the assistant message being built

    def close() -> None:
        nonlocal turn
        if turn is not None:
            records.append({"type": "message", "message": turn})
            turn = None

    def assistant() -> dict[str, Any]:
        nonlocal turn
        if turn is None:
            turn = {"role": "assistant", "content": []}
        return turn

    for ev in events:
        kind, role = ev.get("type"), ev.get("role")
        if kind == "message" and role == "assistant":
            msg = assistant()
            if any(b.get("type") == "toolCall" for b in msg["content"]):  # text after tool calls: a new turn
                close()
                msg = assistant()
            msg["content"].append({"type": "text", "text": ev.get("content") or ""})
            _add_usage(msg, ev.get("usage"))
        elif kind == "tool_call":
            msg = assistant()
            msg["content"].append({"type": "toolCall", "id": ev.get("call_id") or "", "name": ev.get("tool") or "",
                                   "arguments": ev.get("arguments") or {}})
            _add_usage(msg, ev.get("usage"))
        elif kind == "usage":
            if turn is not None:
                _add_usage(turn, ev.get("usage"))
            elif records and records[-1]["message"].get("role") == "assistant":
                _add_usage(records[-1]["message"], ev.get("usage"))
            else:
                _add_usage(assistant(), ev.get("usage"))
        elif kind == "tool_result":
            close()
            args = ev.get("arguments") or {}
            records.append({"type": "message", "message": {
                "role": "toolResult", "toolCallId": ev.get("call_id") or "", "toolName": ev.get("tool") or "",
                "content": [{"type": "text", "text": ev.get("content") or ""}],
                "isError": bool(args.get("is_error"))}})
        elif kind == "message" and role in ("user", "system"):
            close()
            records.append({"type": "message", "message": {"role": role, "content": [
                {"type": "text", "text": ev.get("content") or ""}]}})
    close()
    return records
