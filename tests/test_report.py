import pytest

from clawkube.results.model import TrialState
from clawkube.reporting.report import render, render_progress, shown_ks
from clawkube.reporting.summary import summarize
from tests.test_summary import mixed_run, modes_run, tr


def row(text: str, first: str) -> list[str]:
    """The cells of the one table line starting with the words `first`."""
    lines = [line for line in text.splitlines() if line.split()[:len(first.split())] == first.split()]
    assert len(lines) == 1, f"expected one line starting with {first!r}:\n{text}"
    return lines[0].split()


@pytest.fixture
def mixed_text():
    return render(summarize(mixed_run(), trials_per_task=2, planned_tasks=["a1", "a2", "b1", "b2", "c1"]))


def test_score_table(mixed_text):
    header = row(mixed_text, "category")
    assert header == ["category", "tasks", "planned", "finished", "failed", "missing", "mean", "graded", "pass",
                      "pass@1", "pass@2", "pass^1", "pass^2", "all-pass"]
    # values from tests/test_summary.py: mean 4.05/7, graded 4.05/5, pass 4/7, pass@k .625 .667, pass^k .625 .333
    assert row(mixed_text, "ALL") == ["ALL", "5", "10", "7", "2", "3", "0.579", "0.810", "0.571",
                                      "0.625", "0.667", "0.625", "0.333", "0.333"]
    assert row(mixed_text, "beta") == ["beta", "2", "4", "3", "1", "1", "0.500", "0.750", "0.333",
                                       "0.500", "0.000", "0.500", "0.000", "0.000"]
    assert row(mixed_text, "alpha")[:6] == ["alpha", "2", "4", "4", "1", "0"]


def test_errors_usage_and_claw_eval(mixed_text):
    assert row(mixed_text, "agent_timeout") == ["agent_timeout", "1"]
    assert row(mixed_text, "grading_error") == ["grading_error", "1"]
    assert row(mixed_text, "end-to-end total")[:7] == ["end-to-end", "total", "7", "700", "140", "870", "0.0700"]
    assert "execution" not in mixed_text  # no execution usage in this run
    assert "mean task score 0.600" in mixed_text
    assert row(mixed_text, "communication") == ["communication", "0.400"]
    assert "EvoClawBench" not in mixed_text and "Modes" not in mixed_text
    assert "\x1b" not in mixed_text  # no colour codes


def test_modes_and_sub_problems():
    text = render(summarize(modes_run(), trials_per_task=1, planned_tasks=["e1", "e2"]))
    assert row(text, "sub_10") == ["sub_10", "0.800"]
    end_to_end, execution = text.split("Modes (end-to-end")[1].split("Modes (execution-only")
    # preskill vs baseline: score .775/.25, tokens 1000/600, cost 1.0/.6, time 100/70
    assert row(end_to_end, "preskill")[-4:] == ["3.10x", "1.67x", "1.67x", "1.43x"]
    # execution: 650/600, .45/.6, 45/70
    assert row(execution, "preskill")[-4:] == ["3.10x", "1.08x", "0.75x", "0.64x"]
    assert row(execution, "postskill")[1:4] == ["1", "1.000", "1.000"]


def test_nothing_finished_renders_dashes():
    text = render(summarize([], trials_per_task=1, planned_tasks=["x"]))
    assert row(text, "ALL") == ["ALL", "1", "1", "0", "0", "1", "-", "-", "-", "-", "-", "-"]
    assert "no failed trials" in text


@pytest.mark.parametrize("k_max,expected", [(1, [1]), (3, [1, 2, 3]), (5, [1, 2, 3, 4, 5]),
                                            (8, [1, 2, 5, 8]), (6, [1, 2, 5, 6])])
def test_shown_ks(k_max, expected):
    assert shown_ks(k_max) == expected


@pytest.mark.parametrize("args,expected", [
    ((35, 100, 2, 12), "[####........]  35/100  (2 failed)"),  # 35*12//100 = 4 cells
    ((0, 10, 0, 5), "[.....]  0/10"),
    ((10, 10, 0, 5), "[#####] 10/10"),
    ((1, 3, 1, 4), "[#...] 1/3  (1 failed)"),  # 1*4//3 = 1
    ((0, 0, 0, 3), "[###] 0/0"),  # nothing to do is done
])
def test_render_progress(args, expected):
    assert render_progress(*args) == expected


@pytest.mark.parametrize("args,needle", [
    ((11, 10, 0, 5), "done <= total"),
    ((-1, 10, 0, 5), "done <= total"),
    ((3, 10, 4, 5), "failed <= done"),
    ((3, 10, 0, 0), "width"),
])
def test_render_progress_rejects(args, needle):
    with pytest.raises(ValueError, match=needle):
        render_progress(*args)


def test_mode_without_finished_trials_renders_dashes():
    run = modes_run() + [tr("e1", 0, state=TrialState.RUNNING, category="evo", fmt="evoclawbench", mode="extra")]
    text = render(summarize(run, trials_per_task=1))
    assert row(text.split("Modes (execution-only")[1], "extra") == ["extra", "0"] + ["-"] * 9
