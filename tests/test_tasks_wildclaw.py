"""WildClawBench loader on good files, and the path-resolution rule."""
from __future__ import annotations

from pathlib import Path


from clawkube.benchmarks.wildclaw import load as wildclaw
from clawkube.tasks.model import FileMapping

TASK = """---
id: t1
name: Task one
category: productivity
timeout_seconds: 90
modality: text
---

# Task one

## Prompt

Summarise `notes.txt`.

```text
## this line is part of the prompt
```

## Expected Behavior

Reads and summarises.

## Grading Criteria

- [ ] summary exists

## Automated Checks

```python
import os

def grade(transcript=None, workspace_path=None):
    return {"exists": 1.0, "overall_score": 1.0}
```

## Workspace Path

{workspace}

## Skills

- `skills/summarise`
- skills/extra

## Env

OPENAI_API_KEY
TZ

## Warmup

mkdir -p out
echo ready > out/state

## Reference Solution

```bash
head -n 1 notes.txt > summary.txt
```
"""


def make_repo(root: Path, workspace_line="fixtures/wildclaw/t1", with_gt=True) -> Path:
    (root / ".git").mkdir(parents=True)
    ws = root / "fixtures" / "wildclaw" / "t1"
    (ws / "exec").mkdir(parents=True)
    (ws / "exec" / "notes.txt").write_text("hello\n")
    (ws / "tmp").mkdir()
    if with_gt:
        (ws / "gt").mkdir()
        (ws / "gt" / "answer.txt").write_text("hello\n")
    for s in ("summarise", "extra"):
        (root / "skills" / s).mkdir(parents=True)
        (root / "skills" / s / "SKILL.md").write_text(f"# {s}\n")
    task = root / "tasks" / "wildclaw" / "t1.md"
    task.parent.mkdir(parents=True)
    task.write_text(TASK.replace("{workspace}", workspace_line))
    return task


def test_full_task(tmp_path):
    task = wildclaw.load(make_repo(tmp_path))
    ws = (tmp_path / "fixtures/wildclaw/t1").resolve()
    assert (task.id, task.name, task.category, task.timeout_seconds, task.modality) == \
        ("t1", "Task one", "productivity", 90, "text")
    assert task.format == "wildclawbench"
    assert task.source_path == (tmp_path / "tasks/wildclaw/t1.md").resolve()
    # the benchmark's preamble, then the prompt up to the next '## ' line (the benchmark's parser ignores fences)
    assert task.prompt.startswith("You are an expert in a restricted, non-interactive environment.")
    assert "Summarise `notes.txt`." in task.prompt and "## this line" not in task.prompt
    assert task.workspace == [FileMapping(src=ws / "tmp", dest="tmp"), FileMapping(src=ws / "exec", dest=".")]
    assert task.grading_files == [FileMapping(src=ws / "gt", dest="gt")]
    assert task.skills == [(tmp_path / "skills/summarise").resolve(), (tmp_path / "skills/extra").resolve()]
    assert task.env == ["OPENAI_API_KEY", "TZ"]
    assert task.warmup == ["mkdir -p out", "echo ready > out/state"]
    assert task.reference_solution == "head -n 1 notes.txt > summary.txt"
    assert "def grade(" in task.grader.inline_code and task.grader.source_file is None
    assert task.expected_behavior == "Reads and summarises." and "summary exists" in task.grading_criteria
    assert all(p.is_absolute() and p.exists() for p in [task.source_path, *task.skills,
                                                         *(m.src for m in task.workspace + task.grading_files)])


def test_agent_view_holds_nothing_grading_only(tmp_path):
    task = wildclaw.load(make_repo(tmp_path))
    view = task.agent_view().model_dump_json()
    assert "def grade" not in view and "head -n 1" not in view and "/gt" not in view
    assert (tmp_path / "fixtures/wildclaw/t1/gt").resolve() in task.grading_only_paths()


def test_without_gt_and_optional_sections(tmp_path):
    path = make_repo(tmp_path, with_gt=False)
    text = path.read_text()
    text = text[:text.index("## Skills")] + "## Skills\n\nNone\n"
    path.write_text(text.replace("name: Task one\n", ""))
    task = wildclaw.load(path)
    assert task.grading_files == [] and task.skills == [] and task.env == [] and task.warmup == []
    assert task.reference_solution is None and task.name == "t1"


def test_workspace_under_the_benchmark_root_wins(tmp_path):
    path = make_repo(tmp_path)
    local = path.parent / "fixtures" / "wildclaw" / "t1" / "exec"
    local.mkdir(parents=True)
    assert [m.src for m in wildclaw.load(path).workspace if m.dest == "."] == [(tmp_path / "fixtures/wildclaw/t1/exec").resolve()]


def test_absolute_workspace_path(tmp_path):
    make_repo(tmp_path / "repo")
    ws = (tmp_path / "repo/fixtures/wildclaw/t1").resolve()
    path = make_repo(tmp_path / "other", workspace_line=f"`{ws}`")
    assert [m.src for m in wildclaw.load(path).workspace if m.dest == "."] == [ws / "exec"]


def test_missing_workspace_loads_with_a_setup_error(tmp_path):
    outside = tmp_path / "fixtures" / "wildclaw" / "t2" / "exec"
    outside.mkdir(parents=True)
    path = make_repo(tmp_path / "repo", workspace_line="fixtures/wildclaw/t2")
    task = wildclaw.load(path)  # the search stops at the repository root: the folder outside it is not used
    assert task.workspace == [] and task.grading_files == []
    assert task.setup_error and str((tmp_path / "repo/fixtures/wildclaw/t2").resolve()) in task.setup_error
