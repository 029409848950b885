"""The real CLAW-Eval tasks load: all 300 of ../shared/benchmarks/claw-eval (specs and fixtures, no code), and what
each part becomes (agent workspace at /workspace paths, grading-only files, the plugin's own data)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from clawkube.benchmarks.claweval import load as claweval
from clawkube.benchmarks.claweval.taskyaml import TaskYaml
from clawkube.benchmarks.loader import load_task, load_tasks
from tests.benchmark_data import CLAW_EVAL, data, upstream

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tasks_dir() -> Path:
    return (data(CLAW_EVAL) / "tasks").resolve()


@pytest.fixture(scope="module")
def report(tasks_dir):
    return load_tasks(tasks_dir)


def test_all_300_tasks_load(report, tasks_dir):
    assert report.errors == []
    assert len(report.tasks) == 300 == len([d for d in tasks_dir.iterdir() if (d / "task.yaml").is_file()])
    assert {t.format for t in report.tasks} == {"claw-eval"}
    by_tag = {tag: sum(tag in t.tags for t in report.tasks) for tag in ("general", "multimodal", "user_agent")}
    assert by_tag == {"general": 199, "multimodal": 101, "user_agent": 38}
    assert sum(bool(t.extra["services"]) for t in report.tasks) == 191
    assert sum(bool(t.tools) for t in report.tasks) == 193
    assert sum(t.extra["multi_turn"] for t in report.tasks) == 38
    assert sum(bool(t.env_snapshot_commands) for t in report.tasks) == 28


def test_a_service_task(tasks_dir):
    t = load_task(tasks_dir / "T001zh_email_triage")
    assert (t.id, t.name, t.category, t.language) == ("T001zh_email_triage", "Email Triage", "communication", "zh")
    assert t.timeout_seconds == 300 and t.max_turns == 20
    assert [x["name"] for x in t.tools] == ["gmail_list_messages", "gmail_get_message", "gmail_send_message"]
    assert t.tools[1]["input_schema"]["required"] == ["message_id"]
    view = t.agent_view()
    assert view.tool_endpoints == [] and "9100" not in view.model_dump_json()  # endpoints stay out of its view
    # the sandbox file lands at its path relative to the task folder: /workspace/fixtures/gmail/inbox.json
    assert [(m.src.relative_to(tasks_dir).as_posix(), m.dest) for m in t.workspace] == [
        ("T001zh_email_triage/fixtures/gmail/inbox.json", "fixtures/gmail/inbox.json")]
    assert t.services == [] and t.safety_checks == [] and t.expected_actions == []  # the benchmark's own business
    assert t.extra["services"] == ["gmail"] and t.extra["task_dir"] == "T001zh_email_triage"
    assert t.reference_solution is None  # prose, not a script
    if t.extra["checkout"] is None:  # data without code: the grader comes from a checkout at run time
        assert t.grader.inline_code and "grader.py" in t.grader.inline_code
        assert "checkout of claw-eval/claw-eval" in t.setup_error


def test_grading_only_files_missing_fixtures_and_multi_turn(tasks_dir):
    t = load_task(tasks_dir / "T100_reverse_decoder")
    assert [m.dest for m in t.workspace] == ["fixtures/decoder.py", "fixtures/target.txt"] or \
        "fixtures/decoder.py" in t.extra["missing_files"]  # code files are not in the data copy
    assert "python /workspace/fixtures/verify_encoder.py" in t.env_snapshot_commands
    video = load_task(tasks_dir / "M015_video_subtitle_ocr_english")
    assert "fixtures/video.webm" in video.extra["missing_files"]  # published elsewhere; left out as upstream does
    c = load_task(tasks_dir / "C01zh_mortgage_prepay")
    assert c.extra["multi_turn"] is True and c.tools == [] and c.timeout_seconds == 900


def test_validate_reports_300_loaded(tasks_dir):
    p = subprocess.run([sys.executable, "-m", "clawkube", "validate", str(tasks_dir), "--no-run"], capture_output=True,
                       text=True, env={**os.environ, "PYTHONPATH": str(REPO / "operator")}, timeout=600)
    assert p.returncode == 0, p.stdout[-1000:] + p.stderr[-1000:]
    assert "300 task(s) loaded, 0 malformed" in p.stdout and p.stdout.rstrip().endswith("0 problem(s)")


def test_schema_defaults_are_the_benchmarks():
    t = TaskYaml.model_validate({"task_id": "x", "task_name": "x", "prompt": {"text": "hi"},
                                 "services": [{"name": "s", "command": "python m.py", "port": 9100,
                                               "health_check": "http://localhost:9100/h"}]})
    assert (t.prompt.language, t.environment.timeout_seconds, t.environment.max_turns) == ("zh", 300, 20)
    s = t.services[0]
    assert (s.health_check_method, s.ready_timeout, s.reset_endpoint) == ("POST", 10, None)
    assert t.user_agent.max_rounds == 3 and t.environment.env_snapshot_timeout == 10
    # numbers as keywords are text, as the benchmark reads them
    c = TaskYaml.model_validate({"task_id": "x", "task_name": "x", "prompt": {"text": "hi"}, "scoring_components": [
        {"name": "n", "weight": 1, "check": {"type": "keywords_present", "keywords": [2026, "x"]}}]})
    assert c.scoring_components[0].check.keywords == ["2026", "x"]


def test_a_checkout_supplies_grader_and_hides_its_task_folder():
    root = upstream("claw-eval")
    t = load_task(root / "tasks" / "T001zh_email_triage")
    assert t.extra["checkout"] == str(root.resolve())
    assert t.grader.source_file == (root / "tasks" / "T001zh_email_triage" / "grader.py").resolve()
    assert (root / "tasks" / "T001zh_email_triage").resolve() in [p.resolve() for p in t.grading_only_paths()]


def test_running_without_the_code_says_what_is_missing(tasks_dir, monkeypatch):
    from clawkube.benchmarks.claweval.grading import CodeMissing

    monkeypatch.delenv("CLAWKUBE_CLAWEVAL_CHECKOUT", raising=False)
    t = load_task(tasks_dir / "T001zh_email_triage")
    with pytest.raises(CodeMissing, match="checkout of claw-eval/claw-eval"):
        claweval.checkout_of({**t.extra, "checkout": None})
    with pytest.raises(CodeMissing, match="is not a CLAW-Eval checkout: missing src/claw_eval"):
        claweval.checkout_of({**t.extra, "checkout": str(CLAW_EVAL)})


def test_validate_with_a_checkout_has_nothing_that_cannot_run(tasks_dir):
    root = upstream("claw-eval")
    p = subprocess.run([sys.executable, "-m", "clawkube", "validate", str(tasks_dir), "--no-run", "--claw-eval",
                        str(root)], capture_output=True, text=True, timeout=600,
                       env={**os.environ, "PYTHONPATH": str(REPO / "operator")})
    assert "300 task(s) loaded, 0 malformed, 0 template(s) skipped, 0 cannot run here" in p.stdout, p.stdout[-500:]
