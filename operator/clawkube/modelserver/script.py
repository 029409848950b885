"""The script of the scripted model server: what the "model" answers, typed.

A script is pure data (YAML or JSON). For each request the server builds a `RequestView` (the API-neutral
view of the conversation) and `choose()` picks the reply:

1. `rules`, in order: the first whose `when` matches (any turn). Use them for a judge, or for side requests.
2. `turns[k]`, where k is the number of assistant turns already in the conversation (stateless: the same
   conversation always gets the same answer, whatever the harness sends in between). An entry is one reply or a
   list of alternatives tried in order (e.g. one per harness, told apart by the tools offered).
3. `fallback`.

A reply with tool calls matches only when the request offers every tool it calls (unless `when.tools` says
otherwise), so a side request without tools (a title or topic request) never gets a tool call.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal, Optional, Union

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator

Api = Literal["chat", "responses", "anthropic"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Match(_Strict):
    """Conditions on the request; all given ones must hold. Strings match as case-sensitive substrings."""

    turn: Optional[Union[int, list[int]]] = None  # assistant turns already in the conversation
    contains: Optional[Union[str, list[str]]] = None  # the last user or tool-result message holds each
    conversation_contains: Optional[Union[str, list[str]]] = None  # any message (system included) holds each
    system_contains: Optional[Union[str, list[str]]] = None  # the system prompt / instructions hold each
    regex: Optional[str] = None  # searched in the whole conversation text; named groups become ${name}
    tools: Optional[list[str]] = None  # every one of these tools is offered ([] = no tools offered)
    any_tool: Optional[list[str]] = None  # at least one of these tools is offered
    api: Optional[Api] = None
    model: Optional[str] = None  # exact model name asked for

    @field_validator("regex")
    @classmethod
    def _compiles(cls, v: Optional[str]) -> Optional[str]:
        if v is not None:
            try:
                re.compile(v)
            except re.error as e:
                raise ValueError(f"invalid regex: {e}") from None
        return v


class ToolCall(_Strict):
    name: str
    arguments: Union[dict[str, Any], str] = Field(default_factory=dict)  # a string goes to freeform tools as is


class UsageSpec(_Strict):
    """Tokens reported for one response. `input_tokens` excludes cache reads (Anthropic's meaning); OpenAI's
    prompt_tokens / input_tokens is reported as input_tokens + cached_input_tokens."""

    input_tokens: Optional[int] = Field(None, ge=0)  # None: len(request body) // 4
    output_tokens: Optional[int] = Field(None, ge=0)  # None: len(reply text + arguments) // 4, at least 1
    cached_input_tokens: int = Field(0, ge=0)
    cache_creation_input_tokens: int = Field(0, ge=0)
    reasoning_tokens: int = Field(0, ge=0)


class ErrorSpec(_Strict):
    status: int = Field(500, ge=400, le=599)
    message: str = "scripted error"


class Reply(_Strict):
    name: Optional[str] = None  # shows in the request log
    when: Match = Field(default_factory=Match)
    text: Optional[str] = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: Optional[UsageSpec] = None
    delay_seconds: float = Field(0.0, ge=0, le=600)
    error: Optional[ErrorSpec] = None  # answer with this HTTP error instead


TurnEntry = Union[Reply, list[Reply]]


class Script(_Strict):
    models: list[str] = Field(default_factory=lambda: ["scripted"])  # what /v1/models lists
    api_key: Optional[str] = None  # when set, requests must carry it (Bearer or x-api-key), else 401
    usage: UsageSpec = Field(default_factory=UsageSpec)  # defaults for replies without their own usage
    rules: list[Reply] = Field(default_factory=list)
    turns: list[TurnEntry] = Field(default_factory=list)
    fallback: Reply = Field(default_factory=lambda: Reply(name="fallback", text="Done."))


class RequestView(BaseModel):
    """One request of any of the three APIs, reduced to what a script can match on."""

    api: Api
    model: str = ""
    stream: bool = False
    system: str = ""
    messages: list[tuple[str, str]] = Field(default_factory=list)  # (role, text); roles user/assistant/tool
    tools: dict[str, str] = Field(default_factory=dict)  # offered tool name -> kind (function, custom, ...)
    assistant_turns: int = 0
    body_chars: int = 0

    @property
    def last_text(self) -> str:
        for role, text in reversed(self.messages):
            if role in ("user", "tool"):
                return text
        return ""

    @property
    def conversation_text(self) -> str:
        return "\n".join([self.system] + [t for _, t in self.messages])


class Choice(BaseModel):
    reply: Reply
    source: str  # "rules[i]", "turns[k][j]" or "fallback"
    captures: dict[str, str] = Field(default_factory=dict)


def load_script(path: Union[str, Path]) -> Script:
    text = Path(path).read_text()
    data = json.loads(text) if str(path).endswith(".json") else yaml.safe_load(text)
    return Script.model_validate(data or {})


def _all_in(needles: Optional[Union[str, list[str]]], hay: str) -> bool:
    if needles is None:
        return True
    return all(n in hay for n in ([needles] if isinstance(needles, str) else needles))


def matches(reply: Reply, req: RequestView) -> Optional[dict[str, str]]:
    """The regex captures when `reply` applies to `req`, None when it does not."""
    w = reply.when
    if w.turn is not None and req.assistant_turns not in ([w.turn] if isinstance(w.turn, int) else w.turn):
        return None
    if w.api is not None and w.api != req.api or w.model is not None and w.model != req.model:
        return None
    if not (_all_in(w.contains, req.last_text) and _all_in(w.system_contains, req.system)
            and _all_in(w.conversation_contains, req.conversation_text)):
        return None
    if w.tools is not None:
        if w.tools == [] and req.tools or any(t not in req.tools for t in w.tools):
            return None
    elif any(c.name not in req.tools for c in reply.tool_calls):
        return None
    if w.any_tool is not None and not any(t in req.tools for t in w.any_tool):
        return None
    if w.regex is None:
        return {}
    m = re.search(w.regex, req.conversation_text)
    return None if m is None else {k: v for k, v in m.groupdict().items() if v is not None}


def choose(script: Script, req: RequestView) -> Choice:
    for i, r in enumerate(script.rules):
        if (cap := matches(r, req)) is not None:
            return Choice(reply=r, source=f"rules[{i}]", captures=cap)
    if req.assistant_turns < len(script.turns):
        entry = script.turns[req.assistant_turns]
        for j, r in enumerate(entry if isinstance(entry, list) else [entry]):
            if (cap := matches(r, req)) is not None:
                return Choice(reply=r, source=f"turns[{req.assistant_turns}][{j}]", captures=cap)
    cap = matches(script.fallback.model_copy(update={"tool_calls": []}), req)
    return Choice(reply=script.fallback, source="fallback", captures=cap or {})


_PLACEHOLDER = re.compile(r"\$\{(\w+)\}")


def substitute(value: Any, captures: dict[str, str]) -> Any:
    """Replace ${name} in every string of `value` by the regex capture `name` (unknown names stay as they are)."""
    if isinstance(value, str):
        return _PLACEHOLDER.sub(lambda m: captures.get(m.group(1), m.group(0)), value)
    if isinstance(value, dict):
        return {k: substitute(v, captures) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, captures) for v in value]
    return value
