import pytest

from clawkube.results.model import ErrorKind, Score, TrialResult, TrialState, Usage
from clawkube.benchmarks.claweval.plugin import ClawEvalSummary
from clawkube.benchmarks.evoclaw.plugin import EvoClawSummary
from clawkube.reporting.summary import RunSummary, execution_usage, summarize

U = Usage(input_tokens=100, output_tokens=20, cost_usd=0.01, wall_seconds=10)  # total_tokens 0 -> read as 120


def tr(task, idx, score=None, error=None, *, category="alpha", fmt="wildclawbench", usage=U, mode=None,
       attempt=1, state=None, dims=None, subs=None, details=None):
    """A TrialResult: graded when `score` is given, failed with `error` otherwise (unless `state` says)."""
    if state is None:
        state = TrialState.SUCCEEDED if score is not None else TrialState.FAILED
    graded = None
    if score is not None:
        graded = Score(score=score, passed=score >= 0.75, dimensions=dims or {}, sub_problems=subs or {},
                       details=details or {})
    return TrialResult(task_id=task, category=category, task_format=fmt, trial_index=idx, attempt=attempt,
                       state=state, error_kind=error, score=graded, usage=usage, mode=mode)


def mixed_run():
    """K=2; planned a1 a2 b1 b2 c1; a* wildclaw in 'alpha', b* claw-eval in 'beta', c1 never ran."""
    return [
        tr("a1", 0, 1.0, usage=Usage(input_tokens=100, output_tokens=20, total_tokens=150, cost_usd=0.01,
                                     wall_seconds=10)),
        tr("a1", 1, 0.75),  # exactly at the threshold: passes
        tr("a2", 0, error=ErrorKind.AGENT_TIMEOUT),
        tr("a2", 1, 0.8),
        tr("b1", 0, 0.6, category="beta", fmt="claw-eval",  # 1 * (0.8*0.5 + 0.2*1.0) = 0.6
           dims={"completion": 0.5, "robustness": 1.0, "safety": 1.0, "communication": 0.4}),
        # retried: attempt 2 (grading error) supersedes attempt 1 (infra), whatever the list order
        tr("b1", 1, error=ErrorKind.GRADING_ERROR, category="beta", fmt="claw-eval", attempt=2),
        tr("b1", 1, error=ErrorKind.INFRA, category="beta", fmt="claw-eval", attempt=1,
           usage=Usage(input_tokens=5000)),
        tr("b2", 0, 0.9, category="beta", fmt="claw-eval",  # 1 * (0.8*1.0 + 0.2*0.5) = 0.9
           dims={"safety": 1.0, "completion": 1.0, "robustness": 0.5}),
        tr("b2", 1, state=TrialState.RUNNING, category="beta", fmt="claw-eval", usage=Usage(input_tokens=999)),
    ]


@pytest.fixture
def mixed():
    return summarize(mixed_run(), trials_per_task=2, planned_tasks=["a1", "a2", "b1", "b2", "c1"])


def test_overall_counts(mixed):
    o = mixed.overall
    # finished: a1x2, a2x2, b1x2, b2 trial 0 (b2 trial 1 still running, c1 never ran)
    assert (o.tasks, o.trials_planned, o.trials_finished) == (5, 10, 7)
    assert (o.trials_succeeded, o.trials_failed, o.trials_missing) == (5, 2, 3)
    assert mixed.modes == ["baseline"]
    assert mixed.by_mode == {}


def test_overall_scores_and_k_metrics(mixed):
    o = mixed.overall
    # scores 1.0 .75 0(fail) .8 .6 0(fail) .9 = 4.05
    assert o.mean_score == pytest.approx(4.05 / 7)
    assert o.mean_score_graded == pytest.approx(4.05 / 5)
    assert o.pass_rate == pytest.approx(4 / 7)  # a1 a1 a2 b2
    # per task (n, c): a1 (2,2)  a2 (2,1)  b1 (2,0)  b2 (1,1)
    # pass@1 = mean(c/n) = (1 + .5 + 0 + 1) / 4
    assert o.pass_at_k[1] == pytest.approx(0.625)
    assert o.pass_hat_k[1] == pytest.approx(0.625)
    # k=2 over a1 a2 b1 only (b2 has 1 trial): pass@2 = (1 + 1 + 0)/3; pass^2 = (C(2,2)/C(2,2) + 0 + 0)/3
    assert o.tasks_at_k == {1: 4, 2: 3}
    assert o.pass_at_k[2] == pytest.approx(2 / 3)
    assert o.pass_hat_k[2] == pytest.approx(1 / 3)
    # all-2-passed over tasks with exactly 2 finished trials: a1 yes, a2 no, b1 no
    assert (o.all_passed, o.all_passed_tasks) == (pytest.approx(1 / 3), 3)


def test_per_category(mixed):
    assert list(mixed.by_category) == ["alpha", "beta"]  # c1 has no result, so no known category
    a, b = mixed.by_category["alpha"], mixed.by_category["beta"]
    assert (a.tasks, a.trials_planned, a.trials_finished, a.trials_succeeded, a.trials_failed,
            a.trials_missing) == (2, 4, 4, 3, 1, 0)
    assert a.mean_score == pytest.approx((1.0 + 0.75 + 0 + 0.8) / 4)
    assert a.mean_score_graded == pytest.approx(2.55 / 3)
    assert a.pass_rate == pytest.approx(3 / 4)
    assert a.pass_at_k == {1: pytest.approx(0.75), 2: pytest.approx(1.0)}  # a1 1, a2 .5 ; a1 1, a2 1
    assert a.pass_hat_k == {1: pytest.approx(0.75), 2: pytest.approx(0.5)}  # a1 1, a2 0
    assert (b.tasks, b.trials_planned, b.trials_finished, b.trials_succeeded, b.trials_failed,
            b.trials_missing) == (2, 4, 3, 2, 1, 1)
    assert b.mean_score == pytest.approx(0.5)  # (.6 + 0 + .9) / 3
    assert b.mean_score_graded == pytest.approx(0.75)
    assert b.pass_rate == pytest.approx(1 / 3)
    assert b.pass_at_k == {1: pytest.approx(0.5), 2: pytest.approx(0.0)}  # b1 0, b2 1 ; b1 only
    assert b.tasks_at_k == {1: 2, 2: 1}
    assert (b.all_passed, b.all_passed_tasks) == (0.0, 1)


def test_errors_count_latest_attempt_only(mixed):
    assert mixed.errors == {"agent_timeout": 1, "agent_error": 0, "grading_error": 1, "infra": 0, "setup_error": 0}


def test_claw_eval_block(mixed):
    c = ClawEvalSummary.model_validate(mixed.benchmarks["claw-eval"])
    assert (c.tasks, c.trials_finished, c.trials_graded) == (2, 3, 2)
    assert c.mean_task_score == pytest.approx(0.6)  # b1 (.6 + 0)/2 = .3, b2 .9 -> (.3 + .9)/2
    assert c.dimensions == {"safety": 1.0, "completion": pytest.approx(0.75), "robustness": pytest.approx(0.75),
                            "communication": pytest.approx(0.4)}  # communication only from b1
    assert list(c.dimensions) == ["safety", "completion", "robustness", "communication"]
    assert "evoclawbench" not in mixed.benchmarks


def test_usage_totals_and_means(mixed):
    u = mixed.usage_end_to_end
    assert u.trials == 7  # the running trial and the superseded attempt are not counted
    assert (u.total.input_tokens, u.total.output_tokens) == (700, 140)
    assert u.total.total_tokens == 150 + 6 * 120  # a1/0 says 150; the others report 0 -> in + out
    assert u.total.cost_usd == pytest.approx(0.07)
    assert u.total.wall_seconds == pytest.approx(70)
    assert u.mean_per_trial.total_tokens == pytest.approx(870 / 7)
    assert u.mean_per_trial.cost_usd == pytest.approx(0.01)
    assert mixed.usage_execution is None  # nobody carried execution_usage


def test_json_round_trip(mixed):
    assert RunSummary.model_validate_json(mixed.model_dump_json()) == mixed


def test_without_planned_tasks_plan_is_what_ran():
    s = summarize(mixed_run(), trials_per_task=2)
    assert (s.overall.tasks, s.overall.trials_planned, s.overall.trials_missing) == (4, 8, 1)


def test_nothing_finished():
    s = summarize([], trials_per_task=3, planned_tasks=["x", "y"])
    o = s.overall
    assert (o.tasks, o.trials_planned, o.trials_finished, o.trials_missing) == (2, 6, 0, 6)
    assert o.mean_score is None and o.pass_rate is None
    assert o.pass_at_k == {1: None, 2: None, 3: None} and o.tasks_at_k == {1: 0, 2: 0, 3: 0}
    assert s.usage_end_to_end.trials == 0 and s.usage_end_to_end.mean_per_trial is None
    assert s.by_category == {} and s.benchmarks == {}


@pytest.mark.parametrize("results,kwargs,needle", [
    ([tr("a1", 2, 1.0)], {}, "trial_index outside 0..1"),
    ([tr("zz", 0, 1.0)], {"planned_tasks": ["a1"]}, "not among the planned"),
    ([tr("a1", 0, state=TrialState.SUCCEEDED)], {}, "succeeded but no score"),
    ([tr("a1", 0, 1.0, details={"execution_usage": {"input_tokens": "lots"}})], {}, "execution_usage"),
])
def test_invalid_results_are_named(results, kwargs, needle):
    with pytest.raises(ValueError, match=needle) as e:
        summarize(results, trials_per_task=2, **kwargs)
    assert "task '" in str(e.value)


def test_trials_per_task_must_be_positive():
    with pytest.raises(ValueError, match="trials_per_task"):
        summarize([], trials_per_task=0)


def evo(task, mode, score=None, error=None, *, usage, exec_usage=None, subs=None):
    return tr(task, 0, score, error, category="evo", fmt="evoclawbench", mode=mode, usage=usage, subs=subs,
              details={"execution_usage": exec_usage.model_dump()} if exec_usage else None)


def modes_run():
    """K=1; e1 in all three modes, e2 baseline (failed) + preskill; e2 postskill never ran."""
    return [
        evo("e1", "baseline", 0.5, usage=Usage(total_tokens=1000, cost_usd=1.0, wall_seconds=100),
            subs={"sub_1": 0.5, "sub_2": 0.5}),
        evo("e2", None, error=ErrorKind.AGENT_ERROR,  # mode None counts as baseline
            usage=Usage(total_tokens=200, cost_usd=0.2, wall_seconds=40)),
        evo("e1", "preskill", 0.8, usage=Usage(total_tokens=1500, cost_usd=1.5, wall_seconds=150),
            exec_usage=Usage(total_tokens=800, cost_usd=0.4, wall_seconds=40),
            subs={"sub_10": 0.8, "sub_2": 0.6, "sub_1": 1.0}),
        evo("e2", "preskill", 0.75, usage=Usage(total_tokens=500, cost_usd=0.5, wall_seconds=50),
            subs={"sub_2": 0.75}),
        evo("e1", "postskill", 1.0, usage=Usage(total_tokens=600, cost_usd=0.6, wall_seconds=60),
            exec_usage=Usage(total_tokens=500, cost_usd=0.5, wall_seconds=50),
            subs={"sub_1": 1.0, "sub_2": 1.0}),
    ]


@pytest.fixture
def by_modes():
    return summarize(modes_run(), trials_per_task=1, planned_tasks=["e1", "e2"])


def test_modes_overall(by_modes):
    s = by_modes
    assert s.modes == ["baseline", "preskill", "postskill"]
    o = s.overall
    # 2 tasks x 1 trial x 3 modes planned; e2/postskill missing
    assert (o.tasks, o.trials_planned, o.trials_finished, o.trials_missing) == (2, 6, 5, 1)
    # (task, mode) pairs are the k-metric units: passes 0, 0, 1, 1, 1
    assert o.tasks_at_k == {1: 5} and o.pass_at_k[1] == pytest.approx(0.6)
    assert s.errors["agent_error"] == 1


def test_mode_metrics_and_usage(by_modes):
    b, pre, post = (by_modes.by_mode[m] for m in ("baseline", "preskill", "postskill"))
    assert (b.metrics.trials_planned, b.metrics.trials_finished) == (2, 2)
    assert b.metrics.mean_score == pytest.approx(0.25)  # (.5 + 0) / 2
    assert b.metrics.pass_rate == 0.0
    assert pre.metrics.mean_score == pytest.approx(0.775) and pre.metrics.pass_rate == 1.0
    assert (post.metrics.trials_finished, post.metrics.trials_missing) == (1, 1)
    # baseline end-to-end means: tokens (1000+200)/2, cost 1.2/2, wall 140/2
    assert b.usage_end_to_end.mean_per_trial.total_tokens == pytest.approx(600)
    assert b.usage_end_to_end.mean_per_trial.wall_seconds == pytest.approx(70)
    # preskill execution: e1 800/.4/40 (carried), e2 falls back to its whole usage 500/.5/50
    assert pre.usage_execution.total.total_tokens == 1300
    assert pre.usage_execution.total.cost_usd == pytest.approx(0.9)
    assert pre.usage_end_to_end.total.total_tokens == 2000


def test_mode_ratios_vs_baseline(by_modes):
    b, pre, post = (by_modes.by_mode[m] for m in ("baseline", "preskill", "postskill"))
    assert b.vs_baseline.model_dump() == {"score": 1.0, "tokens": 1.0, "cost": 1.0, "time": 1.0}
    r = pre.vs_baseline  # means: score .775 vs .25, tokens 1000 vs 600, cost 1.0 vs .6, time 100 vs 70
    assert (r.score, r.tokens, r.cost, r.time) == pytest.approx((3.1, 5 / 3, 5 / 3, 10 / 7))
    r = pre.vs_baseline_execution  # execution means: 650 vs 600, .45 vs .6, 45 vs 70
    assert (r.score, r.tokens, r.cost, r.time) == pytest.approx((3.1, 13 / 12, 0.75, 9 / 14))
    r = post.vs_baseline  # 1.0/.25, 600/600, .6/.6, 60/70
    assert (r.score, r.tokens, r.cost, r.time) == pytest.approx((4.0, 1.0, 1.0, 6 / 7))
    r = post.vs_baseline_execution  # 500/600, .5/.6, 50/70
    assert (r.tokens, r.cost, r.time) == pytest.approx((5 / 6, 5 / 6, 5 / 7))


def test_run_level_execution_usage(by_modes):
    e2e, ex = by_modes.usage_end_to_end, by_modes.usage_execution
    assert e2e.total.total_tokens == 1000 + 200 + 1500 + 500 + 600
    assert ex.total.total_tokens == 1000 + 200 + 800 + 500 + 500


def test_evoclaw_block(by_modes):
    e = EvoClawSummary.model_validate(by_modes.benchmarks["evoclawbench"])
    assert (e.tasks, e.trials_finished, e.trials_graded) == (2, 5, 4)
    assert e.mean_score == pytest.approx(3.05 / 5)  # .5 + 0 + .8 + .75 + 1.0
    assert list(e.sub_problems) == ["sub_1", "sub_2", "sub_10"]  # numeric order
    assert e.sub_problems["sub_1"] == pytest.approx(2.5 / 3)  # .5, 1, 1
    assert e.sub_problems["sub_2"] == pytest.approx(2.85 / 4)  # .5, .6, .75, 1
    assert e.sub_problems["sub_10"] == pytest.approx(0.8)


def test_no_baseline_no_ratios():
    run = [r for r in modes_run() if r.mode not in (None, "baseline")]
    s = summarize(run, trials_per_task=1)
    assert s.modes == ["preskill", "postskill"]
    assert all(m.vs_baseline is None and m.vs_baseline_execution is None for m in s.by_mode.values())


def test_execution_usage_reader():
    r = evo("e1", "preskill", 0.8, usage=Usage(total_tokens=9), exec_usage=Usage(total_tokens=3))
    assert execution_usage(r).total_tokens == 3
    assert execution_usage(evo("e1", "baseline", 0.8, usage=Usage())) is None


def test_retried_attempts_are_counted_beside_the_failed_trials():
    """A trial that succeeded after its pod was deleted (infra, retried) still shows that retry in the run
    summary, and a failed trial's earlier retried attempts count too; `errors` stays the failed trials."""
    ok = tr("a1", 0, 1.0).model_copy(update={"retries": {"infra": 1}})
    failed = tr("a1", 1, error=ErrorKind.GRADING_ERROR).model_copy(update={"retries": {"grading_error": 1, "infra": 2}})
    s = summarize([ok, failed, tr("a2", 0, 0.5)], trials_per_task=2)
    assert s.retries == {"agent_timeout": 0, "agent_error": 0, "grading_error": 1, "infra": 3, "setup_error": 0}
    assert s.errors == {"agent_timeout": 0, "agent_error": 0, "grading_error": 1, "infra": 0, "setup_error": 0}
    from clawkube.reporting.report import render
    text = render(s)
    assert "retried" in text and any(line.split()[:3] == ["infra", "0", "3"] for line in text.splitlines())
    assert summarize([tr("a1", 0, 1.0)], trials_per_task=1).retries == \
        {"agent_timeout": 0, "agent_error": 0, "grading_error": 0, "infra": 0, "setup_error": 0}
