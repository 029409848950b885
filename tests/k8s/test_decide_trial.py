"""Table tests of the per-trial state machine (pure: observed trial + pods + now -> actions)."""
from __future__ import annotations

import pytest

from clawkube.artifacts.uri import S3Uri
from clawkube.k8s import conditions as C
from clawkube.k8s.actions import CreatePod, DeletePod, PatchTrial, UploadResult
from clawkube.k8s.decide_trial import TrialContext, decide_trial
from clawkube.k8s.model import TrialStatus
from clawkube.k8s.observe import TrialObs
from clawkube.results.model import ErrorKind, TrialState
from clawkube.runspec import RetryPolicy
from tests.k8s.builders import agent_ok, at, grade_ok, pod, trial

A1, G1 = "r-t1-0-a1-agent", "r-t1-0-a1-grade"


def ctx(now: float = 20, **kw) -> TrialContext:
    return TrialContext(now=at(now), run="r", artifact_root=S3Uri("bkt", "pre"), pending_timeout=100,
                        agent_grace=10, grade_grace=10, slack=5, **kw)


def step(t: TrialObs, pods: dict, c: TrialContext, may_start: bool = False):
    actions = decide_trial(t, {p.name: p for p in pods}, c, may_start)
    patches = [a for a in actions if isinstance(a, PatchTrial)]
    assert len(patches) <= 1, "one status write per trial per pass"
    new = TrialObs(**{**t.__dict__, "status": patches[-1].status}) if patches else t
    return actions, new


def scheduled(**kw) -> TrialStatus:
    base = dict(attempt=1, scheduled=True, state=TrialState.RUNNING, phase="Agent", scheduled_at="2025-01-01T12:00:00Z")
    return TrialStatus(**{**base, **kw})


def agent_done(**kw) -> TrialStatus:
    _, t = step(trial(status=scheduled()), [pod(A1, "Succeeded", started=1, message=agent_ok())], ctx())
    return t.status.model_copy(update=kw)


def kinds(actions) -> list[str]:
    return [type(a).__name__ + (f":{a.role}" if isinstance(a, CreatePod) else "") for a in actions]


# ---------------------------------------------------------------- scheduling

def test_queued_without_slot_does_nothing():
    assert decide_trial(trial(), {}, ctx(), may_start=False) == []


def test_queued_with_slot_creates_agent_pod_then_records_it():
    actions, t = step(trial(), [], ctx(), may_start=True)
    assert kinds(actions)[:2] == ["CreatePod:agent", "PatchTrial"]
    create = actions[0]
    assert create.name == A1 and create.artifact_uri == "s3://bkt/pre/r/t1/0/a1/agent/"
    assert t.status.scheduled and t.status.attempt == 1 and C.is_true(t.status.conditions, C.SCHEDULED)


def test_lost_status_write_adopts_existing_pod_instead_of_creating():
    actions, t = step(trial(), [pod(A1)], ctx(), may_start=True)
    assert kinds(actions) == ["PatchTrial"]
    assert t.status.scheduled


# ---------------------------------------------------------------- firewall

@pytest.mark.parametrize("agent", [
    pod(A1, "Pending"),
    pod(A1, "Running", started=1),
    pod(A1, "Running", started=1, deleting=True),
    pod(A1, "Unknown"),
])
def test_no_grading_pod_while_agent_pod_may_still_run(agent):
    actions, _ = step(trial(status=scheduled()), [agent], ctx(), may_start=True)
    assert not any(isinstance(a, CreatePod) and a.role == "grade" for a in actions)


def test_grading_pod_never_created_while_agent_pod_runs_even_if_status_says_agent_finished():
    # a status that (wrongly) claims the agent finished while its pod still runs: still no grading pod
    s = scheduled(agent={"exitCode": 0}, phase="Grading")
    actions, _ = step(trial(status=s), [pod(A1, "Running", started=1)], ctx())
    assert not any(isinstance(a, CreatePod) for a in actions)


def test_agent_terminated_ok_records_outcome_and_starts_grading():
    actions, t = step(trial(status=scheduled()), [pod(A1, "Succeeded", started=1, message=agent_ok(tokens=70))], ctx())
    assert kinds(actions)[:2] == ["CreatePod:grade", "PatchTrial"]
    g = actions[0]
    assert g.name == G1 and g.agent_artifacts_uri == "s3://bkt/pre/r/t1/0/a1/agent/"
    assert g.artifact_uri == "s3://bkt/pre/r/t1/0/a1/grade1/"
    s = t.status
    assert s.agent is not None and s.usage.total_tokens == 70 and s.grade_scheduled
    assert C.is_true(s.conditions, C.AGENT_FINISHED) and s.phase_seconds["agent"] == 10


# ---------------------------------------------------------------- agent failures and retries

@pytest.mark.parametrize("agent,kind,reason", [
    (None, ErrorKind.INFRA, "PodDeleted"),
    (pod(A1, "Failed", reason="Evicted", message=None), ErrorKind.INFRA, "Evicted"),
    (pod(A1, "Running", deleting=True, started=1), ErrorKind.INFRA, "PodDeleted"),
    (pod(A1, "Failed", exit_code=137, term_reason="OOMKilled"), ErrorKind.AGENT_ERROR, "OOMKilled"),
    (pod(A1, "Failed", reason="DeadlineExceeded"), ErrorKind.AGENT_TIMEOUT, "DeadlineExceeded"),
    (pod(A1, "Failed", exit_code=1), ErrorKind.INFRA, "NoTerminationMessage"),
    # reported, but its artifacts never reached the store: nothing to grade
    (pod(A1, "Succeeded", message={**agent_ok(), "error_kind": "agent_error", "error_message": "boom",
                                   "upload_error": "EndpointConnectionError"}), ErrorKind.AGENT_ERROR, "AgentError"),
    (pod(A1, "Succeeded", message={**agent_ok(), "error_kind": "infra"}), ErrorKind.INFRA, "Infra"),
    (pod(A1, "Succeeded", message={**agent_ok(), "error_kind": "agent_eror"}), ErrorKind.INFRA,
     "BadTerminationMessage"),  # a misspelt field value is an error, not silently dropped
    (pod(A1, "Succeeded", message={**agent_ok(), "exitcode": 0}), ErrorKind.INFRA, "BadTerminationMessage"),
    (pod(A1, "Succeeded", message={**agent_ok(), "upload_error": "EndpointConnectionError"}), ErrorKind.INFRA,
     "ArtifactUploadFailed"),
])
def test_agent_failure_kinds(agent, kind, reason):
    retry = RetryPolicy(agent_timeout=1, agent_error=1, infra=2)
    actions, t = step(trial(status=scheduled()), [agent] if agent else [], ctx(retry=retry))
    s = t.status
    assert s.failures == {kind.value: 1}
    assert s.history[-1].reason == reason and s.history[-1].error_kind == kind
    if kind == ErrorKind.INFRA:  # limit 2: retried as attempt 2
        assert not s.finished and s.attempt == 2 and not s.scheduled and s.agent is None
        assert C.get(s.conditions, C.SCHEDULED).reason == "Retrying"
    else:  # limit 1: failed for good
        assert s.state == TrialState.FAILED and s.error_kind == kind
        assert C.is_true(s.conditions, C.FAILED)
        assert any(isinstance(a, UploadResult) for a in actions)


REPORTED = [({**agent_ok(), "timed_out": True}, ErrorKind.AGENT_TIMEOUT),
            ({**agent_ok(), "error_kind": "agent_error", "error_message": "boom"}, ErrorKind.AGENT_ERROR)]


@pytest.mark.parametrize("message,kind", REPORTED)
def test_a_reported_agent_failure_is_retried_within_its_policy(message, kind):
    retry = RetryPolicy(agent_timeout=2, agent_error=2)
    _, t = step(trial(status=scheduled()), [pod(A1, "Succeeded", message=message)], ctx(retry=retry))
    s = t.status
    assert s.failures == {kind.value: 1} and s.attempt == 2 and not s.scheduled and not s.finished


@pytest.mark.parametrize("message,kind", REPORTED)
def test_a_reported_agent_failure_without_retries_left_is_graded_with_its_error(message, kind):
    retry = RetryPolicy(agent_timeout=2, agent_error=2)
    earlier = scheduled(attempt=2, failures={kind.value: 1})
    a2, g2 = "r-t1-0-a2-agent", "r-t1-0-a2-grade"
    actions, t = step(trial(status=earlier), [pod(a2, "Succeeded", message=message)], ctx(retry=retry))
    assert [a.name for a in actions if isinstance(a, CreatePod)] == [g2]  # graded as the agent left it
    assert t.status.failures == {kind.value: 1} and t.status.agent.error_kind == kind
    _, t = step(t, [pod(a2, "Succeeded", message=message), pod(g2, "Succeeded", message=grade_ok(0.5))],
                ctx(retry=retry))
    s = t.status
    assert s.state == TrialState.SUCCEEDED and s.score.score == 0.5 and s.error_kind == kind


def test_retry_uses_a_new_attempt_name_and_keeps_usage():
    s = scheduled()
    evicted = pod(A1, "Succeeded", message={**agent_ok(tokens=40), "error_kind": "infra"})
    _, t = step(trial(status=s), [evicted], ctx())
    assert t.status.usage.total_tokens == 40  # the failed attempt's tokens still count (budgets)
    actions, t = step(t, [evicted], ctx(), may_start=True)
    assert actions[0].name == "r-t1-0-a2-agent" and t.status.attempt == 2 and t.status.scheduled


def test_infra_retries_exhausted_fails_trial():
    s = scheduled(attempt=3, failures={"infra": 2})
    _, t = step(trial(status=s), [], ctx(retry=RetryPolicy(infra=3)))
    assert t.status.state == TrialState.FAILED and t.status.error_kind == ErrorKind.INFRA
    assert t.status.failures == {"infra": 3}


def test_stuck_pending_pod_is_deleted_and_retried():
    stuck = pod(A1, "Pending", created=0)
    assert step(trial(status=scheduled()), [stuck], ctx(now=99))[0] == []
    actions, t = step(trial(status=scheduled()), [stuck], ctx(now=101))
    assert isinstance(actions[0], DeletePod) and actions[0].name == A1
    assert t.status.history[-1].reason == "PodStuck" and t.status.attempt == 2


def test_overtime_running_pod_is_killed_by_the_operator_clock():
    running = pod(A1, "Running", started=0)
    # deadline = timeout 60 + grace 10, + slack 5
    assert step(trial(status=scheduled()), [running], ctx(now=75))[0] == []
    actions, t = step(trial(status=scheduled()), [running], ctx(now=76, retry=RetryPolicy(agent_timeout=1)))
    assert isinstance(actions[0], DeletePod)
    assert t.status.state == TrialState.FAILED and t.status.error_kind == ErrorKind.AGENT_TIMEOUT


def test_timeout_override_extends_the_operator_deadline():
    running = pod(A1, "Running", started=0)
    assert step(trial(status=scheduled()), [running], ctx(now=200, timeout_override=300))[0] == []


# ---------------------------------------------------------------- grading

def test_graded_trial_succeeds_and_uploads():
    s = agent_done()
    actions, t = step(trial(status=s), [pod(A1, "Succeeded", message=agent_ok()),
                                        pod(G1, "Succeeded", started=12, message=grade_ok(0.8))], ctx(now=30))
    assert t.status.state == TrialState.SUCCEEDED and t.status.score.score == 0.8
    assert C.is_true(t.status.conditions, C.GRADED) and C.is_true(t.status.conditions, C.SUCCEEDED)
    up = [a for a in actions if isinstance(a, UploadResult)]
    assert len(up) == 1 and up[0].prefix_uri == "s3://bkt/pre/r/t1/0/"
    assert up[0].result.score.score == 0.8 and up[0].result.state == TrialState.SUCCEEDED


def test_grading_error_regrades_without_rerunning_the_agent():
    s = agent_done()
    bad = pod(G1, "Succeeded", message={"phase": "grade", "score": None, "error_kind": "grading_error",
                                        "error_message": "grader crashed"})
    actions, t = step(trial(status=s), [pod(A1, "Succeeded", message=agent_ok()), bad], ctx())
    assert t.status.grade_attempt == 2 and not t.status.grade_scheduled and t.status.agent is not None
    assert t.status.attempt == 1 and t.status.failures == {"grading_error": 1}
    actions, t = step(t, [pod(A1, "Succeeded", message=agent_ok()), bad], ctx())
    assert [a.name for a in actions if isinstance(a, CreatePod)] == ["r-t1-0-a1-grade-2"]


def test_grading_errors_exhausted_fail_the_trial_with_grading_error():
    s = agent_done(grade_attempt=2, failures={"grading_error": 1})
    bad = pod("r-t1-0-a1-grade-2", "Succeeded", message={"phase": "grade", "error_kind": "grading_error"})
    _, t = step(trial(status=s), [bad], ctx(retry=RetryPolicy(grading_error=2)))
    assert t.status.state == TrialState.FAILED and t.status.error_kind == ErrorKind.GRADING_ERROR
    assert t.status.score is None


@pytest.mark.parametrize("message", [None, {"phase": "grade", "score": {"score": 7, "passed": True}},
                                     {"phase": "agent"}])
def test_malformed_grading_output_is_never_a_score(message):
    s = agent_done()
    gp = pod(G1, "Succeeded" if message else "Failed", message=message, exit_code=None if message else 1)
    _, t = step(trial(status=s), [gp], ctx(retry=RetryPolicy(grading_error=1, infra=1)))
    assert t.status.score is None


# ---------------------------------------------------------------- results are final

def test_finished_result_is_never_overwritten():
    s = agent_done()
    _, done = step(trial(status=s), [pod(G1, "Succeeded", message=grade_ok(0.3))], ctx())
    final = done.status.model_copy(update={"conditions": C.set_condition(
        done.status.conditions, C.ARTIFACTS_UPLOADED, True, "Uploaded", "", at(21))})
    done = TrialObs(**{**done.__dict__, "status": final})
    worlds = [
        [],  # every pod gone
        [pod(G1, "Succeeded", message=grade_ok(1.0))],  # a different score appears
        [pod(A1, "Failed", reason="Evicted"), pod(G1, "Failed", reason="Evicted")],
        [pod("r-t1-0-a2-agent", "Running", started=0)],
    ]
    for pods in worlds:
        assert decide_trial(done, {p.name: p for p in pods}, ctx(now=5000), may_start=True) == []


def test_upload_failure_is_retried_with_backoff():
    s = agent_done()
    _, done = step(trial(status=s), [pod(G1, "Succeeded", message=grade_ok())], ctx())
    failed = done.status.model_copy(update={
        "upload_attempts": 2, "last_upload_attempt": C.ts(at(100)),
        "conditions": C.set_condition(done.status.conditions, C.ARTIFACTS_UPLOADED, False, "UploadFailed", "x", at(100))})
    t = TrialObs(**{**done.__dict__, "status": failed})
    # backoff = 10s * 2**(2-1) = 20s
    assert decide_trial(t, {}, TrialContext(now=at(119), run="r", artifact_root=S3Uri("bkt", "pre")), False) == []
    again = decide_trial(t, {}, TrialContext(now=at(121), run="r", artifact_root=S3Uri("bkt", "pre")), False)
    assert [type(a) for a in again] == [UploadResult]


def test_agent_container_done_while_service_sidecars_shut_down_counts_as_terminated():
    from dataclasses import replace

    from clawkube.k8s.observe import Terminated
    sidecars_running = replace(pod(A1, "Running", started=1),
                               terminated=Terminated(exit_code=0, message=agent_ok(), finished_at=at(11)))
    actions, t = step(trial(status=scheduled()), [sidecars_running], ctx())
    assert [a.name for a in actions if isinstance(a, CreatePod)] == [G1]
    assert t.status.agent is not None


def test_a_score_whose_upload_failed_is_graded_again_never_succeeds():
    """The grading pod scored, but its score.json / grader.log did not reach the store: the trial may not read
    Succeeded with the promised a<N>/grade<M>/ artifacts missing; it is an infra failure, graded again."""
    s = agent_done()
    lost = pod(G1, "Succeeded", message={**grade_ok(0.8), "upload_error": "EndpointConnectionError: S3 down"})
    actions, t = step(trial(status=s), [pod(A1, "Succeeded", message=agent_ok()), lost], ctx(retry=RetryPolicy(infra=2)))
    assert t.status.state != TrialState.SUCCEEDED and t.status.score is None
    assert t.status.failures == {"infra": 1} and t.status.history[-1].reason == "ArtifactUploadFailed"
    assert t.status.grade_attempt == 2 and t.status.attempt == 1 and not any(isinstance(a, UploadResult) for a in actions)
    actions, t = step(t, [pod(A1, "Succeeded", message=agent_ok()), lost], ctx())
    assert [a.name for a in actions if isinstance(a, CreatePod)] == ["r-t1-0-a1-grade-2"]
    # out of infra retries: failed for good, never a score without its artifacts
    _, t = step(trial(status=s), [pod(A1, "Succeeded", message=agent_ok()), lost], ctx(retry=RetryPolicy(infra=1)))
    assert t.status.state == TrialState.FAILED and t.status.error_kind == ErrorKind.INFRA and t.status.score is None


def test_retries_after_a_deleted_pod_reach_the_trial_result():
    """A deleted agent pod is an infra failure that is retried; when the retry succeeds, the TrialResult (and so
    the run summary's `retries`) still counts it; a trial that failed for good counts only its earlier tries."""
    from clawkube.k8s.aggregate import retried

    _, t = step(trial(status=scheduled()), [], ctx(retry=RetryPolicy(infra=3)))  # the agent pod disappeared
    assert t.status.failures == {"infra": 1} and t.status.history[-1].reason == "PodDeleted"
    assert retried(t.status.model_copy(update={"state": TrialState.SUCCEEDED})) == {"infra": 1}
    gone = t.status.model_copy(update={"state": TrialState.FAILED, "error_kind": ErrorKind.INFRA,
                                       "failures": {"infra": 3, "grading_error": 1}})
    assert retried(gone) == {"infra": 2, "grading_error": 1}
