"""Table tests of the EvoClawBench stages on the cluster (pure decide_trial): PreSkill runs an authoring pod
before the graded execution, PostSkill a first run, its grading pod and a summary pod; each next pod only after
the previous one terminated; stage verdicts recorded, lost stage pods retried as new attempts."""
from __future__ import annotations

import json

import pytest

from clawkube.artifacts.uri import S3Uri
from clawkube.k8s import conditions as C
from clawkube.k8s.actions import CreatePod, DeletePod, PatchTrial, UploadResult
from clawkube.k8s.decide_trial import STAGES, TrialContext, decide_trial
from clawkube.k8s.observe import TrialObs
from clawkube.results.model import ErrorKind, TrialState
from clawkube.runspec import EvalMode, RetryPolicy
from tests.k8s.builders import agent_ok, at, grade_ok, pod, trial

T = "r-t1-0"
AUTHOR, FIRST, FIRST_GRADE, SUMMARY = f"{T}-a1-author", f"{T}-a1-first", f"{T}-a1-first-grade", f"{T}-a1-summary"
AGENT, GRADE = f"{T}-a1-agent", f"{T}-a1-grade"
URI = "s3://bkt/pre/r/t1/0/a1/"


def ctx(now: float = 20, **kw) -> TrialContext:
    return TrialContext(now=at(now), run="r", artifact_root=S3Uri("bkt", "pre"), pending_timeout=100,
                        agent_grace=10, grade_grace=10, slack=5, **kw)


def step(t: TrialObs, pods: list, c: TrialContext = None, may_start: bool = False):
    actions = decide_trial(t, {p.name: p for p in pods}, c or ctx(), may_start)
    patches = [a for a in actions if isinstance(a, PatchTrial)]
    assert len(patches) <= 1, "one status write per trial per pass"
    creates = [i for i, a in enumerate(actions) if isinstance(a, CreatePod)]
    if patches and creates:  # a crash between the two never leaves a status claiming a pod that does not exist
        assert max(creates) < actions.index(patches[0])
    return actions, (TrialObs(**{**t.__dict__, "status": patches[-1].status}) if patches else t)


def created(actions) -> list[CreatePod]:
    return [a for a in actions if isinstance(a, CreatePod)]


def done(name: str, message: dict, finished: float = 12) -> object:
    return pod(name, "Succeeded", started=2, message=message, finished=finished)


def stage_msg(stage: str, tokens: int = 10, **kw) -> dict:
    return {**agent_ok(tokens=tokens), "stage": stage, **kw}


def test_the_stages_of_each_mode():
    assert STAGES[EvalMode.BASELINE] == ()
    assert STAGES[EvalMode.PRESKILL] == ("authoring",)
    assert STAGES[EvalMode.POSTSKILL] == ("first_run", "first_run_grade", "summary")


# ---------------------------------------------------------------- PreSkill

def test_preskill_starts_with_an_authoring_pod_then_executes_with_its_skills():
    t = trial(mode="preskill")
    actions, t = step(t, [], may_start=True)
    (author,) = created(actions)
    assert (author.name, author.role, author.stage) == (AUTHOR, "agent", "authoring")
    assert author.artifact_uri == URI + "authoring/" and author.skills_uri is None
    assert t.status.scheduled and t.status.stages == [] and t.status.agent is None
    # while the authoring pod runs: nothing else
    assert step(t, [pod(AUTHOR, "Running", started=2)])[0] == []
    # authoring finished: the execution pod, with the authored skills
    actions, t = step(t, [done(AUTHOR, stage_msg("authoring", tokens=30))])
    (agent,) = created(actions)
    assert (agent.name, agent.role, agent.stage) == (AGENT, "agent", "execution")
    assert agent.skills_uri == URI + "authoring/skills/"
    s = t.status
    assert [st.name for st in s.stages] == ["authoring"] and s.stages[0].usage.total_tokens == 30
    assert s.usage.total_tokens == 30 and s.phase_seconds["authoring"] == 10
    assert s.artifacts["authoring"] == URI + "authoring/" and C.is_true(s.conditions, C.SKILLS_READY)
    # then the usual agent -> grading; the score carries the mode's details
    skills = {"source": "authored", "files": {"s/SKILL.md": "ab"}, "mutations": {"added": [], "modified": ["s/SKILL.md"],
                                                                                  "deleted": []}}
    actions, t = step(t, [done(AUTHOR, stage_msg("authoring", 30)), done(AGENT, {**agent_ok(50), "skills": skills})])
    (g,) = created(actions)
    assert g.name == GRADE and g.agent_artifacts_uri == URI + "agent/"
    actions, t = step(t, [pod(AGENT, "Succeeded", message=agent_ok()), done(GRADE, grade_ok(1.0))])
    s = t.status
    assert s.state == TrialState.SUCCEEDED and s.usage.total_tokens == 80
    d = s.score.details
    assert d["mode"] == "preskill" and d["authoring_error"] is None
    assert d["phase_usage"]["authoring"]["total_tokens"] == 30 and d["execution_usage"]["total_tokens"] == 50
    assert d["skills"] == skills and d["skills_mutated"] is True
    upload = next(a for a in actions if isinstance(a, UploadResult))
    assert upload.result.mode == "preskill" and upload.result.score.details["mode"] == "preskill"


def test_an_authoring_agent_error_is_recorded_and_the_execution_still_runs():
    t = trial(mode="preskill", status=step(trial(mode="preskill"), [], may_start=True)[1].status)
    msg = stage_msg("authoring", error_kind="agent_error", error_message="agent exited with 2")
    actions, t = step(t, [done(AUTHOR, msg)])
    assert [a.name for a in created(actions)] == [AGENT]
    st = t.status.stages[0]
    assert st.error_kind == ErrorKind.AGENT_ERROR and st.error_message == "agent exited with 2"
    assert t.status.failures == {} and "agent_error" in C.get(t.status.conditions, C.SKILLS_READY).message


@pytest.mark.parametrize("author,kind,reason", [
    (None, ErrorKind.INFRA, "PodDeleted"),
    (pod(AUTHOR, "Failed", exit_code=1), ErrorKind.INFRA, "NoTerminationMessage"),
    (pod(AUTHOR, "Failed", reason="Evicted"), ErrorKind.INFRA, "Evicted"),
    (pod(AUTHOR, "Succeeded", message=stage_msg("authoring", error_kind="infra", error_message="setup")),
     ErrorKind.INFRA, "Infra"),
    (pod(AUTHOR, "Running", started=1, deleting=True), ErrorKind.INFRA, "PodDeleted"),
])
def test_a_lost_or_broken_stage_pod_fails_the_attempt_and_the_retry_runs_every_stage_again(author, kind, reason):
    t = trial(mode="preskill", status=step(trial(mode="preskill"), [], may_start=True)[1].status)
    actions, t = step(t, [author] if author else [], ctx(retry=RetryPolicy(infra=2)))
    s = t.status
    assert not created(actions) and s.failures == {kind.value: 1} and s.history[-1].reason == reason
    assert s.attempt == 2 and not s.scheduled and s.stages == []
    actions, t = step(t, [], may_start=True)
    assert [(a.name, a.stage) for a in created(actions)] == [(f"{T}-a2-author", "authoring")]


def test_an_overtime_stage_pod_is_deleted_and_counted():
    t = trial(mode="preskill", status=step(trial(mode="preskill"), [], may_start=True)[1].status)
    actions, t = step(t, [pod(AUTHOR, "Running", started=1)], ctx(now=1 + 60 + 10 + 5 + 1))
    assert any(isinstance(a, DeletePod) and a.name == AUTHOR for a in actions)
    assert t.status.failures == {"agent_timeout": 1} and t.status.state == TrialState.FAILED


def test_a_lost_status_write_after_a_stage_creates_the_same_next_pod_again():
    t = trial(mode="preskill", status=step(trial(mode="preskill"), [], may_start=True)[1].status)
    pods = [done(AUTHOR, stage_msg("authoring"))]
    first, _ = step(t, pods)
    again, _ = step(t, [*pods, pod(AGENT)])  # the execution pod exists, the status write was lost
    assert created(first) == created(again)  # same name: the create meets AlreadyExists, nothing is duplicated


# ---------------------------------------------------------------- PostSkill

def _postskill_until_summary():
    t = trial(mode="postskill")
    actions, t = step(t, [], may_start=True)
    (first,) = created(actions)
    assert (first.name, first.role, first.stage, first.artifact_uri) == (FIRST, "agent", "first_run", URI + "first_run/")
    return t


def test_postskill_grades_the_first_run_only_after_it_terminated():
    t = _postskill_until_summary()
    for running in (pod(FIRST, "Pending"), pod(FIRST, "Running", started=1), pod(FIRST, "Unknown")):
        assert not created(step(t, [running])[0])
    actions, t = step(t, [done(FIRST, stage_msg("first_run", tokens=40))])
    (g,) = created(actions)
    assert (g.name, g.role, g.stage) == (FIRST_GRADE, "grade", "first_run")
    assert g.agent_artifacts_uri == URI + "first_run/" and g.artifact_uri == URI + "first_run_grade/"
    assert t.status.phase.value == "Grading" and t.status.usage.total_tokens == 40


def test_postskill_summary_gets_the_first_runs_score_and_agent_artifacts_never_grader_output():
    t = _postskill_until_summary()
    pods = [done(FIRST, stage_msg("first_run", tokens=40))]
    _, t = step(t, pods)
    assert not created(step(t, [*pods, pod(FIRST_GRADE, "Running", started=13)])[0])
    score = {"phase": "grade", "score": {"score": 0.4, "passed": False, "criteria": {"c1": 0.4},
                                         "details": {"grader_said": "expected 42"}}}
    pods.append(done(FIRST_GRADE, score, finished=20))
    actions, t = step(t, pods)
    (summary,) = created(actions)
    assert (summary.name, summary.role, summary.stage) == (SUMMARY, "agent", "summary")
    assert summary.agent_artifacts_uri == URI + "first_run/"  # the agent's own artifacts, not first_run_grade/
    record = summary.first_run.model_dump(mode="json")  # contracts.pod_env.FirstRunRecord: no grader details
    assert record == {"score": {"score": 0.4, "passed": False, "dimensions": {}, "criteria": {"c1": 0.4},
                                "sub_problems": {}, "details": {}}, "agent_error": None, "grading_error": None}
    # summary done: the second run starts with the summary's skills
    pods.append(done(SUMMARY, stage_msg("summary", tokens=5), finished=30))
    actions, t = step(t, pods)
    (agent,) = created(actions)
    assert agent.name == AGENT and agent.skills_uri == URI + "summary/skills/"
    assert [st.name for st in t.status.stages] == ["first_run", "first_run_grade", "summary"]
    pods += [done(AGENT, agent_ok(tokens=50), finished=40)]
    _, t = step(t, pods)
    pods.append(done(GRADE, grade_ok(1.0), finished=50))
    _, t = step(t, pods)
    s = t.status
    assert s.state == TrialState.SUCCEEDED and s.score.score == 1.0 and s.usage.total_tokens == 95
    d = s.score.details
    assert d["first_run"]["score"]["score"] == 0.4 and d["first_run"]["grading_error"] is None
    assert set(d["phase_usage"]) == {"first_run", "summary", "execution"} and d["summary_error"] is None
    assert d["execution_usage"]["total_tokens"] == 50


def test_postskill_first_run_grading_error_is_recorded_and_withheld_from_the_summary():
    t = _postskill_until_summary()
    pods = [done(FIRST, stage_msg("first_run", error_kind="agent_timeout", error_message="over budget",
                                  timed_out=True))]
    _, t = step(t, pods)
    assert t.status.failures == {} and t.status.stages[0].error_kind == ErrorKind.AGENT_TIMEOUT
    pods.append(done(FIRST_GRADE, {"phase": "grade", "score": None, "error_kind": "grading_error",
                                   "error_message": "AssertionError: expected 'secret-answer'"}, finished=20))
    actions, t = step(t, pods)
    (summary,) = created(actions)
    record = summary.first_run
    assert record.score is None and record.agent_error == "over budget"
    assert "secret-answer" not in record.model_dump_json() and record.grading_error
    assert t.status.stages[1].error_kind == ErrorKind.GRADING_ERROR and t.status.failures == {}


def test_postskill_first_run_grading_pod_lost_fails_the_attempt():
    t = _postskill_until_summary()
    pods = [done(FIRST, stage_msg("first_run"))]
    _, t = step(t, pods)
    _, t = step(t, pods + [pod(FIRST_GRADE, "Failed", exit_code=137, term_reason="Error")], ctx(retry=RetryPolicy(infra=2)))
    assert t.status.attempt == 2 and t.status.stages == [] and t.status.failures == {"infra": 1}


def test_several_modes_keep_their_artifacts_apart():
    c = ctx(several_modes=True)
    actions, _ = step(trial(name="r-t1-postskill-0", mode="postskill"), [], c, may_start=True)
    assert created(actions)[0].artifact_uri == "s3://bkt/pre/r/t1/postskill-0/a1/first_run/"
    actions, _ = step(trial(name="r-t1-baseline-0"), [], c, may_start=True)
    assert created(actions)[0].artifact_uri == "s3://bkt/pre/r/t1/baseline-0/a1/agent/"
