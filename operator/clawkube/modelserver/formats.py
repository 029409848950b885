"""A chosen reply in each API's own response shape: a JSON body, or the SSE events of its streaming format."""
from __future__ import annotations

import json
from typing import Any, Optional

from pydantic import BaseModel

from .script import Choice, RequestView, UsageSpec, substitute

SseEvent = tuple[Optional[str], Any]  # (event name or None, data: dict or the literal "[DONE]")
_CHUNK = 24  # characters per streamed text delta


class Call(BaseModel):
    id: str
    name: str
    arguments: str  # JSON text, or free text for freeform ("custom") tools
    kind: str = "function"


class Usage(BaseModel):
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    reasoning_tokens: int = 0

    @property
    def prompt_tokens(self) -> int:  # OpenAI's meaning: cache reads included
        return self.input_tokens + self.cached_input_tokens


class Resolved(BaseModel):
    """What the model says in one response, independent of the API."""

    id: str
    model: str
    text: str = ""
    calls: list[Call] = []
    usage: Usage


def resolve(choice: Choice, req: RequestView, defaults: UsageSpec, seq: int) -> Resolved:
    r = choice.reply
    text = substitute(r.text or "", choice.captures)
    calls = []
    for i, c in enumerate(r.tool_calls):
        args = substitute(c.arguments, choice.captures)
        kind = req.tools.get(c.name, "function")
        calls.append(Call(id=f"call_{seq:04d}_{i}", name=c.name, kind=kind,
                          arguments=args if isinstance(args, str) else json.dumps(args)))
    spec = r.usage or defaults
    out_chars = len(text) + sum(len(c.name) + len(c.arguments) for c in calls)
    usage = Usage(
        input_tokens=spec.input_tokens if spec.input_tokens is not None else max(1, req.body_chars // 4),
        output_tokens=spec.output_tokens if spec.output_tokens is not None else max(1, out_chars // 4),
        cached_input_tokens=spec.cached_input_tokens, cache_creation_input_tokens=spec.cache_creation_input_tokens,
        reasoning_tokens=spec.reasoning_tokens)
    return Resolved(id=f"{seq:06d}", model=req.model or "scripted", text=text, calls=calls, usage=usage)


def _pieces(s: str) -> list[str]:
    return [s[i:i + _CHUNK] for i in range(0, len(s), _CHUNK)] or [""]


# ---- OpenAI Chat Completions ----

def _chat_usage(u: Usage) -> dict:
    return {"prompt_tokens": u.prompt_tokens, "completion_tokens": u.output_tokens,
            "total_tokens": u.prompt_tokens + u.output_tokens,
            "prompt_tokens_details": {"cached_tokens": u.cached_input_tokens},
            "completion_tokens_details": {"reasoning_tokens": u.reasoning_tokens}}


def chat_json(r: Resolved, created: int) -> dict:
    msg: dict[str, Any] = {"role": "assistant", "content": r.text or None}
    if r.calls:
        msg["tool_calls"] = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                             for c in r.calls]
    return {"id": f"chatcmpl-{r.id}", "object": "chat.completion", "created": created, "model": r.model,
            "choices": [{"index": 0, "message": msg, "logprobs": None,
                         "finish_reason": "tool_calls" if r.calls else "stop"}],
            "usage": _chat_usage(r.usage), "system_fingerprint": "clawkube-scripted"}


def chat_sse(r: Resolved, created: int, separate_usage_chunk: bool) -> list[SseEvent]:
    def chunk(delta: dict, finish: Optional[str] = None, **extra: Any) -> SseEvent:
        return None, {"id": f"chatcmpl-{r.id}", "object": "chat.completion.chunk", "created": created,
                      "model": r.model, "system_fingerprint": "clawkube-scripted",
                      "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}], **extra}

    events = [chunk({"role": "assistant", "content": ""})]
    if r.text:
        events += [chunk({"content": p}) for p in _pieces(r.text)]
    for i, c in enumerate(r.calls):
        events.append(chunk({"tool_calls": [{"index": i, "id": c.id, "type": "function",
                                             "function": {"name": c.name, "arguments": ""}}]}))
        events += [chunk({"tool_calls": [{"index": i, "function": {"arguments": p}}]}) for p in _pieces(c.arguments)]
    finish = "tool_calls" if r.calls else "stop"
    if separate_usage_chunk:  # stream_options.include_usage: OpenAI's own final chunk with empty choices
        events.append(chunk({}, finish))
        events.append((None, {"id": f"chatcmpl-{r.id}", "object": "chat.completion.chunk", "created": created,
                              "model": r.model, "choices": [], "usage": _chat_usage(r.usage)}))
    else:  # usage on the finishing chunk, as most compatible servers do
        events.append(chunk({}, finish, usage=_chat_usage(r.usage)))
    events.append((None, "[DONE]"))
    return events


# ---- OpenAI Responses ----

def _responses_usage(u: Usage) -> dict:
    return {"input_tokens": u.prompt_tokens, "input_tokens_details": {"cached_tokens": u.cached_input_tokens},
            "output_tokens": u.output_tokens, "output_tokens_details": {"reasoning_tokens": u.reasoning_tokens},
            "total_tokens": u.prompt_tokens + u.output_tokens}


def _responses_items(r: Resolved) -> list[dict]:
    items: list[dict] = []
    if r.text:
        items.append({"type": "message", "id": f"msg_{r.id}", "status": "completed", "role": "assistant",
                      "content": [{"type": "output_text", "text": r.text, "annotations": []}]})
    for c in r.calls:
        if c.kind == "custom":
            items.append({"type": "custom_tool_call", "id": f"ctc_{c.id}", "status": "completed",
                          "call_id": c.id, "name": c.name, "input": c.arguments})
        else:
            items.append({"type": "function_call", "id": f"fc_{c.id}", "status": "completed",
                          "call_id": c.id, "name": c.name, "arguments": c.arguments})
    return items


def _response_obj(r: Resolved, created: int, status: str, output: list[dict], usage: Optional[dict]) -> dict:
    return {"id": f"resp_{r.id}", "object": "response", "created_at": created, "status": status, "model": r.model,
            "output": output, "usage": usage, "error": None, "incomplete_details": None,
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}


def responses_json(r: Resolved, created: int) -> dict:
    obj = _response_obj(r, created, "completed", _responses_items(r), _responses_usage(r.usage))
    obj["output_text"] = r.text
    return obj


def responses_sse(r: Resolved, created: int) -> list[SseEvent]:
    events: list[SseEvent] = []

    def ev(name: str, **data: Any) -> None:
        events.append((name, {"type": name, "sequence_number": len(events), **data}))

    ev("response.created", response=_response_obj(r, created, "in_progress", [], None))
    ev("response.in_progress", response=_response_obj(r, created, "in_progress", [], None))
    for idx, item in enumerate(_responses_items(r)):
        if item["type"] == "message":
            ev("response.output_item.added", output_index=idx, item={**item, "status": "in_progress", "content": []})
            part = {"type": "output_text", "text": "", "annotations": []}
            ev("response.content_part.added", item_id=item["id"], output_index=idx, content_index=0, part=part)
            for p in _pieces(r.text):
                ev("response.output_text.delta", item_id=item["id"], output_index=idx, content_index=0, delta=p)
            ev("response.output_text.done", item_id=item["id"], output_index=idx, content_index=0, text=r.text)
            ev("response.content_part.done", item_id=item["id"], output_index=idx, content_index=0,
               part={**part, "text": r.text})
        else:
            field = "input" if item["type"] == "custom_tool_call" else "arguments"
            ev("response.output_item.added", output_index=idx, item={**item, "status": "in_progress", field: ""})
            kind = "custom_tool_call_input" if field == "input" else "function_call_arguments"
            for p in _pieces(item[field]):
                ev(f"response.{kind}.delta", item_id=item["id"], output_index=idx, delta=p)
            ev(f"response.{kind}.done", item_id=item["id"], output_index=idx, **{field: item[field]})
        ev("response.output_item.done", output_index=idx, item=item)
    ev("response.completed", response=_response_obj(r, created, "completed", _responses_items(r),
                                                     _responses_usage(r.usage)))
    return events


# ---- Anthropic Messages ----

def _anthropic_blocks(r: Resolved) -> list[dict]:
    blocks: list[dict] = [{"type": "text", "text": r.text}] if r.text else []
    for c in r.calls:
        try:
            args = json.loads(c.arguments)
        except ValueError:
            args = {"input": c.arguments}
        blocks.append({"type": "tool_use", "id": "toolu_" + c.id.removeprefix("call_"), "name": c.name,
                       "input": args})
    return blocks


def _anthropic_usage(u: Usage, output_tokens: Optional[int] = None) -> dict:
    return {"input_tokens": u.input_tokens, "output_tokens": u.output_tokens if output_tokens is None
            else output_tokens, "cache_read_input_tokens": u.cached_input_tokens,
            "cache_creation_input_tokens": u.cache_creation_input_tokens}


def anthropic_json(r: Resolved) -> dict:
    return {"id": f"msg_{r.id}", "type": "message", "role": "assistant", "model": r.model,
            "content": _anthropic_blocks(r), "stop_reason": "tool_use" if r.calls else "end_turn",
            "stop_sequence": None, "usage": _anthropic_usage(r.usage)}


def anthropic_sse(r: Resolved) -> list[SseEvent]:
    msg = {**anthropic_json(r), "content": [], "stop_reason": None, "usage": _anthropic_usage(r.usage, 1)}
    events: list[SseEvent] = [("message_start", {"type": "message_start", "message": msg}),
                              ("ping", {"type": "ping"})]
    for i, b in enumerate(_anthropic_blocks(r)):
        if b["type"] == "text":
            events.append(("content_block_start", {"type": "content_block_start", "index": i,
                                                   "content_block": {"type": "text", "text": ""}}))
            deltas = [{"type": "text_delta", "text": p} for p in _pieces(b["text"])]
        else:
            events.append(("content_block_start", {"type": "content_block_start", "index": i,
                                                   "content_block": {**b, "input": {}}}))
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in _pieces(json.dumps(b["input"]))]
        events += [("content_block_delta", {"type": "content_block_delta", "index": i, "delta": d}) for d in deltas]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    events.append(("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": "tool_use" if r.calls else "end_turn",
                                               "stop_sequence": None},
                                     "usage": _anthropic_usage(r.usage)}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def usage_of(api: str, r: Resolved) -> dict:
    """The usage object as this API reported it (for the request log)."""
    return {"chat": _chat_usage, "responses": _responses_usage, "anthropic": _anthropic_usage}[api](r.usage)
