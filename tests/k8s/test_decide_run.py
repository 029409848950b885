"""Table tests of the run-level decision: staging, trial creation, parallelism, budgets, fairness, status."""
from __future__ import annotations

from dataclasses import replace

from clawkube.artifacts.uri import S3Uri
from clawkube.k8s import conditions as C
from clawkube.k8s.actions import CreatePod, CreateTrial, Emit, PatchRun, StageTasks, UploadSummary
from clawkube.k8s.decide_run import RunContext, decide_run, demand
from clawkube.k8s.model import RunPhase, RunStatus, TrialStatus
from clawkube.k8s.names import trial_name
from clawkube.k8s.schedule import Demand, budget_state, fair_shares
from clawkube.results.model import TrialState, Usage
from clawkube.runspec import Budgets
from tests.k8s.builders import T0, at, pod, run_obs, task_ref, trial

CTX = RunContext(now=at(10), artifact_root=S3Uri("bkt", "pre"))


def staged_status(tasks=("t1", "t2")) -> RunStatus:
    conds = C.set_condition([], C.TASKS_LOADED, True, "Staged", "", T0, 1)
    return RunStatus(phase=RunPhase.PENDING, conditions=conds, tasks=[task_ref(t) for t in tasks])


def trials_for(tasks=("t1", "t2"), n=1, status=None):
    return [trial(trial_name("r", t, i), status=status, task=t, index=i) for t in tasks for i in range(n)]


def finish(r, slots=5):
    """Two passes over a run whose trials are all done: the first writes summary.json (UploadSummary; still
    Running), the second, with SummaryUploaded set as the actuator would, completes it. -> (actions of pass 2,
    the UploadSummary of pass 1)."""
    first = decide_run(r, CTX, slots=slots)
    st = next(a for a in first if isinstance(a, PatchRun)).status
    assert st.phase == RunPhase.RUNNING and C.get(st.conditions, C.PROGRESSING).reason == "WritingSummary"
    (up,) = [a for a in first if isinstance(a, UploadSummary)]
    assert up.prefix_uri == "s3://bkt/pre/r/" and up.summary == st.summary and up.run_record["tasks"]
    uploaded = st.model_copy(update={"conditions": C.set_condition(st.conditions, C.SUMMARY_UPLOADED, True,
                                                                   "Uploaded", "", T0)})
    return decide_run(replace(r, status=uploaded), CTX, slots=slots), up


def agent_creates(actions):
    return [a for a in actions if isinstance(a, CreatePod) and a.role == "agent"]


def test_unstaged_run_stages_first_and_does_nothing_else():
    assert decide_run(run_obs(), CTX, slots=10) == [StageTasks("r")]


def test_failed_staging_is_retried_only_for_a_new_generation():
    conds = C.set_condition([], C.TASKS_LOADED, False, "NoTasks", "x", T0, 1)
    st = RunStatus(phase=RunPhase.FAILED, conditions=conds)
    assert decide_run(run_obs(status=st, generation=1), CTX, 10) == []
    assert decide_run(run_obs(status=st, generation=2), CTX, 10) == [StageTasks("r")]


def test_no_artifact_store_fails_the_run_with_a_reason():
    actions = decide_run(run_obs(), RunContext(now=at(1), artifact_root=None), 10)
    patch = next(a for a in actions if isinstance(a, PatchRun))
    assert patch.status.phase == RunPhase.FAILED
    assert C.get(patch.status.conditions, C.READY).reason == "NoArtifactStore"


def test_a_single_mode_run_creates_trials_of_that_mode_with_plain_names():
    actions = decide_run(run_obs(status=staged_status(("t1",)), trials=2, mode="postskill"), CTX, 10)
    creates = [a for a in actions if isinstance(a, CreateTrial)]
    assert sorted(a.name for a in creates) == ["r-t1-0", "r-t1-1"]
    assert {a.spec.mode.value for a in creates} == {"postskill"}


def test_a_run_of_several_modes_creates_tasks_times_modes_times_trials():
    actions = decide_run(run_obs(status=staged_status(), trials=2, modes=["baseline", "preskill", "postskill"]),
                         CTX, 10)
    creates = {a.name: a.spec for a in actions if isinstance(a, CreateTrial)}
    assert sorted(creates) == sorted(trial_name("r", t, i, m) for t in ("t1", "t2")
                                     for m in ("baseline", "preskill", "postskill") for i in range(2))
    assert creates["r-t1-preskill-1"].mode.value == "preskill" and creates["r-t1-preskill-1"].trial_index == 1
    patch = next(a for a in actions if isinstance(a, PatchRun))
    assert patch.status.counts.total == 12 and patch.status.progress == "0/12"
    assert "x 3 modes (baseline, preskill, postskill)" in C.get(patch.status.conditions, C.READY).message


def test_staged_run_creates_tasks_times_trials():
    actions = decide_run(run_obs(status=staged_status(), trials=3), CTX, 10)
    names = sorted(a.name for a in actions if isinstance(a, CreateTrial))
    assert names == sorted(trial_name("r", t, i) for t in ("t1", "t2") for i in range(3))
    assert all(a.spec.agent_bundle.endswith("-agent") for a in actions if isinstance(a, CreateTrial))


def test_existing_trials_are_not_created_again():
    r = run_obs(status=staged_status(), trial_objs=trials_for())
    assert not any(isinstance(a, CreateTrial) for a in decide_run(r, CTX, 10))


def test_parallelism_caps_starts():
    r = run_obs(status=staged_status(("t1", "t2", "t3")), trial_objs=trials_for(("t1", "t2", "t3"), n=2), parallelism=2)
    assert len(agent_creates(decide_run(r, CTX, slots=10))) == 2


def test_granted_slots_cap_starts():
    r = run_obs(status=staged_status(), trial_objs=trials_for(n=2), parallelism=10)
    assert len(agent_creates(decide_run(r, CTX, slots=1))) == 1


def test_in_flight_trials_count_against_parallelism():
    busy = TrialStatus(attempt=1, scheduled=True, state=TrialState.RUNNING)
    ts = trials_for(("t1",), n=1, status=busy) + trials_for(("t2",), n=2)
    running = pod(trial_name("r", "t1", 0) + "-a1-agent", "Running", started=1)
    r = run_obs(status=staged_status(), trial_objs=ts, parallelism=2, pods={running.name: running})
    assert len(agent_creates(decide_run(r, CTX, slots=10))) == 1
    assert demand(r) == Demand("ns/r", running=1, wanted=1)


def test_start_order_is_lower_trial_index_first():
    r = run_obs(status=staged_status(), trial_objs=trials_for(n=2), parallelism=2)
    started = {a.trial for a in agent_creates(decide_run(r, CTX, slots=2))}
    assert started == {trial_name("r", "t1", 0), trial_name("r", "t2", 0)}


def test_budget_exhausted_stops_scheduling_but_lets_running_trials_finish():
    spent = TrialStatus(attempt=1, scheduled=True, state=TrialState.RUNNING,
                        usage={"total_tokens": 500, "input_tokens": 500})
    ts = trials_for(("t1",), status=spent) + trials_for(("t2",))
    running = pod(trial_name("r", "t1", 0) + "-a1-agent", "Running", started=1)
    r = run_obs(status=staged_status(), trial_objs=ts, budgets={"maxTokens": 400}, parallelism=5,
                pods={running.name: running})
    actions = decide_run(r, CTX, slots=5)
    assert agent_creates(actions) == []
    assert demand(r).wanted == 0
    patch = next(a for a in actions if isinstance(a, PatchRun))
    assert C.is_true(patch.status.conditions, C.BUDGET_EXHAUSTED)
    assert patch.status.phase == RunPhase.RUNNING  # t1 is still in flight
    assert any(isinstance(a, Emit) and a.reason == "BudgetExhausted" for a in actions)


def test_budget_exhausted_and_nothing_in_flight_completes_the_run():
    done = TrialStatus(attempt=1, scheduled=True, state=TrialState.SUCCEEDED, score={"score": 1, "passed": True},
                       usage={"cost_usd": 2.0},
                       conditions=C.set_condition([], C.ARTIFACTS_UPLOADED, True, "Uploaded", "", T0))
    ts = trials_for(("t1",), status=done) + trials_for(("t2",))
    r = run_obs(status=staged_status(), trial_objs=ts, budgets={"maxCostUsd": 1.5})
    patch = next(a for a in finish(r)[0] if isinstance(a, PatchRun))
    assert patch.status.phase == RunPhase.SUCCEEDED
    assert C.get(patch.status.conditions, C.SUCCEEDED).reason == "BudgetExhausted"
    assert patch.status.counts.queued == 1 and patch.status.counts.succeeded == 1


def test_run_status_aggregates_trials():
    def graded(score, tokens):
        return TrialStatus(attempt=1, scheduled=True, state=TrialState.SUCCEEDED,
                           score={"score": score, "passed": score >= 0.75}, usage={"input_tokens": tokens},
                           conditions=C.set_condition([], C.ARTIFACTS_UPLOADED, True, "Uploaded", "", T0))
    failed = TrialStatus(attempt=2, scheduled=True, state=TrialState.FAILED, error_kind="agent_error",
                         conditions=C.set_condition([], C.ARTIFACTS_UPLOADED, True, "Uploaded", "", T0))
    ts = [trial(trial_name("r", "t1", 0), graded(1.0, 10), task="t1"),
          trial(trial_name("r", "t2", 0), graded(0.5, 20), task="t2"),
          trial(trial_name("r", "t3", 0), failed, task="t3")]
    r = run_obs(status=staged_status(("t1", "t2", "t3")), trial_objs=ts)
    actions, up = finish(r)
    assert up.summary["overall"]["trials_finished"] == 3 and up.run_record["tasks"] == ["t1", "t2", "t3"]
    st = next(a for a in actions if isinstance(a, PatchRun)).status
    assert st.phase == RunPhase.SUCCEEDED and st.progress == "3/3"
    assert st.mean_score == 0.75 and st.pass_rate == round(1 / 3, 4)
    assert st.usage.input_tokens == 30 and st.failures == {"agent_error": 1}
    assert st.counts.succeeded == 2 and st.counts.failed == 1
    assert st.summary["overall"]["trials_finished"] == 3
    assert any(isinstance(a, Emit) and a.reason == "Completed" for a in actions)


def test_run_not_complete_until_results_uploaded():
    done = TrialStatus(attempt=1, scheduled=True, state=TrialState.SUCCEEDED, score={"score": 1, "passed": True})
    r = run_obs(status=staged_status(("t1",)), trial_objs=trials_for(("t1",), status=done))
    st = next(a for a in decide_run(r, CTX, 5) if isinstance(a, PatchRun)).status
    assert st.phase == RunPhase.RUNNING


def test_status_write_is_skipped_when_nothing_changed():
    r = run_obs(status=staged_status(), trial_objs=trials_for())
    first = next(a for a in decide_run(r, CTX, slots=0) if isinstance(a, PatchRun)).status
    again = run_obs(status=first, trial_objs=trials_for())
    assert decide_run(again, CTX, slots=0) == []


# ---------------------------------------------------------------- schedule

def test_fair_shares_water_filling():
    demands = [Demand("a", running=4, wanted=10), Demand("b", running=0, wanted=10), Demand("c", running=0, wanted=1)]
    assert fair_shares(5, demands) == {"a": 0, "b": 4, "c": 1}
    assert fair_shares(None, demands) == {"a": 10, "b": 10, "c": 1}
    assert fair_shares(0, demands) == {"a": 0, "b": 0, "c": 0}
    assert fair_shares(3, [Demand("x", 0, 10), Demand("y", 0, 10)]) == {"x": 2, "y": 1}
    assert sum(fair_shares(100, demands).values()) == 21


def test_budget_state_counts_input_plus_output_when_total_missing():
    b = budget_state(Budgets(max_tokens=100), [Usage(input_tokens=60, output_tokens=50)])
    assert b.exhausted and b.tokens == 110
    assert not budget_state(Budgets(), [Usage(total_tokens=10**9, cost_usd=10**6)]).exhausted


def _all_done(tasks=("t1",)):
    done = TrialStatus(attempt=1, scheduled=True, state=TrialState.SUCCEEDED, score={"score": 1, "passed": True},
                       failures={"infra": 1},  # its first agent pod was deleted: retried
                       conditions=C.set_condition([], C.ARTIFACTS_UPLOADED, True, "Uploaded", "", T0))
    return trials_for(tasks, status=done)


def test_the_run_succeeds_only_once_summary_json_is_written():
    r = run_obs(status=staged_status(("t1",)), trial_objs=_all_done())
    first = decide_run(r, CTX, 5)
    st = next(a for a in first if isinstance(a, PatchRun)).status
    assert st.phase == RunPhase.RUNNING and "summary.json under s3://bkt/pre/r/" in \
        C.get(st.conditions, C.PROGRESSING).message
    assert st.retries == {"infra": 1} and st.summary["retries"]["infra"] == 1  # the deleted pod's retry counts
    # the upload failed: retried after the backoff, the failure named in Progressing
    failed = st.model_copy(update={"summary_upload_attempts": 1, "last_summary_upload": C.ts(at(10)),
                                   "conditions": C.set_condition(st.conditions, C.SUMMARY_UPLOADED, False,
                                                                 "UploadFailed", "S3 down", T0)})
    again = decide_run(replace(r, status=failed), RunContext(now=at(15), artifact_root=S3Uri("bkt", "pre")), 5)
    assert not any(isinstance(a, UploadSummary) for a in again)
    st2 = next(a for a in again if isinstance(a, PatchRun)).status
    assert st2.phase == RunPhase.RUNNING and "S3 down" in C.get(st2.conditions, C.PROGRESSING).message
    later = decide_run(replace(r, status=st2), RunContext(now=at(25), artifact_root=S3Uri("bkt", "pre")), 5)
    assert any(isinstance(a, UploadSummary) for a in later)
    actions, _ = finish(r)
    st3 = next(a for a in actions if isinstance(a, PatchRun)).status
    assert st3.phase == RunPhase.SUCCEEDED and not any(isinstance(a, UploadSummary) for a in actions)


def test_tasks_that_did_not_load_fail_the_run_after_the_others_finish():
    status = staged_status(("t1",)).model_copy(update={"task_errors": ["evo.md: field 'workspace_files': missing"]})
    r = run_obs(status=status, trial_objs=_all_done())
    actions, up = finish(r)
    assert up.run_record["task_errors"] == ["evo.md: field 'workspace_files': missing"]
    st = next(a for a in actions if isinstance(a, PatchRun)).status
    assert st.phase == RunPhase.FAILED and st.counts.succeeded == 1  # the results that were obtained are kept
    cond = C.get(st.conditions, C.SUCCEEDED)
    assert cond.status == "False" and cond.reason == "TasksNotLoaded" and "workspace_files" in cond.message
    assert any(isinstance(a, Emit) and a.reason == "Failed" for a in actions)
