"""The transcript as WildClawBench's graders read it: an OpenClaw session (`agents/main/sessions/<id>.jsonl`).

Upstream hands each grader `load_transcript(path)`: the rows of the OpenClaw session file (JSON lines; a line that
does not parse is skipped), which is what OpenClaw writes itself and what upstream's other harness backends convert
their logs into. Rows: a `session` header, then `{"type": "message", "message": {...}}` with `role` user |
assistant | toolResult; assistant content blocks `text` / `toolCall {id, name, arguments}`; a toolResult carries
`toolCallId`, `toolName`, `content` blocks and `isError`; assistant messages carry `usage {input, output,
cacheRead, cacheWrite, totalTokens, cost {total}}`.

`to_session(events)` renders this project's normalised transcript (agents/transcript.py, kept as the trial's
artifact) in that format, for every harness alike.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from ...agents.transcript import TranscriptEvent

SESSION_PATH = "/root/.openclaw/agents/main/sessions/chat.jsonl"  # where upstream's graders look first


def _message(msg: dict[str, Any], ts: Any = None) -> dict[str, Any]:
    row: dict[str, Any] = {"type": "message", "message": msg}
    if ts is not None:
        row["timestamp"] = ts
    return row


def _usage(ev: TranscriptEvent) -> dict[str, Any]:
    u = ev.usage
    total = u.total_tokens or (u.input_tokens + u.output_tokens)
    return {"input": u.input_tokens, "output": u.output_tokens, "cacheRead": u.cache_read_tokens, "cacheWrite": 0,
            "totalTokens": total, "cost": {"total": u.cost_usd}}


def to_session(events: Iterable[TranscriptEvent], cwd: str = "/tmp_workspace") -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = [{"type": "session", "version": 3, "id": "chat", "cwd": cwd}]
    last_assistant: dict[str, Any] | None = None
    for ev in events:
        if ev.type == "message" and ev.role in ("user", "system"):
            rows.append(_message({"role": ev.role, "content": [{"type": "text", "text": ev.content}]}, ev.ts))
        elif ev.type == "message" and ev.role == "assistant":
            last_assistant = {"role": "assistant", "content": [{"type": "text", "text": ev.content}]}
            rows.append(_message(last_assistant, ev.ts))
        elif ev.type == "tool_call":
            last_assistant = {"role": "assistant", "content": [
                {"type": "toolCall", "id": ev.call_id or "", "name": ev.tool or "", "arguments": ev.arguments or {}}]}
            rows.append(_message(last_assistant, ev.ts))
        elif ev.type == "tool_result":
            exit_code = (ev.arguments or {}).get("exit_code")
            rows.append(_message({"role": "toolResult", "toolCallId": ev.call_id or "", "toolName": ev.tool or "",
                                  "content": [{"type": "text", "text": ev.content}],
                                  "isError": bool(exit_code not in (None, 0))}, ev.ts))
        elif ev.type == "usage" and ev.usage is not None and last_assistant is not None:
            last_assistant["usage"] = _usage(ev)
    return rows


def write(rows: list[dict[str, Any]], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def read(path: Path) -> list[Any]:
    """The session's rows as upstream's loader returns them: a JSON list (or the list under transcript / messages /
    chat of a JSON object, or the object itself), else one row per JSON line, unparsable lines skipped."""
    try:
        raw = path.read_text(encoding="utf-8", errors="ignore")
    except OSError:
        return []
    try:
        whole = json.loads(raw)
    except ValueError:
        whole = None
    if isinstance(whole, list):
        return whole
    if isinstance(whole, dict):
        for key in ("transcript", "messages", "chat"):
            if isinstance(whole.get(key), list):
                return whole[key]
        return [whole]
    rows = []
    for line in raw.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return rows
