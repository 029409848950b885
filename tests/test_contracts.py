"""Typed contracts between processes: writer and reader share one model, so a typo fails loudly."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from clawkube.contracts import termination
from clawkube.contracts.details import ModeDetails, StageRecord, mode_details, with_mode_details
from clawkube.contracts.pod_env import FirstRunRecord, PodEnv
from clawkube.contracts.skills import SkillDigest, SkillReport
from clawkube.contracts.termination import AgentTermination, GradeTermination
from clawkube.k8s.observe import PodObs, Terminated
from clawkube.k8s.outcome import agent_outcome, grade_outcome
from clawkube.pod import write_termination
from clawkube.results.model import ErrorKind, Score, Usage
from clawkube.runspec import EvalMode
from tests.k8s.builders import at


def _pod(message: str) -> PodObs:
    return PodObs(name="p", role="agent", phase="Succeeded", created_at=at(0),
                  terminated=Terminated(exit_code=0, message=json.loads(message), raw_message=message))


def test_a_grading_pods_message_stays_within_the_kubernetes_limit_and_keeps_the_verdict(tmp_path: Path):
    big = GradeTermination(score=Score(score=0.5, passed=False, criteria={f"c{i}": 0.5 for i in range(2000)},
                                       details={"engine": {"x" * 50: list(range(500))}}))
    write_termination(str(tmp_path / "t"), big)
    data = (tmp_path / "t").read_text()
    assert len(data.encode()) <= termination.LIMIT
    msg = termination.parse(json.loads(data))
    assert msg.truncated and msg.score.score == 0.5 and msg.score.criteria == {}
    score, failure = grade_outcome(_pod(data))
    assert failure is None and score.score == 0.5


def test_an_agent_pods_long_message_keeps_usage_error_and_a_skills_digest():
    report = SkillReport(source="authored", files={f"skill{i}/SKILL.md": "0" * 64 for i in range(200)},
                         mutations={"added": ["a"], "modified": [], "deleted": []})
    m = AgentTermination(stage="execution", exit_code=2, usage=Usage(input_tokens=7), skills=report,
                         error_kind=ErrorKind.AGENT_ERROR, error_message="boom " * 2000)
    text = termination.line(m)
    assert len(text.encode()) <= termination.LIMIT
    back = termination.parse(json.loads(text))
    assert back.truncated and back.usage.input_tokens == 7 and back.error_kind is ErrorKind.AGENT_ERROR
    assert back.skills == SkillDigest(source="authored", mutated=True, file_count=200)
    out, failure = agent_outcome(_pod(text))
    assert out.usage.input_tokens == 7 and failure.kind is ErrorKind.AGENT_ERROR and failure.evidence


@pytest.mark.parametrize("message,needle", [
    ({"phase": "agent", "exit_code": 0, "usage": {"input_tokens": "many"}}, "usage.input_tokens"),
    ({"phase": "agent", "error_kind": "agent_eror"}, "error_kind"),
    ({"phase": "agent", "timed_out": False, "tokens": 5}, "tokens"),
])
def test_a_malformed_agent_message_is_an_infra_failure_naming_the_field(message, needle):
    _, failure = agent_outcome(_pod(json.dumps(message)))
    assert failure.kind is ErrorKind.INFRA and failure.reason == "BadTerminationMessage" and needle in failure.message


def test_a_score_out_of_range_is_a_grading_error():
    _, failure = grade_outcome(_pod(json.dumps({"phase": "grade", "score": {"score": 1.5, "passed": True}})))
    assert (failure.kind, failure.reason) == (ErrorKind.GRADING_ERROR, "BadScore")


def test_pod_env_round_trip_and_typos():
    env = PodEnv(trial="r-t-0", attempt=2, mode=EvalMode.POSTSKILL, agent_args={"commands": ["ls"]},
                 first_run=FirstRunRecord(score=Score(score=0.4, passed=False), agent_error="late"),
                 skills_uri="s3://b/p/summary/skills/")
    entries = env.k8s()
    assert {e["name"] for e in entries} == {"CLAWKUBE_TRIAL", "CLAWKUBE_ATTEMPT", "CLAWKUBE_MODE",
                                            "CLAWKUBE_AGENT_ARGS", "CLAWKUBE_FIRST_RUN", "CLAWKUBE_SKILLS_URI"}
    environ = {e["name"]: e["value"] for e in entries} | {"PATH": "/bin", "CLAWKUBE_SERVICES_TOKEN_FILE": "/x"}
    assert PodEnv.from_environ(environ) == env
    with pytest.raises(ValidationError):
        PodEnv(trail="x")  # a misspelt field
    with pytest.raises(ValidationError):
        PodEnv.from_environ({"CLAWKUBE_ATTEMPT": "two"})
    with pytest.raises(ValidationError):
        PodEnv.from_environ({"CLAWKUBE_FIRST_RUN": json.dumps({"score": None, "grader_output": "42"})})


def _records(mode: EvalMode) -> dict[str, StageRecord]:
    skills = SkillReport(source="authored", mutations={"added": ["x"]})
    rec = {"execution": StageRecord(name="execution", usage=Usage(total_tokens=50), skills=skills)}
    if mode is EvalMode.PRESKILL:
        rec["authoring"] = StageRecord(name="authoring", usage=Usage(total_tokens=5),
                                       error_kind=ErrorKind.AGENT_ERROR, error_message="exit 2")
    if mode is EvalMode.POSTSKILL:
        rec |= {"first_run": StageRecord(name="first_run", usage=Usage(total_tokens=40)),
                "first_run_grade": StageRecord(name="first_run_grade", score=Score(score=0.4, passed=False)),
                "summary": StageRecord(name="summary", usage=Usage(total_tokens=5))}
    return rec


@pytest.mark.parametrize("mode,keys", [
    (EvalMode.BASELINE, {"mode", "phase_usage", "execution_usage", "skills", "skills_mutated"}),
    (EvalMode.PRESKILL, {"mode", "phase_usage", "execution_usage", "skills", "skills_mutated", "authoring_error",
                         "skill_mutation_violation"}),
    (EvalMode.POSTSKILL, {"mode", "phase_usage", "execution_usage", "skills", "skills_mutated", "summary_error",
                          "first_run", "skill_mutation_violation"}),
])
def test_mode_details_per_mode(mode, keys):
    d = mode_details(mode, _records(mode)).as_details()
    assert set(d) == keys and d["mode"] == mode.value and d["skills_mutated"] is True
    assert d["execution_usage"]["total_tokens"] == 50
    assert list(d["phase_usage"]) == [s for s in ("authoring", "first_run", "summary", "execution")
                                      if s in _records(mode)]
    if mode is not EvalMode.BASELINE:  # a skill-reuse execution that changed its skills: a violation
        assert d["skill_mutation_violation"] is True
    if mode is EvalMode.PRESKILL:
        assert d["authoring_error"] == "exit 2"
    if mode is EvalMode.POSTSKILL:
        assert d["first_run"]["score"]["score"] == 0.4 and d["first_run"]["agent_error"] is None
    assert ModeDetails.read({**d, "engine": {"x": 1}}).execution_usage.total_tokens == 50


def test_mode_details_carry_what_the_skill_writing_stage_created():
    rec = _records(EvalMode.PRESKILL)
    rec["authoring"] = rec["authoring"].model_copy(update={"created_skills": [{"name": "s", "content_length": 9}],
                                                           "skill_quality": 0.4})
    d = mode_details(EvalMode.PRESKILL, rec).as_details()
    assert d["created_skills"] == [{"name": "s", "content_length": 9}] and d["skill_quality"] == 0.4


def test_details_keys_are_checked():
    with pytest.raises(ValidationError):  # the writer cannot misspell a key
        ModeDetails(mode="baseline", phase_usage={}, execution_usage=Usage(), skills_mutatd=True)
    with pytest.raises(ValidationError):  # nor the reader accept a malformed value
        ModeDetails.read({"mode": "baseline", "phase_usage": {}, "execution_usage": {"total_tokens": "many"}})
    d = mode_details(EvalMode.BASELINE, _records(EvalMode.BASELINE))
    with pytest.raises(ValueError, match="reserved"):
        with_mode_details({"mode": "mine"}, d)
    assert with_mode_details({"engine": {}}, d)["engine"] == {}
