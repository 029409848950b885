"""The one normalised transcript format (JSONL, one TranscriptEvent per line) all harnesses are parsed into."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Literal, Optional

from pydantic import BaseModel, Field

from ..results.model import TOOL_KINDS, Usage  # noqa: F401  (TOOL_KINDS re-exported)

EventType = Literal["message", "tool_call", "tool_result", "usage", "error", "meta"]
Role = Literal["system", "user", "assistant", "tool"]


class TranscriptEvent(BaseModel):
    type: EventType
    role: Optional[Role] = None
    content: str = ""
    tool: Optional[str] = None
    arguments: Optional[dict[str, Any]] = None
    call_id: Optional[str] = None
    ts: Optional[float] = None
    usage: Optional[Usage] = None
    is_error: Optional[bool] = None  # a tool_result the tool marked as an error
    raw: Optional[dict[str, Any]] = Field(default=None, exclude=True)  # kept in memory only


def tool_kind(name: str, kinds: dict[str, str]) -> str:
    if name in kinds:
        return kinds[name]
    if name.startswith("mcp__") or name.startswith("mcp."):
        return "mcp"
    return "other"


def write_jsonl(path: Path, events: Iterable[TranscriptEvent]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for ev in events:
            f.write(ev.model_dump_json(exclude_none=True) + "\n")


def read_jsonl(path: Path) -> list[TranscriptEvent]:
    if not path.exists():
        return []
    return [TranscriptEvent.model_validate_json(line) for line in path.read_text().splitlines() if line.strip()]


def as_dicts(events: Iterable[TranscriptEvent]) -> list[dict[str, Any]]:
    """The transcript as graders receive it."""
    return [json.loads(ev.model_dump_json(exclude_none=True)) for ev in events]


def total_usage(events: Iterable[TranscriptEvent], tool_kinds: Optional[dict[str, str]] = None) -> Usage:
    """Tokens and cost summed over `usage` events; turns; tool calls, in all and by kind (`tool_kinds` maps the
    harness's tool names to kinds; others are `other`, MCP tools `mcp`)."""
    u = Usage()
    for ev in events:
        if ev.usage is not None:
            u = u.add(ev.usage)
        if ev.type == "tool_call":
            u.tool_calls += 1
            kind = tool_kind(ev.tool or "", tool_kinds or {})
            u.tool_calls_by_kind[kind] = u.tool_calls_by_kind.get(kind, 0) + 1
        if ev.type == "message" and ev.role == "assistant":
            u.turns += 1
    if not u.total_tokens:
        u.total_tokens = u.input_tokens + u.output_tokens
    return u
