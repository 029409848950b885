"""The trial plan (plan.py): one description of a trial's stages and retries, read by the local executor, the
operator's decide functions and the pods; table tests of the retry decision, and the local runner honouring it."""
from __future__ import annotations

from pathlib import Path

import pytest

from clawkube import plan
from clawkube.k8s.decide_trial import STAGES
from clawkube.local.runner import LocalRunner
from clawkube.plan import Next, Role
from clawkube.results.model import ErrorKind, TrialState
from clawkube.runspec import AgentSpec, BenchmarkRunSpec, EvalMode, RetryPolicy, TaskSource
from clawkube.benchmarks.evoclaw import protocol
from clawkube.skills.writing import SKILL_PHASES
from tests.lifecycle_helpers import make_task


@pytest.mark.parametrize("mode", list(EvalMode))
def test_every_mode_ends_with_its_graded_execution_and_reads_only_earlier_stages(mode):
    stages = plan.stages(mode)
    assert [(s.name, s.role, s.graded) for s in stages[-2:]] == [
        ("execution", Role.EXECUTE, True), ("grade", Role.GRADE, True)]
    assert not any(s.graded for s in stages[:-2])
    names = [s.name for s in stages]
    assert len(set(names)) == len(names)
    for i, s in enumerate(stages):
        for r in s.reads:
            assert r in names[:i], f"{s.name} reads {r}, which does not run before it"
        if s.role is Role.GRADE:
            assert plan.stage(mode, s.grades).role is Role.EXECUTE
        if s.skills_from:
            assert plan.stage(mode, s.skills_from).role is Role.AUTHOR
    assert STAGES[mode] == tuple(s.name for s in plan.preparatory(mode))  # the operator's stage pods
    suffixes = [s.pod_suffix for s in plan.preparatory(mode)]
    assert all(suffixes) and len(set(suffixes)) == len(suffixes) and "agent" not in suffixes


def test_author_stages_are_the_skill_phases():
    authors = {protocol.phase_of(m.value, s.name) for m in EvalMode for s in plan.stages(m) if s.role is Role.AUTHOR}
    assert authors == set(SKILL_PHASES)
    agent_stages = {protocol.phase_of(m.value, s.name) for m in EvalMode for s in plan.stages(m)
                    if s.role is not Role.GRADE}
    assert agent_stages == {p for phases in protocol.PHASES.values() for p in phases}


R = RetryPolicy(agent_timeout=2, agent_error=1, grading_error=3, infra=2)


@pytest.mark.parametrize("kind,failed,evidence,expected", [
    (ErrorKind.INFRA, 1, False, Next.RETRY),
    (ErrorKind.INFRA, 2, False, Next.FAIL),
    (ErrorKind.INFRA, 2, True, Next.FAIL),  # infra is never graded
    (ErrorKind.AGENT_TIMEOUT, 1, True, Next.RETRY),
    (ErrorKind.AGENT_TIMEOUT, 2, True, Next.GRADE),
    (ErrorKind.AGENT_TIMEOUT, 2, False, Next.FAIL),  # killed without evidence: nothing to grade
    (ErrorKind.AGENT_ERROR, 1, True, Next.GRADE),
    (ErrorKind.AGENT_ERROR, 1, False, Next.FAIL),
    (ErrorKind.GRADING_ERROR, 2, False, Next.RETRY),
    (ErrorKind.GRADING_ERROR, 3, False, Next.FAIL),
])
def test_after_failure(kind, failed, evidence, expected):
    assert plan.after_failure(R, kind, failed, evidence) is expected


@pytest.mark.parametrize("attempts", [1, 2])
def test_the_local_runner_retries_agent_errors_per_policy_then_grades(tmp_path: Path, attempts):
    make_task(tmp_path)
    spec = BenchmarkRunSpec(tasks=TaskSource(path=str(tmp_path / "tasks")), trials=1,
                            agent=AgentSpec(harness="script", args={"commands": ["echo 42 > answer.txt", "exit 3"]}),
                            retry=RetryPolicy(agent_error=attempts))
    (r,) = LocalRunner(spec, tmp_path / "out", sandbox_mode="auto", progress=None).run().results
    assert r.attempt == attempts  # every attempt but the last was retried, not graded
    assert r.state is TrialState.SUCCEEDED and r.score.score == 1.0  # the last one graded as the agent left it
    assert r.error_kind is ErrorKind.AGENT_ERROR and "exited with 3" in r.error_message
