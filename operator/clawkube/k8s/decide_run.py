"""The per-run decision (pure): observed run + its trials + pods + granted slots + `now` -> actions.

Order of business: validate the spec -> stage the tasks (once per generation) -> create the TaskTrials
(tasks x modes x trials) -> start queued trials within the slots granted and the budgets -> each trial's own
state machine (decide_trial) -> the run's status (counts, aggregates, conditions) and events.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Optional

from ..artifacts.uri import S3Uri
from ..runspec import EvalMode
from . import aggregate
from . import conditions as C
from .actions import Action, CreateTrial, Emit, PatchRun, PatchTrial, StageTasks, UploadSummary
from .decide_trial import TrialContext, _folder, decide_trial, trial_result, upload_due
from .model import RunPhase, RunStatus, TaskTrialSpec, TrialStatus, UsageStatus
from .names import trial_name
from .observe import RunObs
from .schedule import Demand, budget_state, in_flight, queued


WRITING_SUMMARY = "WritingSummary"  # Progressing's reason between the last trial and summary.json


@dataclass(frozen=True)
class RunContext:
    now: datetime
    artifact_root: Optional[S3Uri]  # resolved: spec.artifacts or the operator's default store
    pending_timeout: int = 600
    agent_grace: int = 300
    grade_grace: int = 300
    slack: int = 60
    upload_retry_seconds: float = 10.0


def key(run: RunObs) -> str:
    return f"{run.namespace}/{run.name}"


def staged(run: RunObs) -> bool:
    c = C.get(run.status.conditions, C.TASKS_LOADED)
    return c is not None and c.status == "True"


def demand(run: RunObs) -> Demand:
    """How many more trials this run could start now (parallelism, budget and queue permitting)."""
    running = in_flight(run.trials)
    if run.spec is None or not staged(run) or run.status.phase in (RunPhase.SUCCEEDED, RunPhase.FAILED):
        return Demand(key(run), running, 0)
    if budget_state(run.spec.budgets, [t.status.usage.plain() for t in run.trials]).exhausted:
        return Demand(key(run), running, 0)
    wanted = min(run.spec.parallelism - running, len(queued(run.trials)))
    return Demand(key(run), running, max(0, wanted))


def decide_run(run: RunObs, ctx: RunContext, slots: int) -> list[Action]:
    s = run.status
    if run.spec is None:
        return _status(run, _failed(s, run, ctx, "InvalidSpec", run.spec_error))
    if ctx.artifact_root is None:
        return _status(run, _failed(s, run, ctx, "NoArtifactStore",
                                    "spec.artifacts is not set and the operator has no default store "
                                    "(CLAWKUBE_ARTIFACT_BUCKET): pods hand results over through S3"))
    loaded = C.get(s.conditions, C.TASKS_LOADED)
    if loaded is None or (loaded.status != "True" and (loaded.observed_generation or 0) < run.generation):
        return [StageTasks(run.name)]
    if loaded.status != "True":
        return []  # staging failed for this generation; the act step recorded why (phase Failed)

    spec = run.spec
    actions: list[Action] = []
    by_name = {t.name: t for t in run.trials}
    modes = spec.mode_list()
    several = len(modes) > 1
    for ref in s.tasks:
        for mode in modes:
            for i in range(spec.trials):
                name = trial_name(run.name, ref.id, i, mode if several else None)
                if name not in by_name:
                    actions.append(CreateTrial(name, TaskTrialSpec(
                        run=run.name, task_id=ref.id, category=ref.category, task_format=ref.format, trial_index=i,
                        content_hash=ref.content_hash, agent_bundle=ref.agent_bundle,
                        grading_bundle=ref.grading_bundle, timeout_seconds=ref.timeout_seconds,
                        grader_timeout_seconds=ref.grader_timeout_seconds, services=ref.services,
                        warmup=ref.warmup, mode=EvalMode(mode))))

    budget = budget_state(spec.budgets, [t.status.usage.plain() for t in run.trials])
    starts = 0 if budget.exhausted else max(0, min(slots, spec.parallelism - in_flight(run.trials)))
    chosen = {t.name for t in queued(run.trials)[:starts]}
    tctx = TrialContext(
        now=ctx.now, run=run.name, retry=spec.retry, artifact_root=ctx.artifact_root, harness=spec.agent.harness,
        model=spec.agent.model, several_modes=several, timeout_override=spec.timeout_seconds,
        pending_timeout=ctx.pending_timeout, agent_grace=ctx.agent_grace, grade_grace=ctx.grade_grace,
        slack=ctx.slack, upload_retry_seconds=ctx.upload_retry_seconds)
    after: dict[str, TrialStatus] = {t.name: t.status for t in run.trials}
    for t in sorted(run.trials, key=lambda t: t.name):
        trial_actions = decide_trial(t, run.pods, tctx, may_start=t.name in chosen)
        for a in trial_actions:
            if isinstance(a, PatchTrial):
                after[a.name] = a.status
        actions += trial_actions

    statuses = list(after.values())
    results = [trial_result(t, after[t.name], tctx) for t in run.trials if after[t.name].finished]
    expected = len(s.tasks) * spec.trials * len(modes)
    budget_after = budget_state(spec.budgets, [st.usage.plain() for st in statuses])
    new = _running_status(run, ctx, statuses, results, expected, budget_after)
    return actions + _status(run, new) + _upload_summary_if_due(run, ctx, new)


def summary_prefix(ctx: RunContext, run: RunObs) -> str:
    """s3://bucket/<prefix>/<run>/: where the run's summary.json and run.json go (its trials are below it)."""
    assert ctx.artifact_root is not None
    return _folder(ctx.artifact_root, run.name)


def _upload_summary_if_due(run: RunObs, ctx: RunContext, s: RunStatus) -> list[Action]:
    """Once every trial has finished and uploaded: summary.json + run.json (retried with backoff until written;
    the run reads Succeeded only after that)."""
    if s.phase != RunPhase.RUNNING or not _trials_finished(s) or C.is_true(s.conditions, C.SUMMARY_UPLOADED):
        return []
    if not upload_due(s.last_summary_upload, s.summary_upload_attempts, ctx.upload_retry_seconds, ctx.now):
        return []
    spec = run.spec
    record = {"run": run.name, "namespace": run.namespace, "modes": spec.mode_list(),
              "spec": spec.model_dump(mode="json", by_alias=True), "tasks": [t.id for t in s.tasks],
              "task_errors": s.task_errors}
    return [UploadSummary(run=run.name, prefix_uri=summary_prefix(ctx, run), summary=s.summary or {},
                          run_record=record, status=s)]


def _trials_finished(s: RunStatus) -> bool:
    c = C.get(s.conditions, C.PROGRESSING)
    return c is not None and c.reason == WRITING_SUMMARY


def _running_status(run: RunObs, ctx: RunContext, statuses: list[TrialStatus], results, expected: int,
                    budget) -> RunStatus:
    s, spec, now, gen = run.status, run.spec, ctx.now, run.generation
    c = aggregate.counts(statuses, expected)
    uploaded = all(C.is_true(st.conditions, C.ARTIFACTS_UPLOADED) for st in statuses if st.finished)
    all_done = len(statuses) == expected and all(st.finished for st in statuses)
    stopped = budget.exhausted and (c.running + c.grading) == 0
    finished = (all_done or stopped) and uploaded
    done = finished and C.is_true(s.conditions, C.SUMMARY_UPLOADED)
    modes = spec.mode_list()
    conds = C.set_condition(s.conditions, C.READY, True, "Staged",
                            f"{len(s.tasks)} tasks x {spec.trials} trials" +
                            (f" x {len(modes)} modes ({', '.join(modes)})" if len(modes) > 1 else ""), now, gen)
    conds = C.set_condition(conds, C.BUDGET_EXHAUSTED, budget.exhausted,
                            "LimitReached" if budget.exhausted else "WithinBudget", budget.message, now, gen)
    msg = (f"{c.succeeded} graded, {c.failed} failed" +
           (f", {c.queued} not started (budget)" if not all_done else ""))
    if done:
        why = "BudgetExhausted" if not all_done else "AllTrialsFinished"
        conds = C.set_condition(conds, C.PROGRESSING, False, why, msg, now, gen)
        if s.task_errors:  # a task that did not load is a failed run, whatever the others scored
            conds = C.set_condition(conds, C.SUCCEEDED, False, "TasksNotLoaded",
                                    f"{len(s.task_errors)} task(s) could not be loaded ({s.task_errors[0]}); "
                                    f"{msg}", now, gen)
        else:
            conds = C.set_condition(conds, C.SUCCEEDED, True, why, msg, now, gen)
    elif finished:
        pending = C.get(s.conditions, C.SUMMARY_UPLOADED)
        why = f"; last try: {pending.message}" if pending is not None and pending.status == "False" else ""
        conds = C.set_condition(conds, C.PROGRESSING, True, WRITING_SUMMARY,
                                f"{msg}; writing summary.json under {summary_prefix(ctx, run)}{why}", now, gen)
    else:
        conds = C.set_condition(conds, C.PROGRESSING, True, "TrialsRunning",
                                f"{c.running} running, {c.grading} grading, {c.queued} queued", now, gen)
    phase = RunPhase.RUNNING if not done else RunPhase.FAILED if s.task_errors else RunPhase.SUCCEEDED
    return s.model_copy(update={
        "phase": phase,
        "observed_generation": gen, "conditions": conds, "counts": c,
        "progress": f"{c.succeeded + c.failed}/{expected}",
        "mean_score": aggregate.mean_score(statuses), "pass_rate": aggregate.pass_rate(statuses),
        "usage": UsageStatus.of(aggregate.total_usage(statuses)), "failures": aggregate.failures(statuses),
        "retries": aggregate.retries(statuses),
        "summary": aggregate.run_summary(results, spec.trials, [t.id for t in s.tasks], modes),
        "started_at": s.started_at or C.ts(now),
        "finished_at": (s.finished_at or C.ts(now)) if done else None,
    })


def _failed(s: RunStatus, run: RunObs, ctx: RunContext, reason: str, message: str) -> RunStatus:
    conds = C.set_condition(s.conditions, C.READY, False, reason, message, ctx.now, run.generation)
    conds = C.set_condition(conds, C.SUCCEEDED, False, reason, message, ctx.now, run.generation)
    return s.model_copy(update={"phase": RunPhase.FAILED, "observed_generation": run.generation,
                                "conditions": conds, "finished_at": s.finished_at or C.ts(ctx.now)})


_EVENTS = {RunPhase.RUNNING: ("Started", "Normal"), RunPhase.SUCCEEDED: ("Completed", "Normal"),
           RunPhase.FAILED: ("Failed", "Warning")}


def _status(run: RunObs, new: RunStatus) -> list[Action]:
    old = run.status
    if new == old:
        return []
    out: list[Action] = [PatchRun(old, new)]
    if new.phase != old.phase and new.phase in _EVENTS:
        reason, typ = _EVENTS[new.phase]
        cond = C.get(new.conditions, C.SUCCEEDED if new.phase != RunPhase.RUNNING else C.PROGRESSING)
        out.append(Emit("BenchmarkRun", run.name, reason, cond.message if cond else new.phase.value, typ))
    if C.is_true(new.conditions, C.BUDGET_EXHAUSTED) and not C.is_true(old.conditions, C.BUDGET_EXHAUSTED):
        cond = C.get(new.conditions, C.BUDGET_EXHAUSTED)
        out.append(Emit("BenchmarkRun", run.name, "BudgetExhausted", cond.message, "Warning"))
    return out
