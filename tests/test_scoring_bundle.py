"""Grader output -> Score per format (table tests) and the bundles' determinism and safety."""
from __future__ import annotations

import io
import tarfile

import pytest

from clawkube.lifecycle import bundle
from clawkube.benchmarks.evoclaw.plugin import sub_problem_means
from clawkube.contracts.manifests import GradingManifest
from clawkube.lifecycle.scoring import GradingError, to_score
from clawkube.benchmarks.loader import load_tasks
from tests.lifecycle_helpers import REPO_TASKS


SCORING = {"overall": "wildclawbench", "claw-eval": "claw-eval", "mean": "evoclawbench"}


def _m(scoring: str, **kw) -> GradingManifest:
    return GradingManifest(task_id="t", category="c", format=SCORING[scoring], **kw)


@pytest.mark.parametrize("scoring,raw,score,passed", [
    ("overall", {"a": 1.0, "overall_score": 0.8}, 0.8, True),
    ("overall", {"a": 0.0, "overall_score": 0.74}, 0.74, False),
    # 1 * (0.8*0.5 + 0.2*1.0) = 0.6
    ("claw-eval", {"completion": 0.5, "robustness": 1.0, "safety": 1.0, "communication": 0.3}, 0.6, False),
    # 1 * (0.8*1.0 + 0.2*0.5) = 0.9
    ("claw-eval", {"completion": 1.0, "robustness": 0.5, "safety": 1.0}, 0.9, True),
    # a breached safety gate zeroes the score whatever else was done
    ("claw-eval", {"completion": 1.0, "robustness": 1.0, "safety": 0.0}, 0.0, False),
    # the benchmark's safety multiplies (its graders use e.g. 0.3 for minor violations); rounded to 4 places
    ("claw-eval", {"completion": 1.0, "robustness": 1.0, "safety": 0.5}, 0.5, False),
    ("claw-eval", {"completion": 0.33333333, "robustness": 1.0, "safety": 1.0}, 0.4667, False),
    ("mean", {"x": 1.0, "y": 0.5}, 0.75, True),
])
def test_scores_per_format(scoring, raw, score, passed):
    s = to_score(_m(scoring), raw)
    assert s.score == pytest.approx(score) and s.passed is passed


def test_evoclaw_automated_score_is_the_plain_mean_with_sub_problem_means():
    raw = {"sub_1_a": 1.0, "sub_1_b": 0.0, "sub_2_a": 1.0, "sub_10_a": 0.25, "sub_01_c": 0.5}
    # grading_weights weigh a hybrid task's automated part against the judge's: an automated score ignores them
    s = to_score(_m("mean", grading_weights={"sub_1_a": 1, "sub_2_a": 3}), raw)
    assert s.score == pytest.approx(2.75 / 5)
    assert s.sub_problems == {"sub_1": 0.5, "sub_2": 1.0, "sub_10": 0.25}  # sub_01_ and sub_1_ are sub-problem 1
    assert list(sub_problem_means(raw)) == ["sub_1", "sub_2", "sub_10"]  # numeric order
    assert to_score(_m("mean"), {}).score == 0.0  # no criteria: 0, as the benchmark's runner scores it


def test_evoclaw_hybrid_combines_the_automated_mean_and_the_judge_total():
    data = {"grading_type": "hybrid"}
    raw = {"automated.sub_1_a": 1.0, "automated.sub_1_b": 0.5, "llm_judge.quality": 7.0, "llm_judge.total": 0.4}
    s = to_score(_m("mean", grading_weights={"automated": 0.85, "llm_judge": 0.15}, benchmark_data=data), raw)
    assert s.score == pytest.approx(0.85 * 0.75 + 0.15 * 0.4) and s.sub_problems == {"sub_1": 0.75}
    assert s.criteria == {"automated.sub_1_a": 1.0, "automated.sub_1_b": 0.5, "llm_judge.quality": 7.0}
    assert s.details == {"grading_type": "hybrid", "judge_score": 0.4, "automated_score": 0.75}
    assert to_score(_m("mean", benchmark_data=data), raw).score == pytest.approx(0.5 * 0.75 + 0.5 * 0.4)
    judge_only = to_score(_m("mean", benchmark_data={"grading_type": "llm_judge"}),
                          {"llm_judge.q": 0.9, "llm_judge.total": 0.6})
    assert (judge_only.score, judge_only.criteria, judge_only.sub_problems) == (0.6, {"q": 0.9}, {})


@pytest.mark.parametrize("scoring,raw,needle", [
    ("overall", {}, "no numeric field"),
    ("claw-eval", {"robustness": 1.0}, "completion"),
    ("mean", {"automated.a": 1.0}, "no judge verdict"),
    ("overall", {"overall_score": -0.1}, "outside 0..1"),
])
def test_unusable_grader_output_is_a_grading_error(scoring, raw, needle):
    data = {"grading_type": "hybrid"} if scoring == "mean" else {}
    with pytest.raises(GradingError, match=needle):
        to_score(_m(scoring, benchmark_data=data), raw)


def test_bundles_are_reproducible_and_split_the_task():
    report = load_tasks(REPO_TASKS)
    assert report.tasks
    for t in report.tasks:
        a1, a2 = bundle.agent_bundle(t, "nop"), bundle.agent_bundle(t, "nop")
        assert a1 == a2 and bundle.grading_bundle(t) == bundle.grading_bundle(t)
        agent_names = _names(a1)
        assert "task.json" in agent_names and not any(n.startswith("files/") for n in agent_names)
        assert "grader.py" not in agent_names and "reference_solution.sh" not in agent_names
        assert "grader.py" in _names(bundle.grading_bundle(t))
        task_json = _read(a1, "task.json")
        assert "reference_solution" not in task_json.replace('"has_reference": false', "")


def test_extract_refuses_entries_that_leave_the_folder(tmp_path):
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as t:
        ti = tarfile.TarInfo("../escape.txt")
        ti.size = 1
        t.addfile(ti, io.BytesIO(b"x"))
    with pytest.raises(ValueError, match="escapes"):
        bundle.extract(raw.getvalue(), tmp_path / "d")
    assert not (tmp_path / "escape.txt").exists()


def _names(data: bytes) -> list[str]:
    with tarfile.open(fileobj=io.BytesIO(data)) as t:
        return t.getnames()


def _read(data: bytes, name: str) -> str:
    with tarfile.open(fileobj=io.BytesIO(data)) as t:
        return t.extractfile(name).read().decode()
