"""CLAW-Eval loader on good task folders."""
from __future__ import annotations

from pathlib import Path

import pytest

from clawkube.benchmarks.claweval import load as claweval
from clawkube.tasks.model import FileMapping, ServiceSpec

TASK_YAML = """
task_id: mail-triage
task_name: Triage the inbox
category: communication
difficulty: hard
tags: [mail, safety]
prompt:
  text: Triage my inbox.
  language: en
  attachments: [inbox.png]
tools:
  - name: send_mail
    description: Send an email
tool_endpoints:
  - tool_name: send_mail
    url: http://127.0.0.1:9100/send
environment:
  timeout_seconds: 120
  max_turns: 15
  fixtures: [fixtures/mail.json]
services:
  - name: mail
    command: python3 -m mock_mail --port 9100 --data 'fixtures/mail.json'
    port: 9100
    health_check: /health
    reset_endpoint: /reset
    env: {SEED: 7, VERBOSE: true}
  - name: calendar
    command: [python3, -m, mock_cal]
    port: 9101
safety_checks:
  - {type: tool_not_called, tool_name: delete_all}
expected_actions:
  - {tool: send_mail, to: boss@example.com}
judge_rubric:
  completion: replies to the boss
reference_solution: solve.sh
sandbox_files:
  - fixtures/notes.txt
  - {source: fixtures/docs, dest: docs}
sandbox_grader_files:
  - {source: fixtures/answers.json, dest: gt/answers.json}
env_snapshot_files: [notes.txt]
env_snapshot_commands: [ls -la]
some_future_field: ignored
"""

GRADER = "def grade(transcript, workspace_path, audit, task=None):\n    return {'completion': 1.0}\n"


def make_task(root: Path, yaml_text: str = TASK_YAML) -> Path:
    folder = root / "tasks" / "claw-eval" / "mail-triage"
    (folder / "fixtures" / "docs").mkdir(parents=True)
    (folder / "fixtures" / "docs" / "guide.md").write_text("guide\n")
    for name in ("mail.json", "notes.txt", "answers.json"):
        (folder / "fixtures" / name).write_text("{}\n")
    (folder / "task.yaml").write_text(yaml_text)
    (folder / "grader.py").write_text(GRADER)
    (folder / "solve.sh").write_text("echo solved > notes.txt\n")
    return folder


def test_full_task(tmp_path):
    folder = make_task(tmp_path).resolve()
    fx = folder / "fixtures"
    task = claweval.load(folder)
    assert task.format == "claw-eval"
    assert (task.id, task.name, task.category, task.difficulty, task.tags) == \
        ("mail-triage", "Triage the inbox", "communication", "hard", ["mail", "safety"])
    assert (task.prompt, task.language, task.attachments) == ("Triage my inbox.", "en", ["inbox.png"])
    assert (task.timeout_seconds, task.max_turns) == (120, 15)
    assert task.source_path == folder
    assert task.fixtures == [fx / "mail.json"]
    assert task.services == [
        ServiceSpec(name="mail", command=["python3", "-m", "mock_mail", "--port", "9100", "--data",
                                          "fixtures/mail.json"], port=9100, health_check="/health",
                    reset_endpoint="/reset", env={"SEED": "7", "VERBOSE": "true"}),
        ServiceSpec(name="calendar", command=["python3", "-m", "mock_cal"], port=9101),
    ]
    assert task.tools[0]["name"] == "send_mail" and task.tool_endpoints[0]["tool_name"] == "send_mail"
    assert task.workspace == [FileMapping(src=fx / "notes.txt", dest="notes.txt"),
                              FileMapping(src=fx / "docs", dest="docs")]
    assert task.grading_files == [FileMapping(src=fx / "answers.json", dest="gt/answers.json")]
    assert task.reference_solution == "echo solved > notes.txt\n"
    assert task.grader.source_file == folder / "grader.py" and task.grader.inline_code is None
    assert task.safety_checks == [{"type": "tool_not_called", "tool_name": "delete_all"}]
    assert task.expected_actions == [{"tool": "send_mail", "to": "boss@example.com"}]
    assert "replies to the boss" in task.judge_rubric
    assert (task.env_snapshot_files, task.env_snapshot_commands) == (["notes.txt"], ["ls -la"])


def test_task_yaml_path_and_folder_load_the_same(tmp_path):
    folder = make_task(tmp_path)
    assert claweval.load(folder / "task.yaml") == claweval.load(folder)


@pytest.mark.parametrize("value, expected", [
    ("|\n  cp a b\n  echo done\n", "cp a b\necho done\n"),
    ("echo inline", "echo inline\n"),
])
def test_inline_reference_solution(tmp_path, value, expected):
    text = TASK_YAML.replace("reference_solution: solve.sh", f"reference_solution: {value}")
    task = claweval.load(make_task(tmp_path, text))
    assert task.reference_solution == expected


def test_minimal_task_with_plain_string_prompt(tmp_path):
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "task.yaml").write_text("task_id: t\nprompt: Just do it.\ntags:\n")
    (folder / "grader.py").write_text(GRADER)
    task = claweval.load(folder)
    assert (task.id, task.name, task.prompt, task.tags, task.timeout_seconds) == ("t", "t", "Just do it.", [], 600)
    assert task.workspace == [] and task.reference_solution is None
