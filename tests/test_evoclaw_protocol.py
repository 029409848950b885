"""EvoClawBench's protocol pieces as pure functions: the OpenClaw-format transcript graders read, the judge's
prompt and verdict, the first-run context, created skills and their quality, the three-mode metrics."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from clawkube.benchmarks.evoclaw import judge as J
from clawkube.contracts.judge import Judge
from clawkube.benchmarks.evoclaw.transcript import to_openclaw
from clawkube.benchmarks.evoclaw import metrics, protocol
from clawkube.skills import first_run, scan


def ev(type_, role=None, content="", **kw):
    return {"type": type_, **({"role": role} if role else {}), "content": content, **kw}


def test_transcript_turns_tool_results_and_usage():
    events = [ev("message", "user", "do it"),
              ev("message", "assistant", "I will run ls."), ev("tool_call", "assistant", tool="bash", call_id="c1",
                                                                arguments={"command": "ls"}),
              ev("usage", usage={"input_tokens": 10, "output_tokens": 2, "total_tokens": 12, "cost_usd": 0.5}),
              ev("tool_result", "tool", "a.txt", tool="bash", call_id="c1"),
              ev("message", "assistant", "Done: EvoClawBench ready"), ev("error", content="ignored"),
              ev("meta", content="ignored")]
    recs = to_openclaw(events)
    assert [r["message"]["role"] for r in recs] == ["user", "assistant", "toolResult", "assistant"]
    assert recs[0]["message"]["content"] == [{"type": "text", "text": "do it"}]
    turn = recs[1]["message"]
    assert turn["content"] == [{"type": "text", "text": "I will run ls."},
                               {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "ls"}}]
    assert turn["usage"] == {"input": 10, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 12,
                             "cost": {"total": 0.5}}
    assert recs[2]["message"] == {"role": "toolResult", "toolCallId": "c1", "toolName": "bash",
                                  "content": [{"type": "text", "text": "a.txt"}], "isError": False}
    assert recs[3]["message"]["content"][0]["text"] == "Done: EvoClawBench ready"


def test_text_after_tool_calls_starts_a_new_turn():
    recs = to_openclaw([ev("tool_call", "assistant", tool="bash", call_id="a", arguments={}),
                        ev("message", "assistant", "then text")])
    assert len(recs) == 2 and recs[1]["message"]["content"] == [{"type": "text", "text": "then text"}]


def sanity_grade(transcript):  # the sanity task's check, as its task file has it
    for event in transcript:
        if event.get("type") != "message":
            continue
        msg = event.get("message", {})
        if msg.get("role") == "assistant":
            content = msg.get("content", [])
            text = content.lower() if isinstance(content, str) else " ".join(
                i.get("text", "") for i in content if isinstance(i, dict)).lower()
            if "ready" in text:
                return 1.0
    return 0.0


def test_the_sanity_check_reads_the_converted_transcript():
    assert sanity_grade(to_openclaw([ev("message", "assistant", "EvoClawBench ready")])) == 1.0
    assert sanity_grade([ev("message", "assistant", "EvoClawBench ready")]) == 0.0  # the normalised form: no


# --- judge ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("reply,score,breakdown,notes", [
    ('{"scores": {"a": 0.5, "b": 1}, "total": 0.7, "notes": "ok"}', 0.7, {"a": 0.5, "b": 1.0}, "ok"),
    ('```json\n{"scores": {"a": 0.4}, "total": 2}\n```', 1.0, {"a": 0.4}, ""),  # clamped, fences stripped
    ('Sure: {"a": 0.2, "b": 0.6, "notes": "flat"} thanks', 0.4, {"a": 0.2, "b": 0.6}, "flat"),  # mean of criteria
    ("no json at all", 0.0, {}, "unparseable response"),
    ("[1, 2]", 0.0, {}, "unexpected response type"),
    ('{"scores": {"a": "x"}, "total": "high"}', 0.0, {}, None),
])
def test_verdict(reply, score, breakdown, notes):
    v = J.verdict(reply)
    assert v.score == pytest.approx(score) and v.breakdown == breakdown
    if notes is not None:
        assert v.notes == notes
    else:
        assert v.notes.startswith("LLM judge failed")


def test_judge_prompt_parts(tmp_path: Path):
    (tmp_path / "outputs").mkdir()
    (tmp_path / "outputs" / "b.json").write_text('{"x": 1}')
    (tmp_path / "outputs" / "a.json").write_text("[]")
    (tmp_path / "outputs" / "c.txt").write_text("not json")
    (tmp_path / "notes.txt").write_text("source text")
    task = J.JudgeTask(prompt="P", expected_behavior="E", rubric="- r1", workspace_files=["notes.txt", "x.csv"])
    ctx = J.workspace_context(task, tmp_path)
    assert ctx == "--- Output: a.json ---\n[]\n\n--- Output: b.json ---\n{\"x\": 1}\n\n--- Source: notes.txt ---\nsource text"
    recs = to_openclaw([ev("message", "user", "hello"), ev("tool_call", "assistant", tool="bash", call_id="1",
                                                           arguments={"command": "ls"}),
                        ev("tool_result", "tool", "out", tool="bash", call_id="1")])
    summary = J.transcript_summary(recs)
    assert summary.splitlines() == ["User: {'type': 'text', 'text': 'hello'}", 'Tool: bash({"command": "ls"})',
                                    "Result: {'type': 'text', 'text': 'out'}"]
    text = J.prompt(task, summary, ctx)
    assert "## Task\nP\n\n## Expected Behavior\nE\n\n## Agent Output Files\n--- Output: a.json" in text
    assert text.index("## Agent Transcript (summarized)") < text.index("## Grading Rubric\n- r1")
    assert "## Agent Output Files" not in J.prompt(task, summary, "")


def test_judge_unconfigured_unreachable_and_retried():
    with pytest.raises(J.JudgeUnavailable, match="no judge configured"):
        J.ask(None, "x")
    cfg = Judge(base_url="http://127.0.0.1:9/v1", model="m")
    slept: list[float] = []
    with pytest.raises(J.JudgeUnavailable):
        J.ask(cfg, "x", sleep=slept.append)
    assert slept == []  # connection refused is not transient: no retries
    assert J.transient("judge answered HTTP 503: busy") and J.transient("read timed out")


def test_judge_against_the_scripted_model_server():
    from clawkube.modelserver.script import Script
    from clawkube.modelserver.server import ServerThread
    script = Script.model_validate({"rules": [
        {"when": {"model": "judge-a", "contains": "## Task\nP"}, "text": '{"scores": {"q": 0.9}, "total": 0.8}'},
        {"when": {"model": "busy"}, "error": {"status": 503, "message": "overloaded"}}]})
    with ServerThread(script) as s:
        v = J.judge(Judge(base_url=s.url + "/v1", model="judge-a", api_key="k"), J.JudgeTask(prompt="P"),
                    [], None)
        assert (v.score, v.breakdown) == (0.8, {"q": 0.9})
        body = s.requests()[-1].body
        assert body["temperature"] == 0.0 and body["messages"][0]["role"] == "user"
        slept: list[float] = []
        with pytest.raises(J.JudgeUnavailable, match="503"):
            J.ask(Judge(base_url=s.url + "/v1", model="busy"), "x", delays=(0.0, 0.0), sleep=slept.append)
        assert slept == [0.0, 0.0]


# --- modes ------------------------------------------------------------------------------------------------------

def test_phases_and_prompts():
    assert protocol.PHASES["postskill"] == ("postskill_first", "postskill_summary", "postskill_second")
    assert protocol.phase_prompt("baseline", "Do X").startswith("BASELINE MODE:\n") and \
        protocol.phase_prompt("baseline", "Do X").endswith("\n\nDo X")
    assert protocol.prefix("postskill_first") == protocol.BASELINE_PREFIX
    assert protocol.prefix("preskill_execute") == protocol.prefix("postskill_second") == protocol.SKILL_REUSE_PREFIX
    assert "skills/skill-creator/SKILL.md" in protocol.prefix("preskill_author")
    assert protocol.CONTEXT_FILE in protocol.prefix("postskill_summary")
    assert [protocol.adapter_phase(p) for p in protocol.PHASES["postskill"]] == ["execution", "summary", "execution"]
    with pytest.raises(ValueError):
        protocol.prefix("nope")


def test_first_run_context(tmp_path: Path):
    (tmp_path / "outputs" / "sub").mkdir(parents=True)
    (tmp_path / "outputs" / "r.json").write_text("x" * 1500)
    (tmp_path / "outputs" / "sub" / "s.txt").write_text("hi")
    facts = first_run.TaskFacts(task_id="t", task_name="T", prompt="P", expected_behavior="E",
                                grading_criteria=first_run.criteria_lines("- [ ] one\n  - [x] two\n- three"),
                                grading_type="hybrid")
    score = {"score": 0.5, "criteria": {"automated.sub_1_a": 1.0}, "sub_problems": {"sub_10": 0.2, "sub_2": 1.0},
             "details": {"grader_fields": {"notes": "judge says"}}}
    recs = to_openclaw([ev("message", "user", "a  b\nc"), ev("tool_call", "assistant", tool="bash", call_id="1",
                                                             arguments={"command": "x"}),
                        ev("message", "assistant", "y" * 700)])
    ctx = first_run.context(facts, score, tmp_path, recs)
    assert ctx["grading_criteria"] == ["one", "two"]
    assert ctx["grade"] == {"task_id": "t", "score": 0.5, "max_score": 1.0, "grading_type": "hybrid",
                            "breakdown": {"automated.sub_1_a": 1.0}, "notes": "judge says",
                            "sub_problem_scores": [1.0, 0.2]}
    assert [o["path"] for o in ctx["outputs"]] == ["outputs/r.json", "outputs/sub/s.txt"]
    assert len(ctx["outputs"][0]["content_preview"]) == 1000 and ctx["outputs"][0]["size_bytes"] == 1500
    assert ctx["transcript_summary"] == ["user: a b c", "assistant: " + "y" * 600]
    failed = first_run.context(facts, None, tmp_path / "missing", [])
    assert failed["grade"]["notes"] == "Grading failed" and failed["grade"]["score"] == 0.0 and failed["outputs"] == []
    first_run.write(tmp_path / "w" / protocol.CONTEXT_FILE, ctx)
    assert json.loads((tmp_path / "w" / ".evoclawbench" / "first_run_context.json").read_text()) == ctx


def test_created_skills_and_quality(tmp_path: Path):
    skills = tmp_path / "skills"
    (skills / "skill-creator").mkdir(parents=True)
    (skills / "skill-creator" / "SKILL.md").write_text("seeded")
    (skills / "full" / "scripts").mkdir(parents=True)
    (skills / "full" / "references").mkdir()
    (skills / "full" / "scripts" / "a.sh").write_text("x")
    (skills / "full" / "references" / "r.md").write_text("x")
    (skills / "full" / "SKILL.md").write_text("---\nname: full\ndescription: d\n---\n" + "w" * 600)
    (skills / "bare").mkdir()
    (skills / "bare" / "SKILL.md").write_text("short")
    (skills / "nomd").mkdir()
    (skills / "link").symlink_to(skills / "full")
    found = scan.created_skills(skills)
    assert [s.name for s in found] == ["bare", "full"]
    assert found[1].frontmatter == {"name": "full", "description": "d"} and found[1].scripts_count == 1
    assert scan.skill_quality(found) == round((0.0 + 1.0) / 2, 4)
    assert scan.skill_quality([]) == 0.0


def test_three_mode_metrics():
    u = lambda tok, secs: metrics.ModeUsage(total_tokens=tok, total_execution_time_seconds=secs)  # noqa: E731
    trials = [
        metrics.TrialFacts(task_id="a", mode="baseline", score=0.5, execution_usage=u(100, 2),
                           end_to_end_usage=u(100, 2)),
        metrics.TrialFacts(task_id="b", mode="baseline", score=None, execution_usage=u(100, 2),
                           end_to_end_usage=u(100, 2)),
        metrics.TrialFacts(task_id="a", mode="preskill", score=1.0, execution_usage=u(50, 1),
                           end_to_end_usage=u(150, 3), skill_quality=0.8, created_skills=["s"]),
        metrics.TrialFacts(task_id="a", mode="postskill", score=0.0, execution_usage=u(0, 1),
                           end_to_end_usage=u(300, 4), first_pass_score=0.5, skill_quality=0.4,
                           skill_mutation_violation=True, created_skills=["s", "t"]),
    ]
    m = metrics.three_mode_metrics(trials)
    assert m.execution_only.mean_scores == {"baseline": 0.25, "preskill": 1.0, "postskill": 0.0}
    assert m.execution_only.ratios_vs_baseline == {"preskill": 4.0, "postskill": 0.0}
    assert m.execution_only.efficiency_vs_baseline["preskill"].token_efficiency_gain == 4.0
    assert m.execution_only.efficiency_vs_baseline["postskill"].token_efficiency_gain is None
    assert m.end_to_end.efficiency_vs_baseline["postskill"].time_efficiency_gain == 1.0
    assert m.end_to_end.usage["preskill"].total_tokens == 150
    assert m.postskill.model_dump() == {"first_pass_mean": 0.5, "second_pass_mean": 0.0,
                                        "second_vs_first_delta": -0.5, "second_vs_first_ratio": 0.0}
    assert m.created_skills["postskill_count"] == 2 and m.skill_quality == {"preskill_mean": 0.8, "postskill_mean": 0.4}
    assert m.skill_mutation_violations == {"preskill": 0, "postskill": 1}
    assert metrics.ratio(0.5, 0.0) == "inf" and metrics.ratio(0.0, 0.0) == 1.0


def test_the_grading_process_fast_path_imports_no_pydantic(tmp_path: Path):
    """EvoClawBench's grading module runs on the standard library (most of a trial's overhead is the grading
    process's start-up; the judge client only for judged tasks) and uses the judge key variable the rest of the
    project uses."""
    import subprocess
    import sys

    from clawkube.benchmarks.evoclaw import grading
    from clawkube.contracts.judge import KEY_ENV

    assert grading.KEY_ENV == KEY_ENV
    code = ("import sys, clawkube.lifecycle.grader_main, clawkube.benchmarks.evoclaw.grading as g; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'yaml') or "
            "m.startswith('clawkube.contracts') or m.startswith('clawkube.benchmarks.evoclaw.plugin') or "
            "m in ('clawkube.benchmarks.evoclaw.judge', 'urllib.request', 'traceback')))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={"PYTHONPATH": str(Path(__file__).resolve().parents[1] / "operator")})
    assert p.returncode == 0 and p.stdout.strip() == "[]", p.stdout + p.stderr


def test_the_grading_process_reports_a_crash_and_reads_the_runner_s_criteria(tmp_path: Path):
    from clawkube.benchmarks.evoclaw import grading

    (tmp_path / "grading.json").write_text(json.dumps({"benchmark_data": {"grading_type": "automated"}}))
    (tmp_path / "t.jsonl").write_text(json.dumps({"type": "message", "role": "assistant", "content": "hi"}) + "\n")
    req = {"task_manifest_path": str(tmp_path / "grading.json"), "transcript_path": str(tmp_path / "t.jsonl"),
           "workspace_path": str(tmp_path), "output_path": str(tmp_path / "out.json"), "entry": "grade"}
    (tmp_path / "ok.py").write_text("def grade(transcript, workspace_path):\n"
                                    "    assert transcript[0]['message']['content'][0]['text'] == 'hi'\n"
                                    "    return {'a': True, 'b': 0.5, 'note': 'text', 'c': None}\n")
    assert grading.main({**req, "grader_file": str(tmp_path / "ok.py")}) == 0
    out = json.loads((tmp_path / "out.json").read_text())
    assert out == {"ok": True, "scores": {"a": 1.0, "b": 0.5}, "details": {"grading_type": "automated", "notes": ""}}
    (tmp_path / "bad.py").write_text("def grade(transcript, workspace_path):\n    raise ValueError('boom')\n")
    assert grading.main({**req, "grader_file": str(tmp_path / "bad.py")}) == 1
    out = json.loads((tmp_path / "out.json").read_text())
    assert out["ok"] is False and out["error"] == "ValueError: boom"
