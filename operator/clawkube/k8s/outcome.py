"""Terminated pods -> outcomes (pure): what the agent or grading pod reported, or why it failed.

The pods print a one-line JSON to their termination message (contracts/termination.py, the model pod.py
writes). When there is none (the container was killed, the command crashed), the pod's own state tells the
error kind; a message that is not a valid one of its phase is an infra failure naming the bad field.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from pydantic import ValidationError

from ..contracts import termination
from ..contracts.termination import AgentTermination, GradeTermination
from ..results.model import ErrorKind
from ..plan import Role, Stage
from .conditions import ts
from .model import AgentOutcome, ScoreStatus, StageOutcome, UsageStatus
from .observe import PodObs


@dataclass(frozen=True)
class Failure:
    kind: ErrorKind
    reason: str  # CamelCase, for conditions and events
    message: str
    evidence: bool = False  # an agent failure whose transcript and workspace were uploaded (it can be graded)


def _message(pod: PodObs, phase: str):
    """The pod's typed termination message, None when it has none of this phase, or a Failure when malformed."""
    t = pod.terminated
    raw = t.message if t is not None else None
    if raw is None or raw.get("phase", phase) != phase:
        return None
    try:
        return termination.parse({"phase": phase, **raw})
    except ValidationError as e:
        locs = [[str(x) for x in err["loc"][1:]] for err in e.errors()]
        problems = "; ".join(f"{'.'.join(loc)}: {err['msg']}" for loc, err in zip(locs, e.errors()))
        if phase == "grade" and all(loc[:1] == ["score"] for loc in locs):
            return Failure(ErrorKind.GRADING_ERROR, "BadScore", f"grading pod reported a bad score: {problems}")
        return Failure(ErrorKind.INFRA, "BadTerminationMessage", f"{phase} pod's termination message: {problems}")


def _without_message(pod: PodObs, phase: str) -> Failure:
    t = pod.terminated
    if pod.reason == "DeadlineExceeded":
        kind = ErrorKind.AGENT_TIMEOUT if phase == "agent" else ErrorKind.GRADING_ERROR
        return Failure(kind, "DeadlineExceeded", f"{phase} pod exceeded activeDeadlineSeconds")
    if pod.reason == "Evicted":
        return Failure(ErrorKind.INFRA, "Evicted", pod.message or f"{phase} pod evicted")
    if t is not None and t.reason == "OOMKilled":
        kind = ErrorKind.AGENT_ERROR if phase == "agent" else ErrorKind.GRADING_ERROR
        return Failure(kind, "OOMKilled", f"{phase} container was OOM-killed")
    detail = f"exit code {t.exit_code} ({t.reason})" if t is not None else f"pod phase {pod.phase} {pod.reason}"
    extra = f"; output: {t.raw_message[:200]!r}" if t is not None and t.raw_message else ""
    return Failure(ErrorKind.INFRA, "NoTerminationMessage", f"{phase} pod gave no JSON summary: {detail}{extra}")


def agent_outcome(pod: PodObs) -> tuple[AgentOutcome, Optional[Failure]]:
    """The outcome of a terminated agent pod and, if the attempt failed, why."""
    t = pod.terminated
    finished = ts(t.finished_at) if t is not None and t.finished_at else None
    msg = _message(pod, "agent")
    if not isinstance(msg, AgentTermination):
        return (AgentOutcome(exit_code=t.exit_code if t else None, finished_at=finished),
                msg if isinstance(msg, Failure) else _without_message(pod, "agent"))
    out = AgentOutcome(exit_code=msg.exit_code, timed_out=msg.timed_out, usage=UsageStatus.of(msg.usage),
                       error_kind=msg.error_kind, error_message=msg.error_message, finished_at=finished,
                       skills=msg.skills.model_dump() if msg.skills is not None else None,
                       created_skills=msg.created_skills, skill_quality=msg.skill_quality,
                       warmup_ports=msg.warmup_ports)
    if out.timed_out and out.error_kind is None:
        out = out.model_copy(update={"error_kind": ErrorKind.AGENT_TIMEOUT})
    if out.error_kind is None and msg.upload_error:  # the grading pod could not fetch the workspace
        return out, Failure(ErrorKind.INFRA, "ArtifactUploadFailed", f"agent pod upload: {msg.upload_error}")
    if out.error_kind is not None:
        reason = "".join(w.title() for w in out.error_kind.value.split("_"))
        return out, Failure(out.error_kind, reason, out.error_message or f"agent reported {out.error_kind.value}",
                            evidence=not msg.upload_error)
    return out, None


def grade_outcome(pod: PodObs) -> tuple[Optional[ScoreStatus], Optional[Failure]]:
    """The score of a terminated grading pod, or why there is none."""
    msg = _message(pod, "grade")
    if not isinstance(msg, GradeTermination):
        return None, msg if isinstance(msg, Failure) else _without_message(pod, "grade")
    kind = msg.error_kind
    if kind is None and msg.upload_error:  # a score whose evidence (score.json, grader.log) is not in the store:
        # the trial must not read Succeeded while an artifact it promises is missing; graded again
        return None, Failure(ErrorKind.INFRA, "ArtifactUploadFailed", f"grading pod upload: {msg.upload_error}")
    if kind is None and msg.score is not None:
        return ScoreStatus.of(msg.score), None
    kind = kind or ErrorKind.GRADING_ERROR
    return None, Failure(kind, "GradingError" if kind == ErrorKind.GRADING_ERROR else "Infra",
                         msg.error_message or "grading pod reported no score")


def stage_outcome(pod: PodObs, stage: Stage) -> tuple[StageOutcome, Optional[Failure]]:
    """A terminated pod of a preparatory stage (plan.py): the stage's own verdict (an agent error or timeout, a
    grading error), reported in its termination message, is recorded and is no failure; a pod that gave no
    message, or reported an infra error, fails the attempt."""
    reported = pod.terminated is not None and pod.terminated.message is not None
    if stage.role is Role.GRADE:
        score, failure = grade_outcome(pod)
        if failure is None:
            return StageOutcome(name=stage.name, score=score), None
        if reported and failure.kind == ErrorKind.GRADING_ERROR:
            return StageOutcome(name=stage.name, error_kind=failure.kind, error_message=failure.message), None
        return StageOutcome(name=stage.name), failure
    out, failure = agent_outcome(pod)
    rec = StageOutcome(name=stage.name, usage=out.usage, error_kind=out.error_kind, error_message=out.error_message,
                       skills=out.skills, created_skills=out.created_skills, skill_quality=out.skill_quality)
    if failure is None or (reported and failure.kind in (ErrorKind.AGENT_ERROR, ErrorKind.AGENT_TIMEOUT)):
        return rec, None
    return rec, failure
