"""EvoClawBench loader on good files."""
from __future__ import annotations

from pathlib import Path

from clawkube.benchmarks.evoclaw import load as evoclaw
from clawkube.tasks.model import FileMapping, SubProblem

TASK = """---
id: evo-1
name: Three steps
category: data
grading_type: hybrid
timeout_seconds: 200
sub_problems: 2
skill_category: wrangling
workspace_files:
  - fixtures/evoclaw/evo-1/data.csv
  - source: fixtures/evoclaw/evo-1/project
    dest: .
  - {source: fixtures/evoclaw/evo-1/data.csv, dest: input/raw.csv}
grading_weights:
  sub_1_a: 2
  sub_2_b: 1
---

## Prompt

Do both steps.

## Expected Behavior

Both files written.

## Sub-Problems

### Sub-Problem 1: Parse

Parse the CSV.

### Sub-Problem 2 - Report

Write the report.

## Grading Criteria

- [ ] parsed

## Automated Checks

```python
def grade(transcript, workspace_path):
    return {"sub_1_a": 1.0, "sub_2_b": 0.0}
```

## LLM Judge Rubric

Is the report readable?

## Reference Solution

```sh
echo ok
```
"""


def make_repo(root: Path, text: str = TASK) -> Path:
    (root / ".git").mkdir(parents=True)
    fx = root / "fixtures" / "evoclaw" / "evo-1"
    (fx / "project").mkdir(parents=True)
    (fx / "project" / "main.py").write_text("print(1)\n")
    (fx / "data.csv").write_text("a,b\n")
    path = root / "tasks" / "evoclaw" / "evo-1.md"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    return path


def test_full_task(tmp_path):
    task = evoclaw.load(make_repo(tmp_path))
    fx = (tmp_path / "fixtures/evoclaw/evo-1").resolve()
    assert task.format == "evoclawbench"
    assert (task.id, task.name, task.category, task.grading_type, task.timeout_seconds, task.skill_category) == \
        ("evo-1", "Three steps", "data", "hybrid", 200, "wrangling")
    assert task.workspace == [FileMapping(src=fx / "data.csv", dest="data.csv"),
                              FileMapping(src=fx / "project", dest="."),
                              FileMapping(src=fx / "data.csv", dest="input/raw.csv")]
    assert task.sub_problems == [SubProblem(index=1, title="Parse", text="Parse the CSV."),
                                 SubProblem(index=2, title="Report", text="Write the report.")]
    assert task.agent_view().sub_problems == task.sub_problems
    assert task.grading_weights == {"sub_1_a": 2.0, "sub_2_b": 1.0}
    assert task.judge_rubric == "Is the report readable?"
    assert task.reference_solution == "echo ok\n"
    assert "sub_1_a" in task.grader.inline_code
    assert task.grading_files == []


def test_sub_problem_count_may_be_omitted(tmp_path):
    task = evoclaw.load(make_repo(tmp_path, TASK.replace("sub_problems: 2\n", "")))
    assert [s.index for s in task.sub_problems] == [1, 2]


def test_no_sub_problems(tmp_path):
    text = TASK.replace("sub_problems: 2\n", "sub_problems: 0\n")
    text = text[:text.index("## Sub-Problems")] + text[text.index("## Grading Criteria"):]
    assert evoclaw.load(make_repo(tmp_path, text)).sub_problems == []


def test_llm_judge_task_with_automated_checks_loads(tmp_path):
    task = evoclaw.load(make_repo(tmp_path, TASK.replace("grading_type: hybrid", "grading_type: llm_judge")))
    assert task.grading_type == "llm_judge"
