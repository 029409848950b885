"""Unit-level parity with EvoClawBench's own code (a local checkout named by $CLAWKUBE_UPSTREAM_EVOCLAWBENCH; the
tests skip with the reason without one): its task loader, judge prompt and verdict reading, created-skill scan
and skill quality, and three-mode metrics against this project's, on the real task files."""
from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

from clawkube.benchmarks.evoclaw import judge as J
from clawkube.benchmarks.evoclaw import taskfile
from clawkube.benchmarks.evoclaw.transcript import to_openclaw
from clawkube.benchmarks.evoclaw import metrics
from clawkube.skills import scan
from tests.benchmark_data import EVOCLAW, data, upstream

TASKS = EVOCLAW / "evoclawbench" / "tasks"


@pytest.fixture(scope="module")
def up():
    root = upstream("evoclawbench")
    scripts = next((p for p in (root / "evoclawbench" / "scripts", root / "scripts") if p.is_dir()), None)
    if scripts is None:
        pytest.skip(f"{root} holds no evoclawbench/scripts")
    sys.path.insert(0, str(scripts))
    try:
        yield {name: importlib.import_module(name) for name in ("lib_tasks", "lib_grading", "lib_metrics")}
    finally:
        sys.path.remove(str(scripts))


@pytest.fixture(scope="module")
def their_tasks(up):
    return {t.task_id: t for t in up["lib_tasks"].TaskLoader(data(TASKS)).load_all_tasks()}


def test_every_task_reads_the_same(up, their_tasks):
    grading = up["lib_grading"]
    files = sorted(TASKS.glob("task_*.md"))
    assert len(files) == len(their_tasks) > 100
    for f in files:
        mine = taskfile.read(f)
        t = their_tasks[mine.frontmatter["id"]]
        assert mine.prompt == t.prompt, t.task_id
        assert (mine.section("Expected Behavior") or "").strip() == t.expected_behavior
        assert mine.criteria == t.grading_criteria
        assert mine.judge_rubric == (t.llm_judge_rubric or grading._format_grading_criteria(t))
        assert mine.grader_code == grading._extract_grading_code(t)
        assert [(s.index, s.title, s.description) for s in mine.sub_problems] == \
            [(s.index, s.title, s.description) for s in t.sub_problems]


def records():
    return to_openclaw([
        {"type": "message", "role": "user", "content": "BASELINE MODE:\nsolve it"},
        {"type": "message", "role": "assistant", "content": "Looking."},
        {"type": "tool_call", "role": "assistant", "tool": "bash", "call_id": "s0", "arguments": {"command": "ls -la"}},
        {"type": "tool_result", "role": "tool", "tool": "bash", "call_id": "s0", "content": "x" * 300},
        {"type": "message", "role": "assistant", "content": "Done, files written."}])


@pytest.mark.parametrize("task_id", ["task_02_log_analysis", "task_07_doc_extraction", "task_13_data_pipeline",
                                     "task_21_metrics_anomaly"])
def test_the_judge_prompt_is_the_same(up, their_tasks, tmp_path, task_id):
    grading = up["lib_grading"]
    t = their_tasks[task_id]
    ws = tmp_path / "ws"
    for rel in t.workspace_files:
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_bytes((EVOCLAW / "evoclawbench" / rel).read_bytes())
    (ws / "outputs").mkdir()
    for i in range(12):
        (ws / "outputs" / f"r{i:02d}.json").write_text(json.dumps({"i": i, "pad": "y" * 4000}))
    mine_task = taskfile.read(TASKS / f"{task_id}.md")
    jt = J.JudgeTask(prompt=mine_task.prompt, expected_behavior=(mine_task.section("Expected Behavior") or "").strip(),
                     rubric=mine_task.judge_rubric, workspace_files=[w for w in t.workspace_files if isinstance(w, str)])
    recs = records()
    theirs = grading._build_judge_prompt(t, grading._summarize_transcript(recs),
                                         t.llm_judge_rubric or grading._format_grading_criteria(t),
                                         grading._build_workspace_context(t, ws))
    assert J.prompt(jt, J.transcript_summary(recs), J.workspace_context(jt, ws)) == theirs


@pytest.mark.parametrize("reply", [
    '{"scores": {"a": 0.5, "b": 1}, "total": 0.7, "notes": "ok"}', '```json\n{"scores": {"a": 0.4}, "total": 2}\n```',
    'Sure: {"a": 0.2, "b": 0.6, "notes": "flat"} thanks', "no json", "[1, 2]", '{"a": "x", "b": 0.5}',
    '{"scores": {"a": 0.9}}', '{"total": -1, "notes": 3}'])
def test_the_verdict_is_read_the_same(up, reply):
    grading = up["lib_grading"]
    scores = grading._parse_judge_response(reply)
    total = float(scores.pop("total", grading._average_scores(scores)))
    notes = str(scores.pop("notes", ""))
    v = J.verdict(reply)
    assert (v.score, v.breakdown, v.notes) == (max(0.0, min(1.0, total)), grading._normalize_score_dict(scores), notes)


def test_created_skills_and_quality_are_the_same(up, tmp_path):
    skills = tmp_path / "skills"
    for name, md, scripts, refs in (("a", "---\nname: a\ndescription: d\n---\n" + "w" * 600, 2, 1),
                                    ("b", "plain text", 0, 0), ("c", "---\nname: c\n---\n" + "z" * 150, 1, 0),
                                    ("skill-creator", "seeded", 1, 1)):
        d = skills / name
        d.mkdir(parents=True)
        (d / "SKILL.md").write_text(md)
        for kind, n in (("scripts", scripts), ("references", refs)):
            for i in range(n):
                (d / kind).mkdir(exist_ok=True)
                (d / kind / f"{i}.txt").write_text("x")
    theirs = up["lib_metrics"].scan_created_skills(str(tmp_path), exclude_names=frozenset({"skill-creator"}))
    mine = scan.created_skills(skills)
    assert [(s.name, s.content_length, s.frontmatter, s.has_scripts, s.scripts_count, s.references_count)
            for s in mine] == [(s["name"], s["content_length"], s["frontmatter"], s["has_scripts"], s["scripts_count"],
                                s["references_count"]) for s in theirs]
    assert scan.skill_quality(mine) == up["lib_grading"].grade_skill_quality(theirs, None)


def test_three_mode_metrics_are_the_same(up):
    def usage(tok: int, secs: float, cost: float) -> metrics.ModeUsage:
        return metrics.ModeUsage(total_tokens=tok, input_tokens=tok - 10, output_tokens=10, total_cost_usd=cost,
                                 cost_usd=cost, total_execution_time_seconds=secs, request_count=3)
    facts = [
        metrics.TrialFacts(task_id="a", mode="baseline", score=0.4, execution_usage=usage(100, 2.0, 0.1),
                           end_to_end_usage=usage(100, 2.0, 0.1)),
        metrics.TrialFacts(task_id="b", mode="baseline", score=0.0, execution_usage=usage(50, 1.0, 0.0),
                           end_to_end_usage=usage(50, 1.0, 0.0)),
        metrics.TrialFacts(task_id="a", mode="preskill", score=0.9, execution_usage=usage(60, 1.5, 0.05),
                           end_to_end_usage=usage(160, 3.5, 0.15), skill_quality=0.7, created_skills=["s1"]),
        metrics.TrialFacts(task_id="b", mode="preskill", score=0.3, execution_usage=usage(40, 0.5, 0.0),
                           end_to_end_usage=usage(90, 1.5, 0.0), skill_mutation_violation=True),
        metrics.TrialFacts(task_id="a", mode="postskill", score=0.8, execution_usage=usage(70, 1.0, 0.02),
                           end_to_end_usage=usage(300, 5.0, 0.3), first_pass_score=0.4, skill_quality=0.9,
                           created_skills=["s2", "s3"]),
    ]
    entries = metrics.task_entries(facts)

    def theirs_of(mode: str) -> dict:
        out = {}
        for tid, e in entries.get(mode, {}).items():
            p = {"mean_score": e.mean_score, "usage": e.usage.model_dump(),
                 "created_skills": [{"name": s} for s in e.created_skills],
                 "skill_quality_score": e.skill_quality_score, "skill_mutation_violation": e.skill_mutation_violation}
            if mode != "baseline":
                p["end_to_end_usage"] = e.end_to_end_usage.model_dump()
            if mode == "postskill":
                p["first_pass_mean_score"] = e.first_pass_mean_score
            out[tid] = p
        return out

    theirs = up["lib_metrics"].aggregate_three_mode_metrics(baseline_results=theirs_of("baseline"),
                                                            preskill_results=theirs_of("preskill"),
                                                            postskill_results=theirs_of("postskill"))
    mine = metrics.three_mode_metrics(facts).model_dump(mode="json")
    for skills in (theirs["created_skills"], mine["created_skills"]):
        skills["preskill"] = [s["name"] if isinstance(s, dict) else s for s in skills["preskill"]]
        skills["postskill"] = [s["name"] if isinstance(s, dict) else s for s in skills["postskill"]]
    assert json.loads(json.dumps(theirs)) == mine


def test_the_overhead_comparison_runs_both_runners_and_reports_ratios_and_load():
    """bench/overhead_evoclaw.py (local_overhead.py --upstream): one task, one round each side; the figures are
    there and consistent (no timing target here: the benchmark script prints the figure)."""
    root = upstream("evoclawbench")
    data(EVOCLAW)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    import overhead_evoclaw

    fig = overhead_evoclaw.compare(root, overhead_evoclaw.tasks(1), rounds=1)
    assert fig["rounds"] == 1 and len(fig["ours_trial_seconds"]) == len(fig["upstream_trial_seconds"]) == 1
    assert fig["ratio"] == pytest.approx(fig["ours_trial_seconds_median"] / fig["upstream_trial_seconds_median"], abs=0.03)
    assert fig["ours_trial_cpu_seconds_median"] > 0 and fig["upstream_trial_cpu_seconds_median"] > 0
    assert len(fig["loadavg_1min"]) == 2 and fig["round_ratio_median"] > 0
    assert "median of the rounds' own ratios" in overhead_evoclaw.report(fig)
