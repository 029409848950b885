"""EvoClawBench loader on good files: the benchmark's layout (workspace files at their own relative paths),
this project's samples, templates and tasks whose fixtures are missing."""
from __future__ import annotations

from pathlib import Path

import pytest

from clawkube.benchmarks.evoclaw import PLUGIN
from clawkube.benchmarks.evoclaw import load as evoclaw
from clawkube.benchmarks.loader import load_tasks
from clawkube.tasks.model import FileMapping, SubProblem, TaskLoadError, TaskUnavailable

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

### Sub-Problem 2: Report

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
    assert task.workspace == [FileMapping(src=fx / "data.csv", dest="fixtures/evoclaw/evo-1/data.csv"),
                              FileMapping(src=fx / "project", dest="."),
                              FileMapping(src=fx / "data.csv", dest="input/raw.csv")]
    assert task.sub_problems == [SubProblem(index=1, title="Parse", text="Parse the CSV."),
                                 SubProblem(index=2, title="Report", text="Write the report.")]
    assert task.agent_view().sub_problems == task.sub_problems
    assert task.grading_weights == {"sub_1_a": 2.0, "sub_2_b": 1.0}
    assert task.judge_rubric == "Is the report readable?"
    assert task.grader.timeout_seconds == evoclaw.JUDGE_TIMEOUT  # a hybrid task's grading waits for the judge
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


def test_llm_judge_task_without_automated_checks_loads(tmp_path):
    text = TASK.replace("grading_type: hybrid", "grading_type: llm_judge")
    text = text[:text.index("## Automated Checks")] + text[text.index("## LLM Judge Rubric"):]
    task = evoclaw.load(make_repo(tmp_path, text))
    assert task.grader.inline_code == "" and task.judge_rubric == "Is the report readable?"


def test_a_sub_problem_heading_the_runner_would_not_see_is_an_error(tmp_path):
    with pytest.raises(TaskLoadError, match=r"'### Sub-Problem 2 - Report' \(line 33\) is not"):
        evoclaw.load(make_repo(tmp_path, TASK.replace("### Sub-Problem 2: Report", "### Sub-Problem 2 - Report")))


BENCH_TASK = """---
id: task_77_x
name: X
category: c
grading_type: automated
workspace_files:
  - assets/x/case_01.csv
  - assets/x/notes.txt
---

# X

---

## Prompt

Read `assets/x/`; write `outputs/case_01_report.json`.

---

## Automated Checks

```python
def grade(transcript: list, workspace_path: str) -> dict:
    return {"ok": 1.0}
```
"""


def bench_layout(root: Path, text: str = BENCH_TASK, missing: bool = False) -> Path:
    """The benchmark's repository layout: <repo>/evoclawbench/{tasks,assets}, <repo>/skills/skill-creator."""
    base = root / "evoclawbench"
    (base / "assets" / "x").mkdir(parents=True)
    (base / "assets" / "x" / "case_01.csv").write_text("a\n")
    if not missing:
        (base / "assets" / "x" / "notes.txt").write_text("n\n")
    (base / "tasks").mkdir()
    (base / "tasks" / "task_77_x.md").write_text(text)
    (base / "tasks" / "TASK_TEMPLATE.md").write_text(text.replace("id: task_77_x", "id: task_XX_name"))
    (root / "skills" / "skill-creator").mkdir(parents=True)
    (root / "skills" / "skill-creator" / "SKILL.md").write_text("---\nname: skill-creator\n---\nHow to write skills.")
    return base / "tasks" / "task_77_x.md"


def test_benchmark_layout_keeps_paths_and_the_prompt_as_written(tmp_path):
    task = evoclaw.load(bench_layout(tmp_path))
    base = (tmp_path / "evoclawbench").resolve()
    assert task.workspace == [FileMapping(src=base / "assets/x/case_01.csv", dest="assets/x/case_01.csv"),
                              FileMapping(src=base / "assets/x/notes.txt", dest="assets/x/notes.txt")]
    assert task.prompt == "Read `assets/x/`; write `outputs/case_01_report.json`.\n\n---"  # as the runner reads it
    assert task.timeout_seconds == 120 and task.reference_solution is None
    layout = PLUGIN.workspace_layout(task)
    assert (layout.dirs, layout.skills_path) == (["outputs"], "skills")
    assert PLUGIN.authoring_skills(task) == [(tmp_path / "skills" / "skill-creator").resolve()]


def test_template_is_skipped_and_a_missing_fixture_makes_a_task_unavailable(tmp_path):
    bench_layout(tmp_path, missing=True)
    report = load_tasks(tmp_path / "evoclawbench" / "tasks")
    assert report.tasks == []
    assert [(s.path.name, s.reason) for s in report.skipped] == [("TASK_TEMPLATE.md", "a EvoClawBench template, not a task")]
    (err,) = report.errors  # listed (never silently dropped) and marked: well-formed, but its fixture is not here
    assert (err.path.name, err.field, err.unavailable) == ("task_77_x.md", "workspace_files[1]", True)
    assert err.problem.startswith("workspace file 'assets/x/notes.txt' does not exist")
    with pytest.raises(TaskUnavailable):
        evoclaw.load(tmp_path / "evoclawbench" / "tasks" / "task_77_x.md")


QUICK_CASES = {
    "plain": ("id: t_plain\ngrading_type: automated\n", True, "t_plain"),
    "quoted": ('id: "t_quoted"\nsub_problems: []\n', True, "t_quoted"),
    "commented": ("id: t_c  # the id\ngrading_type: hybrid\n", True, "t_c"),
    "two_ids": ("id: first\ngrading_type: automated\nid: second\n", True, None),  # YAML keeps the last: ask it
    "flow_style": ("{id: t_flow, grading_type: automated}\n", None, None),  # no key line: YAML decides
    "nested_key_only": ("id: t_n\nmeta:\n  grading_type: automated\n", None, None),
    "odd_id": ("id: 'has space'\ngrading_type: automated\n", True, None),
}


@pytest.mark.parametrize("name", sorted(QUICK_CASES))
def test_the_quick_frontmatter_scan_agrees_with_the_yaml_or_defers_to_it(tmp_path: Path, name: str):
    """detect/task_id read the text only (a run's selector passes over the 100-file corpus); what the text does not
    settle goes to the YAML, so both give what the YAML gives."""
    from clawkube.benchmarks.evoclaw import plugin

    front, detected, quick_id = QUICK_CASES[name]
    p = tmp_path / f"{name}.md"
    p.write_text(f"---\n{front}---\n\n## Prompt\n\nDo it.\n")
    q = plugin._quick(p)
    assert (q[0] if q else None, q[1] if q else None) == (detected, quick_id)
    yaml_front = plugin._frontmatter(p)
    assert PLUGIN.detect(p) == any(k in yaml_front for k in plugin._KEYS)
    assert PLUGIN.task_id(p) == yaml_front.get("id")


def test_a_malformed_frontmatter_is_still_reported_when_its_task_is_loaded(tmp_path: Path):
    (tmp_path / "task_bad.md").write_text("---\nid: task_bad\ngrading_type: automated\nsub_problems: [\n---\n\nx\n")
    assert PLUGIN.detect(tmp_path / "task_bad.md")  # claimed from the text: the YAML is read when it loads
    for ids in ((), ("task_bad",), ("task_*",)):
        report = load_tasks(tmp_path, ids=ids)
        assert not report.tasks and len(report.errors) == 1 and "YAML" in report.errors[0].problem, ids
    assert not load_tasks(tmp_path, ids=("other",)).errors  # a run of another task passes over it
