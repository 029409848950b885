"""The per-run gauges the dashboard reads: pass@k / pass^k, budget, scores labelled by model and harness."""
from __future__ import annotations

from prometheus_client import CollectorRegistry

from clawkube.k8s import conditions as C
from clawkube.k8s.actions import PatchRun
from clawkube.k8s.metrics import Metrics
from clawkube.k8s.model import RunStatus
from clawkube.k8s.reconcile import Reconciler, score_series
from clawkube.results.model import Score, TrialResult, TrialState
from clawkube.reporting.summary import summarize
from clawkube.settings import Settings
from tests.k8s.builders import T0, run_obs

WHO = {"namespace": "ns", "run": "r", "model": "gpt-x", "harness": "codex"}


def _summary() -> dict:
    """A real RunSummary (2 tasks x 2 trials: a passes both, b one of two), as the status holds it (JSON)."""
    results = [TrialResult(task_id=t, trial_index=i, state=TrialState.SUCCEEDED, attempt=1, category="demo", task_format="wildclawbench",
                           score=Score(score=s, passed=s >= 0.75))
               for t, i, s in (("a", 0, 1.0), ("a", 1, 1.0), ("b", 0, 1.0), ("b", 1, 0.0))]
    return summarize(results, 2).model_dump(mode="json")


def _status(budget_spent: bool, summary: dict | None) -> RunStatus:
    conds = C.set_condition([], C.BUDGET_EXHAUSTED, budget_spent, "LimitReached" if budget_spent else "WithinBudget",
                            "", T0)
    return RunStatus(conditions=conds, mean_score=0.75, pass_rate=0.75, summary=summary)


def _reconciler():
    reg = CollectorRegistry()
    return Reconciler(None, Settings(namespaces=["ns"]), Metrics(reg)), reg


def test_pass_at_k_hat_k_and_budget_gauges():
    rec, reg = _reconciler()
    run = run_obs(agent={"harness": "codex", "model": "gpt-x"}, trials=2)
    rec._gauges(run, [PatchRun(before=RunStatus(), status=_status(True, _summary()))])
    get = reg.get_sample_value
    assert get("clawkube_run_pass_at_k", {**WHO, "k": "1"}) == 0.75  # (1 + 0.5) / 2
    assert get("clawkube_run_pass_at_k", {**WHO, "k": "2"}) == 1.0  # both tasks pass at least once in 2
    assert get("clawkube_run_pass_hat_k", {**WHO, "k": "2"}) == 0.5  # only a passes both
    assert get("clawkube_run_mean_score", WHO) == 0.75 and get("clawkube_run_pass_rate", WHO) == 0.75
    assert get("clawkube_run_budget_exhausted", {"namespace": "ns", "run": "r"}) == 1
    rec._gauges(run, [PatchRun(before=RunStatus(), status=_status(False, _summary()))])
    assert get("clawkube_run_budget_exhausted", {"namespace": "ns", "run": "r"}) == 0


def test_score_series_change_with_the_model_and_vanish_with_the_run():
    rec, reg = _reconciler()
    rec._gauges(run_obs(agent={"harness": "codex", "model": "gpt-x"}, trials=2),
                [PatchRun(before=RunStatus(), status=_status(False, _summary()))])
    rec._seen = {("ns", "r")}
    rec._gauges(run_obs(agent={"harness": "codex", "model": "gpt-y"}, trials=2),
                [PatchRun(before=RunStatus(), status=_status(False, _summary()))])
    get = reg.get_sample_value
    assert get("clawkube_run_mean_score", WHO) is None  # the old model's series is gone
    assert get("clawkube_run_mean_score", {**WHO, "model": "gpt-y"}) == 0.75
    rec._forget_gauges(set())  # the run was deleted
    for name in ("clawkube_run_mean_score", "clawkube_run_pass_rate"):
        assert get(name, {**WHO, "model": "gpt-y"}) is None
    assert get("clawkube_run_pass_at_k", {**WHO, "model": "gpt-y", "k": "1"}) is None
    assert get("clawkube_run_budget_exhausted", {"namespace": "ns", "run": "r"}) is None
    assert get("clawkube_category_mean_score", {"namespace": "ns", "run": "r", "category": "demo"}) is None


def test_score_series_leave_out_unknown_values():
    summary = {"overall": {"pass_at_k": {"1": 0.5, "2": None}, "pass_hat_k": {}}, "by_category": {"x": {"mean_score": None}}}
    assert score_series("ns", "r", "", "oracle", None, None, summary) == {
        ("pass_at_k", ("ns", "r", "", "oracle", "1")): 0.5}


def test_mode_gauges_give_each_modes_score_and_ratios_against_baseline():
    from clawkube.results.model import Usage

    def result(mode: str, i: int, score: float, tokens: int, execution: int) -> TrialResult:
        return TrialResult(task_id="a", trial_index=i, state=TrialState.SUCCEEDED, attempt=1, category="demo",
                           task_format="evoclawbench", mode=mode, usage=Usage(total_tokens=tokens),
                           score=Score(score=score, passed=score >= 0.75,
                                       details={"execution_usage": Usage(total_tokens=execution).model_dump()}))
    results = [result("baseline", 0, 0.4, 100, 100), result("baseline", 1, 0.4, 100, 100),
               result("postskill", 0, 1.0, 300, 50), result("postskill", 1, 0.8, 300, 50)]
    summary = summarize(results, 2).model_dump(mode="json")
    rec, reg = _reconciler()
    rec._gauges(run_obs(agent={"harness": "codex", "model": "gpt-x"}, trials=2),
                [PatchRun(before=RunStatus(), status=_status(False, summary))])
    get = reg.get_sample_value
    assert get("clawkube_run_mode_mean_score", {**WHO, "mode": "postskill"}) == 0.9
    assert get("clawkube_run_mode_mean_score", {**WHO, "mode": "baseline"}) == 0.4
    ratio = {**WHO, "mode": "postskill"}
    assert abs(get("clawkube_run_mode_ratio", {**ratio, "usage": "end_to_end", "what": "score"}) - 2.25) < 1e-9
    assert get("clawkube_run_mode_ratio", {**ratio, "usage": "end_to_end", "what": "tokens"}) == 3.0
    assert get("clawkube_run_mode_ratio", {**ratio, "usage": "execution", "what": "tokens"}) == 0.5
    assert get("clawkube_run_mode_ratio", {**ratio, "usage": "end_to_end", "what": "cost"}) is None  # 0 / 0
