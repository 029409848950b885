"""The one-line JSON summary a pod writes to its termination message (pod.py) and the operator reads
(k8s/outcome.py): `AgentTermination` from agent and stage pods, `GradeTermination` from grading pods.

Kubernetes keeps `LIMIT` bytes of a termination message; `line()` keeps the verdict when the full summary is
longer (a compact score, a `SkillDigest`, `truncated: true`); the details stay in the uploaded artifacts.
`parse()` is the reader's side: an unknown field, a misspelt error kind or a malformed usage is an error, never
silently dropped.
"""
from __future__ import annotations

import json
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from ..results.model import ErrorKind, Score, Usage
from .skills import Skills

LIMIT = 4096  # bytes Kubernetes keeps of a termination message


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid")

    error_kind: Optional[ErrorKind] = None
    error_message: Optional[str] = None
    artifacts: Optional[str] = None  # the URI the pod uploaded its --out folder to
    upload_error: Optional[str] = None  # the upload failed (the verdict still reaches the operator)
    truncated: bool = False


class AgentTermination(_Message):
    phase: Literal["agent"] = "agent"
    stage: str = "execution"  # the plan stage the pod ran (plan.py)
    exit_code: Optional[int] = None
    timed_out: bool = False
    usage: Usage = Field(default_factory=Usage)
    skills: Optional[Skills] = None  # executions: the skills report (a digest when truncated)
    created_skills: Optional[list[str]] = None  # author stages: the skills they created (created_skills.json: all)
    skill_quality: Optional[float] = None  # author stages: their quality score
    warmup_ports: list[int] = Field(default_factory=list)  # servers its warmup left running (relayed to grading)


class GradeTermination(_Message):
    phase: Literal["grade"] = "grade"
    score: Optional[Score] = None  # without `criteria`/`details` when truncated


Termination = Annotated[Union[AgentTermination, GradeTermination], Field(discriminator="phase")]
_ADAPTER: TypeAdapter = TypeAdapter(Termination)


def parse(message: dict[str, Any]) -> Union[AgentTermination, GradeTermination]:
    """The typed message (pydantic ValidationError when it is not one)."""
    return _ADAPTER.validate_python(message)


def _compact(m: Union[AgentTermination, GradeTermination]) -> Union[AgentTermination, GradeTermination]:
    update: dict[str, Any] = {"truncated": True}
    if isinstance(m, GradeTermination) and m.score is not None:
        update["score"] = m.score.model_copy(update={"criteria": {}, "details": {}})
    if isinstance(m, AgentTermination) and m.skills is not None and not getattr(m.skills, "truncated", False):
        update["skills"] = m.skills.digest()
    return m.model_copy(update=update)


def _dump(m: BaseModel) -> str:
    return json.dumps(m.model_dump(mode="json", exclude_defaults=True) | {"phase": m.phase},
                      sort_keys=True, separators=(",", ":"))


def line(m: Union[AgentTermination, GradeTermination]) -> str:
    """The message as one JSON line of at most LIMIT bytes."""
    text = _dump(m)
    if len(text.encode()) <= LIMIT:
        return text
    short = _compact(m)
    text = _dump(short)
    if len(text.encode()) <= LIMIT:
        return text
    while len(text.encode()) > LIMIT and short.error_message:  # keep the JSON whole: shorten the message
        short = short.model_copy(update={"error_message": short.error_message[:len(short.error_message) // 2]})
        text = _dump(short)
    return text
