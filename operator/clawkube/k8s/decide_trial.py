"""The per-trial state machine (pure): observed trial + its pods + `now` -> actions.

    queued --slot--> [stages] --> agent pod --terminated ok--> grading pod --score--> succeeded --> upload result
                        |  deleted/evicted/stuck/overtime/error      |  grader error/pod lost
                        +--> retry (new attempt) or failed           +--> regrade or failed

Stages (the trial plan, plan.py; `STAGES` names the preparatory ones): before its graded execution an attempt
runs, one pod each and in order, PreSkill `authoring`, or PostSkill `first_run` -> `first_run_grade` ->
`summary`; an `author` or `execute` stage is an agent pod with `--stage`, a `grade` stage a grading pod of the
execution it grades. Each stage's pod is created in
the pass that sees the previous one terminated (the first one when the slot is granted); the execution pod then
starts with the skills the last stage wrote (`skills_uri`). A stage's own verdict (agent error or timeout,
grading error) is recorded in `status.stages` and the attempt goes on, as on the local runner; a stage pod that
is lost, stuck, overtime or reports an infra error fails the attempt (a new attempt runs every stage again).
The first run's grading pod is the firewall's too: the summary pod starts only after it, and it gets the
first run's score and the first run's agent-side artifacts, never grader output.

Retries follow plan.after_failure, as on the local runner: an agent error or timeout the pod reported (its
artifacts uploaded) is retried within `retry.agentError` / `retry.agentTimeout` attempts and then graded as the
agent left the workspace, its error kept in the trial's status and result.

Invariants (table-tested): a grading pod is only created after the agent pod of the same attempt has
terminated; a finished trial's outcome is never changed again (only ArtifactsUploaded may follow);
object names are deterministic, so a lost status write is re-derived from the pods that exist.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal, Optional

from .. import plan as trial_plan
from ..artifacts.uri import S3Uri
from ..contracts.details import StageRecord, mode_details as build_mode_details, with_mode_details
from ..contracts.pod_env import FirstRunRecord
from ..contracts.warmup import LOST_PEER
from ..execution.relay import RELAY_PORT
from ..plan import Next, Role
from ..results.model import ErrorKind, TrialResult, TrialState
from ..runspec import EvalMode, RetryPolicy
from ..skills.context import GRADING_FAILED
from . import conditions as C
from .aggregate import retried
from .actions import Action, CreatePod, DeletePod, Emit, PatchTrial, UploadResult
from .model import AttemptRecord, ScoreStatus, TrialPhase, TrialStatus, UsageStatus
from .names import agent_pod_name, grade_pod_name, stage_pod_name
from .observe import TERMINAL_PHASES, PodObs, TrialObs
from .outcome import Failure, agent_outcome, grade_outcome, stage_outcome

STAGES: dict[EvalMode, tuple[str, ...]] = {m: tuple(st.name for st in trial_plan.preparatory(m)) for m in EvalMode}


@dataclass(frozen=True)
class TrialContext:
    now: datetime
    run: str
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    artifact_root: Optional[S3Uri] = None  # s3://bucket/<prefix>
    harness: str = "oracle"
    model: Optional[str] = None
    several_modes: bool = False  # a run of several modes: artifacts under <task>/<mode>-<i>/
    timeout_override: Optional[int] = None
    pending_timeout: int = 600
    agent_grace: int = 300
    grade_grace: int = 300
    slack: int = 60
    upload_retry_seconds: float = 10.0

    def agent_deadline(self, t: TrialObs) -> int:
        return (self.timeout_override or t.spec.timeout_seconds) + self.agent_grace

    def grade_deadline(self, t: TrialObs) -> int:
        return t.spec.grader_timeout_seconds + self.grade_grace


def _folder(root: S3Uri, *parts: str) -> str:
    key = "/".join(p.strip("/") for p in (root.key, *parts) if p.strip("/"))
    return f"s3://{root.bucket}/{key}/"


def trial_prefix(ctx: TrialContext, t: TrialObs) -> Optional[str]:
    if ctx.artifact_root is None:
        return None
    i = str(t.spec.trial_index)
    return _folder(ctx.artifact_root, ctx.run, t.spec.task_id, f"{t.spec.mode.value}-{i}" if ctx.several_modes else i)


def attempt_prefix(ctx: TrialContext, t: TrialObs, attempt: int, what: str) -> Optional[str]:
    base = trial_prefix(ctx, t)
    return None if base is None else f"{base}a{attempt}/{what}/"


def decide_trial(t: TrialObs, pods: dict[str, PodObs], ctx: TrialContext, may_start: bool) -> list[Action]:
    return [*_release(t, pods), *_decide(t, pods, ctx, may_start)]


def _release(t: TrialObs, pods: dict[str, PodObs]) -> list[Action]:
    """An agent pod whose agent has finished but whose warmup sidecar still serves the warmup's servers (they are
    relayed to grading): deleted once no grading of its attempt can follow (the trial finished, or a later attempt
    runs). Only trials with a warmup have such pods."""
    if not t.spec.warmup:
        return []
    keep = None if t.status.finished else agent_pod_name(t.name, max(1, t.status.attempt))
    return [DeletePod(t.name, p.name, "WarmupServersReleased") for p in sorted(pods.values(), key=lambda p: p.name)
            if p.role == "agent" and p.name != keep and p.terminated is not None and not p.deleting
            and p.phase not in TERMINAL_PHASES]


def _warmup_peer(s: TrialStatus, agent: Optional[PodObs]) -> Optional[str]:
    """Where the grading pod reaches the servers the agent pod's warmup left running (none: no peer)."""
    if s.agent is None or not s.agent.warmup_ports:
        return None
    if agent is None or agent.deleting or agent.phase in TERMINAL_PHASES or not agent.pod_ip:
        return LOST_PEER  # grading says so (an infra error) instead of grading the servers as absent
    return f"{agent.pod_ip}:{RELAY_PORT}"


def _decide(t: TrialObs, pods: dict[str, PodObs], ctx: TrialContext, may_start: bool) -> list[Action]:
    s = t.status
    if s.finished:
        return _upload_if_due(t, s, ctx)
    attempt = max(1, s.attempt)
    agent = pods.get(agent_pod_name(t.name, attempt))
    stages = STAGES[t.spec.mode]

    if not s.scheduled:
        n = _scheduled(s, attempt, ctx.now)
        first = _next_pod(t, n, attempt, ctx)
        if first.name in pods:  # created, but the status write was lost: adopt the pod
            return _patch(t, s, n, [])
        if not may_start:
            return []
        started = "AgentStarted" if first.stage == "execution" else "StageStarted"
        return [first, *_patch(t, s, n, [_event(t, started, f"attempt {attempt}: pod {first.name}")])]

    if s.agent is None:
        if len(s.stages) < len(stages):
            return _stage_phase(t, s, attempt, stages[len(s.stages)], pods, ctx)
        return _agent_phase(t, s, attempt, agent, pods, ctx)
    return _grade_phase(t, s, attempt, agent, pods, ctx)


def _next_pod(t: TrialObs, s: TrialStatus, attempt: int, ctx: TrialContext) -> CreatePod:
    """The pod that follows the stages recorded in `s`: the next stage's, or the graded execution's."""
    mode = t.spec.mode
    stages = trial_plan.preparatory(mode)
    done = {st.name: st for st in s.stages}
    if len(s.stages) == len(stages):
        writer = trial_plan.graded_execution(mode).skills_from  # the stage whose skills the execution starts with
        return CreatePod(trial=t.name, role="agent", name=agent_pod_name(t.name, attempt), attempt=attempt,
                         artifact_uri=attempt_prefix(ctx, t, attempt, "agent"),
                         skills_uri=f"{attempt_prefix(ctx, t, attempt, writer)}skills/" if writer and ctx.artifact_root
                         else None)
    stage = stages[len(s.stages)]
    name, out = stage_pod_name(t.name, attempt, stage.name), attempt_prefix(ctx, t, attempt, stage.name)
    if stage.role is Role.GRADE:
        return CreatePod(trial=t.name, role="grade", name=name, attempt=attempt, artifact_uri=out, stage=stage.grades,
                         agent_artifacts_uri=attempt_prefix(ctx, t, attempt, stage.grades))
    skills_uri = (f"{attempt_prefix(ctx, t, attempt, stage.skills_from)}skills/"
                  if stage.skills_from and ctx.artifact_root else None)
    if stage.context_from:
        ran, grade = done[stage.context_from], trial_plan.grade_of(mode, stage.context_from)
        graded = done.get(grade.name) if grade else None
        record = FirstRunRecord(score=graded.score.plain().model_copy(update={"details": {}})
                                if graded and graded.score else None,
                                agent_error=ran.error_message if ran.error_kind else None,
                                grading_error=GRADING_FAILED if graded and graded.error_kind else None)  # never the grader's message
        return CreatePod(trial=t.name, role="agent", name=name, attempt=attempt, artifact_uri=out, stage=stage.name,
                         agent_artifacts_uri=attempt_prefix(ctx, t, attempt, stage.context_from), first_run=record,
                         skills_uri=skills_uri)
    return CreatePod(trial=t.name, role="agent", name=name, attempt=attempt, artifact_uri=out, stage=stage.name,
                     skills_uri=skills_uri)


def _stage_phase(t: TrialObs, s: TrialStatus, attempt: int, stage: str, pods: dict[str, PodObs],
                 ctx: TrialContext) -> list[Action]:
    """The current stage's pod (its creation was recorded with the previous stage, or at scheduling)."""
    name = stage_pod_name(t.name, attempt, stage)
    pod = pods.get(name)
    planned = trial_plan.stage(t.spec.mode, stage)
    grading = planned.role is Role.GRADE
    if pod is None:
        return _fail(t, s, ctx, "agent", Failure(ErrorKind.INFRA, "PodDeleted", f"{stage} pod {name} disappeared"))
    if pod.done:
        outcome, failure = stage_outcome(pod, planned)
        outcome = outcome.model_copy(update={"seconds": _run_seconds(pod)})
        base = s.model_copy(update={"usage": UsageStatus.of(s.usage.plain().add(outcome.usage.plain())),
                                    "phase_seconds": {**s.phase_seconds, stage: outcome.seconds}})
        if failure is not None:
            return _fail(t, base, ctx, "agent", failure)
        n = base.model_copy(update={"stages": [*s.stages, outcome],
                                    "artifacts": {**s.artifacts, stage: attempt_prefix(ctx, t, attempt, stage) or ""}})
        nxt = _next_pod(t, n, attempt, ctx)
        n = n.model_copy(update={"phase": TrialPhase.GRADING if nxt.role == "grade" else TrialPhase.AGENT})
        noted = f"; {outcome.error_kind.value}: {outcome.error_message}" if outcome.error_kind else ""
        events = [_event(t, "StageFinished", f"attempt {attempt}: {stage} finished{noted}; next: pod {nxt.name}",
                         "Warning" if outcome.error_kind else "Normal")]
        if nxt.stage == "execution":
            n = n.model_copy(update={"conditions": C.set_condition(
                n.conditions, C.SKILLS_READY, True, "SkillsWritten",
                f"attempt {attempt}: {stage} finished{noted}; the execution starts with its skills", ctx.now)})
        return [nxt, PatchTrial(t.name, s, n), *events]
    return _unfinished(t, s, ctx, pod, "agent", stage, ctx.grade_deadline(t) if grading else ctx.agent_deadline(t),
                       ErrorKind.GRADING_ERROR if grading else ErrorKind.AGENT_TIMEOUT,
                       f"{stage} pod {name} is being deleted ({pod.reason or 'no reason'})")


def _agent_phase(t: TrialObs, s: TrialStatus, attempt: int, pod: Optional[PodObs], pods: dict[str, PodObs],
                 ctx: TrialContext) -> list[Action]:
    if pod is None:
        return _fail(t, s, ctx, "agent", Failure(ErrorKind.INFRA, "PodDeleted",
                                                 f"agent pod {agent_pod_name(t.name, attempt)} disappeared"))
    if pod.done:
        outcome, failure = agent_outcome(pod)
        seconds = _run_seconds(pod)
        usage = UsageStatus.of(s.usage.plain().add(outcome.usage.plain()))
        base = s.model_copy(update={"usage": usage, "phase_seconds": {**s.phase_seconds, "agent": seconds}})
        graded_anyway = failure is not None and trial_plan.after_failure(
            ctx.retry, failure.kind, s.failures.get(failure.kind.value, 0) + 1, failure.evidence) is Next.GRADE
        if failure is not None and not graded_anyway:
            return _fail(t, base, ctx, "agent", failure)
        noted = f" ({failure.kind.value}: {failure.message}; no retry left, graded as the agent left it)" \
            if graded_anyway else ""
        artifacts = {**s.artifacts, "agent": attempt_prefix(ctx, t, attempt, "agent") or ""}
        n = base.model_copy(update={
            "agent": outcome, "phase": TrialPhase.GRADING, "agent_finished_at": C.ts(ctx.now), "artifacts": artifacts,
            "conditions": C.set_condition(s.conditions, C.AGENT_FINISHED, True, "Completed",
                                          f"attempt {attempt}: exit code {outcome.exit_code}", ctx.now),
        })
        # the agent pod has terminated (observed just now): the grading pod may start in the same pass
        grading = _grade_phase(t, n, attempt, pod, pods, ctx)
        return _fold(t, [PatchTrial(t.name, s, n),
                         _event(t, "AgentFinished", f"attempt {attempt} finished{noted}, grading next",
                                "Warning" if graded_anyway else "Normal"), *grading])
    return _unfinished(t, s, ctx, pod, "agent", "agent", ctx.agent_deadline(t), ErrorKind.AGENT_TIMEOUT,
                       f"agent pod {pod.name} is being deleted ({pod.reason or 'no reason'})")


def _grade_phase(t: TrialObs, s: TrialStatus, attempt: int, agent: Optional[PodObs], pods: dict[str, PodObs],
                 ctx: TrialContext) -> list[Action]:
    if agent is not None and not agent.done:
        return []  # the firewall: never grade while the agent pod can still run
    g = max(1, s.grade_attempt)
    name = grade_pod_name(t.name, attempt, g)
    pod = pods.get(name)
    if not s.grade_scheduled:
        n = s.model_copy(update={"grade_attempt": g, "grade_scheduled": True, "conditions": C.set_condition(
            s.conditions, C.GRADED, "Unknown", "Grading", f"grading pod {name}", ctx.now)})
        if pod is not None:  # created, but the status write was lost: adopt the pod
            return _patch(t, s, n, [])
        create = CreatePod(trial=t.name, role="grade", name=name, attempt=attempt, grade_attempt=g,
                           artifact_uri=attempt_prefix(ctx, t, attempt, f"grade{g}"),
                           agent_artifacts_uri=attempt_prefix(ctx, t, attempt, "agent"),
                           warmup_peer=_warmup_peer(s, agent))
        return [create, *_patch(t, s, n, [_event(t, "GradingStarted", f"pod {name}")])]
    if pod is None:
        return _fail(t, s, ctx, "grade", Failure(ErrorKind.INFRA, "PodDeleted", f"grading pod {name} disappeared"))
    if pod.done:
        score, failure = grade_outcome(pod)
        base = s.model_copy(update={"phase_seconds": {**s.phase_seconds, "grade": _run_seconds(pod)},
                                    "artifacts": {**s.artifacts, "grade": attempt_prefix(ctx, t, attempt, f"grade{g}") or ""}})
        if failure is not None:
            return _fail(t, base, ctx, "grade", failure)
        return _succeed(t, s, base, score, ctx)
    return _unfinished(t, s, ctx, pod, "grade", "grading", ctx.grade_deadline(t), ErrorKind.GRADING_ERROR,
                       f"grading pod {name} is being deleted")


def _unfinished(t: TrialObs, s: TrialStatus, ctx: TrialContext, pod: PodObs, phase: Literal["agent", "grade"],
                what: str, limit: int, late: ErrorKind, deleted: str) -> list[Action]:
    """A pod that has not finished (agent, grading or stage pod): being deleted, stuck Pending past the pending
    timeout, or running past `limit` + slack on the operator's clock each fail it (the last two delete it too)."""
    if pod.deleting:
        return _fail(t, s, ctx, phase, Failure(ErrorKind.INFRA, "PodDeleted", deleted))
    stuck = _stuck(pod, ctx)
    if stuck:
        return [DeletePod(t.name, pod.name, "PodStuck"),
                *_fail(t, s, ctx, phase, Failure(ErrorKind.INFRA, "PodStuck", stuck))]
    if _overtime(pod, limit + ctx.slack, ctx.now):
        return [DeletePod(t.name, pod.name, "DeadlineExceeded"),
                *_fail(t, s, ctx, phase, Failure(late, "DeadlineExceeded",
                                                 f"{what} pod ran past {limit}s (operator clock)"))]
    return []


def _succeed(t: TrialObs, before: TrialStatus, s: TrialStatus, score: ScoreStatus, ctx: TrialContext) -> list[Action]:
    conds = C.set_condition(s.conditions, C.GRADED, True, "Scored", f"score {score.score:.3f}", ctx.now)
    conds = C.set_condition(conds, C.SUCCEEDED, True, "Passed" if score.passed else "Graded",
                            f"score {score.score:.3f} (passed: {score.passed})", ctx.now)
    score = score.model_copy(update={"details": with_mode_details(score.details, mode_details(t, s))})
    agent_error = s.agent.error_kind if s.agent else None  # an agent error graded anyway stays on the record
    n = s.model_copy(update={"state": TrialState.SUCCEEDED, "phase": TrialPhase.DONE, "score": score,
                             "finished_at": C.ts(ctx.now), "conditions": conds, "error_kind": agent_error,
                             "error_message": s.agent.error_message if agent_error else None})
    actions = _patch(t, before, n, [_event(t, "Graded", f"score {score.score:.3f}, passed: {score.passed}")])
    return actions + _upload_if_due(t, n, ctx)


def mode_details(t: TrialObs, s: TrialStatus):
    """The mode details (contracts/details.py) from the recorded stages and the graded execution."""
    records = {st.name: StageRecord(name=st.name, usage=st.usage.plain(), error_kind=st.error_kind,
                                    error_message=st.error_message, skills=st.skills,
                                    score=st.score.plain() if st.score else None,
                                    created_skills=None if st.created_skills is None else
                                    [{"name": n} for n in st.created_skills],  # names: the full scan is an artifact
                                    skill_quality=st.skill_quality) for st in s.stages}
    execution = trial_plan.graded_execution(t.spec.mode).name
    agent = s.agent
    records[execution] = StageRecord(name=execution, usage=agent.usage.plain() if agent else UsageStatus().plain(),
                                     error_kind=agent.error_kind if agent else None,
                                     error_message=agent.error_message if agent else None,
                                     skills=agent.skills if agent else None)
    return build_mode_details(t.spec.mode, records)


def _fail(t: TrialObs, s: TrialStatus, ctx: TrialContext, phase: Literal["agent", "grade"],
          f: Failure) -> list[Action]:
    """Count the failure; retry (new attempt, or regrade) within the policy, else fail the trial for good."""
    before = t.status
    attempt = max(1, s.attempt)
    failures = {**s.failures, f.kind.value: s.failures.get(f.kind.value, 0) + 1}
    history = [*s.history, AttemptRecord(attempt=attempt, grade_attempt=s.grade_attempt if phase == "grade" else 0,
                                         error_kind=f.kind, reason=f.reason, message=f.message[:500], at=C.ts(ctx.now))]
    base = s.model_copy(update={"failures": failures, "history": history})
    if trial_plan.after_failure(ctx.retry, f.kind, failures[f.kind.value]) is Next.RETRY:
        tries = f"{failures[f.kind.value]}/{trial_plan.retry_limit(ctx.retry, f.kind)} {f.kind.value} failures"
        if phase == "agent":
            n = base.model_copy(update={
                "attempt": attempt + 1, "scheduled": False, "stages": [], "agent": None, "grade_attempt": 0,
                "grade_scheduled": False, "state": TrialState.PENDING, "phase": TrialPhase.QUEUED,
                "conditions": C.set_condition(s.conditions, C.SCHEDULED, False, "Retrying",
                                              f"attempt {attempt} failed ({f.reason}: {f.message}); {tries}", ctx.now)})
        else:
            n = base.model_copy(update={
                "grade_attempt": max(1, s.grade_attempt) + 1, "grade_scheduled": False,
                "conditions": C.set_condition(s.conditions, C.GRADED, False, "Retrying",
                                              f"{f.reason}: {f.message}; {tries}", ctx.now)})
        return _patch(t, before, n, [_event(t, "Retrying", f"{phase} {f.reason}: {f.message} ({tries})", "Warning")])
    conds = base.conditions
    if phase == "grade":
        conds = C.set_condition(conds, C.GRADED, False, f.reason, f.message, ctx.now)
    conds = C.set_condition(conds, C.FAILED, True, f.reason, f"{f.kind.value}: {f.message}", ctx.now)
    conds = C.set_condition(conds, C.SUCCEEDED, False, f.reason, f"{f.kind.value}: {f.message}", ctx.now)
    n = base.model_copy(update={"state": TrialState.FAILED, "phase": TrialPhase.DONE, "error_kind": f.kind,
                                "error_message": f.message, "finished_at": C.ts(ctx.now), "conditions": conds})
    actions = _patch(t, before, n, [_event(t, "Failed", f"{f.kind.value} ({f.reason}): {f.message}", "Warning")])
    return actions + _upload_if_due(t, n, ctx)


def _scheduled(s: TrialStatus, attempt: int, now: datetime) -> TrialStatus:
    return s.model_copy(update={
        "attempt": attempt, "scheduled": True, "state": TrialState.RUNNING, "phase": TrialPhase.AGENT,
        "scheduled_at": s.scheduled_at or C.ts(now),
        "conditions": C.set_condition(s.conditions, C.SCHEDULED, True, "PodCreated",
                                      f"attempt {attempt}: agent pod created", now)})


def _upload_if_due(t: TrialObs, s: TrialStatus, ctx: TrialContext) -> list[Action]:
    if C.is_true(s.conditions, C.ARTIFACTS_UPLOADED):
        return []
    prefix = trial_prefix(ctx, t)
    if prefix is None:
        return []
    if not upload_due(s.last_upload_attempt, s.upload_attempts, ctx.upload_retry_seconds, ctx.now):
        return []
    return [UploadResult(trial=t.name, prefix_uri=prefix, result=trial_result(t, s, ctx), status=s)]


def upload_due(last_attempt: Optional[str], attempts: int, retry_seconds: float, now: datetime) -> bool:
    """After a failed upload, the next try waits retry_seconds, doubling per attempt, at most 10 minutes."""
    last = C.parse_ts(last_attempt)
    return last is None or now >= last + timedelta(seconds=min(600.0, retry_seconds * 2 ** max(0, attempts - 1)))


def trial_result(t: TrialObs, s: TrialStatus, ctx: TrialContext) -> TrialResult:
    return TrialResult(
        task_id=t.spec.task_id, category=t.spec.category, task_format=t.spec.task_format,
        trial_index=t.spec.trial_index, attempt=max(1, s.attempt), state=s.state, error_kind=s.error_kind,
        error_message=s.error_message, score=s.score.plain() if s.score else None, usage=s.usage.plain(),
        phase_seconds=s.phase_seconds, started_at=s.scheduled_at, finished_at=s.finished_at,
        artifacts={k: v for k, v in s.artifacts.items()}, firewall="pod", agent=ctx.harness, model=ctx.model,
        mode=t.spec.mode.value, retries=retried(s))



def _fold(t: TrialObs, actions: list[Action]) -> list[Action]:
    """Several status patches of one pass -> one (first `before` -> last `status`), after any pod creation,
    so a crash between the two never leaves a status that claims a pod which does not exist."""
    patches = [a for a in actions if isinstance(a, PatchTrial)]
    if len(patches) <= 1:
        return actions
    merged = PatchTrial(t.name, patches[0].before, patches[-1].status)
    creates = [a for a in actions if isinstance(a, CreatePod)]
    rest = [a for a in actions if not isinstance(a, (PatchTrial, CreatePod))]
    return [*creates, merged, *rest]


def _patch(t: TrialObs, before: TrialStatus, after: TrialStatus, events: list[Emit]) -> list[Action]:
    if after == before:
        return []
    return [PatchTrial(t.name, before, after), *events]


def _event(t: TrialObs, reason: str, message: str, type_: Literal["Normal", "Warning"] = "Normal") -> Emit:
    return Emit(kind="TaskTrial", name=t.name, reason=reason, message=message, type=type_)


def _stuck(pod: PodObs, ctx: TrialContext) -> str:
    if pod.phase != "Pending" or pod.created_at is None:
        return ""
    if ctx.now - pod.created_at <= timedelta(seconds=ctx.pending_timeout):
        return ""
    why = pod.unschedulable or pod.waiting_reason or "no progress"
    return f"pod {pod.name} Pending for more than {ctx.pending_timeout}s: {why}"


def _overtime(pod: PodObs, limit: int, now: datetime) -> bool:
    start = pod.started_at or pod.created_at
    return pod.phase == "Running" and start is not None and now - start > timedelta(seconds=limit)


def _run_seconds(pod: PodObs) -> float:
    start = pod.started_at or pod.created_at
    end = pod.terminated.finished_at if pod.terminated and pod.terminated.finished_at else None
    if start is None or end is None:
        return 0.0
    return max(0.0, (end - start).total_seconds())
