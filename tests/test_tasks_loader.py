"""registry.detect, load_tasks over a mixed folder, duplicate ids, and selection."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from clawkube.runspec import TaskSelector
from clawkube.benchmarks import registry
from clawkube.benchmarks.loader import UnknownTaskIds, load_task, load_tasks, select
from clawkube.tasks.model import TaskLoadError

REPO = Path(__file__).resolve().parents[1]
SAMPLES = {
    "wildclaw/wild-csv-totals.md": "wildclawbench",
    "evoclaw/evo-todo-pipeline.md": "evoclawbench",
    "README.md": None,
    "wildclaw": None,
}

# a CLAW-Eval task in the benchmark's own format (the real ones are in ../shared/benchmarks/claw-eval)
CLAW_TASK = """task_id: claw-inventory
task_name: Inventory
category: data
tags: [general]
prompt:
  text: Which products need a reorder?
  language: en
sandbox_files: [fixtures/inventory.csv]
"""


def claw_task(folder: Path) -> Path:
    (folder / "fixtures").mkdir(parents=True)
    (folder / "task.yaml").write_text(CLAW_TASK)
    (folder / "fixtures" / "inventory.csv").write_text("sku,stock\nA,1\n")
    return folder


@pytest.mark.parametrize("rel", sorted(SAMPLES))
def test_detect_format(rel):
    assert detect_format(REPO / "tasks" / rel) == SAMPLES[rel]


def test_detect_claweval(tmp_path):
    folder = claw_task(tmp_path / "t")
    assert detect_format(folder) == detect_format(folder / "task.yaml") == "claw-eval"
    assert detect_format(folder / "fixtures" / "inventory.csv") is None and detect_format(tmp_path) is None


def detect_format(path: Path):
    plugin = registry.detect(path)
    return None if plugin is None else plugin.name


def test_detect_evoclaw_by_sub_problems_alone(tmp_path):
    p = tmp_path / "t.md"
    p.write_text("---\nid: x\nsub_problems: 0\n---\n")
    assert detect_format(p) == "evoclawbench"
    p.write_text("---\nid: x\n---\n")
    assert detect_format(p) == "wildclawbench"


def test_markdown_without_frontmatter_is_an_error_unless_readme(tmp_path):
    (tmp_path / "readme.md").write_text("# About\n")
    (tmp_path / "notes.md").write_text("# Notes\n")
    assert detect_format(tmp_path / "readme.md") is None
    with pytest.raises(TaskLoadError) as e:
        detect_format(tmp_path / "notes.md")
    assert e.value.field == "frontmatter"


def test_load_task_rejects_non_tasks(tmp_path):
    with pytest.raises(TaskLoadError) as e:
        load_task(REPO / "tasks" / "README.md")
    assert e.value.field == "format"
    with pytest.raises(TaskLoadError) as e:
        load_task(tmp_path / "missing.md")
    assert (e.value.field, e.value.problem) == ("path", "does not exist")


def mixed_repo(root: Path) -> Path:
    """A repo copy holding one sample of each format plus noise, under root/tasks (the Markdown samples'
    fixtures at the repo root, where the real benchmarks keep theirs)."""
    (root / ".git").mkdir(parents=True)
    shutil.copytree(REPO / "tasks/wildclaw/fixtures", root / "fixtures")
    shutil.copytree(REPO / "tasks/evoclaw/fixtures", root / "fixtures", dirs_exist_ok=True)
    tasks = root / "tasks"
    (tasks / "a" / "b").mkdir(parents=True)
    shutil.copy(REPO / "tasks/wildclaw/wild-log-errors.md", tasks / "a" / "wild.md")
    shutil.copy(REPO / "tasks/evoclaw/evo-word-stats.md", tasks / "a" / "b" / "evo.md")
    claw_task(tasks / "claw")
    (tasks / "claw" / "fixtures" / "notes.md").write_text("# not a task: inside a CLAW-Eval task folder\n")
    (tasks / "README.md").write_text("# Tasks\n")
    (tasks / ".hidden").mkdir()
    (tasks / ".hidden" / "x.md").write_text("# ignored: hidden folder\n")
    (tasks / "a" / "broken.md").write_text("---\nid: broken\n---\n\n## Prompt\n\nNo workspace, no grader.\n")
    return tasks


def test_mixed_folder(tmp_path):
    report = load_tasks(mixed_repo(tmp_path))
    got = {t.id: t.format for t in report.tasks}
    assert got == {"wild-log-errors": "wildclawbench", "evo-word-stats": "evoclawbench",
                   "claw-inventory": "claw-eval"}
    assert [(e.path.name, e.field) for e in report.errors] == [("broken.md", "Workspace Path")]
    wild = next(t for t in report.tasks if t.id == "wild-log-errors")
    assert [m.src for m in wild.workspace if m.dest == "."] == [(tmp_path / "fixtures/wild-log-errors/exec").resolve()]


def test_repo_tasks_folder_loads_cleanly():
    report = load_tasks(REPO / "tasks")
    assert report.errors == [] and len(report.tasks) == 6  # WildClawBench and EvoClawBench samples


def test_sample_tasks_carry_their_fixtures(tmp_path):
    """A copy of tasks/ alone (as `aws s3 sync tasks/ ...` or a ConfigMap stages it) loads every sample task;
    a task whose fixture is missing is a load error naming it, never silently dropped; `fixtures/` folders
    (skills with frontmatter, notes) are data, not tasks."""
    shutil.copytree(REPO / "tasks", tmp_path / "tasks")
    (tmp_path / ".git").mkdir()  # the lookup stops at the copy's root
    report = load_tasks(tmp_path / "tasks")
    assert report.errors == [] and len(report.tasks) == 6
    shutil.rmtree(tmp_path / "tasks" / "evoclaw" / "fixtures" / "evo-word-stats")
    report = load_tasks(tmp_path / "tasks")
    assert len(report.tasks) == 5
    assert [(e.path.name, e.field) for e in report.errors] == [("evo-word-stats.md", "workspace_files[0]")]


def test_missing_root_is_an_error(tmp_path):
    report = load_tasks(tmp_path / "nope")
    assert report.tasks == [] and [e.field for e in report.errors] == ["path"]


def test_duplicate_ids_load_neither(tmp_path):
    tasks = mixed_repo(tmp_path)
    (tasks / "a" / "broken.md").unlink()
    shutil.copy(tasks / "a" / "wild.md", tasks / "wild-copy.md")
    report = load_tasks(tasks)
    assert sorted(t.id for t in report.tasks) == ["claw-inventory", "evo-word-stats"]
    errs = sorted(report.errors, key=lambda e: e.path.name)
    assert [(e.path.name, e.field) for e in errs] == [("wild-copy.md", "id"), ("wild.md", "id")]
    assert "duplicate task id 'wild-log-errors'" in errs[0].problem and str(errs[1].path) in errs[0].problem


@pytest.fixture(scope="module")
def samples():
    return load_tasks(REPO / "tasks").tasks


@pytest.mark.parametrize("selector, expected", [
    ({}, None),
    ({"ids": ["wild-csv-totals", "evo-word-stats"]}, {"wild-csv-totals", "evo-word-stats"}),
    ({"ids": ["wild-*"]}, {"wild-csv-totals", "wild-fix-median", "wild-log-errors"}),
    ({"categories": ["code"]}, {"wild-fix-median", "evo-unit-converter"}),
    ({"ids": ["evo-*"], "categories": ["data", "text"]}, {"evo-todo-pipeline", "evo-word-stats"}),
    ({"categories": ["no-such-category"]}, set()),
])
def test_select(samples, selector, expected):
    got = select(samples, TaskSelector(**selector))
    assert {t.id for t in got} == (expected if expected is not None else {t.id for t in samples})
    assert got == [t for t in samples if t in got]  # order kept


def test_select_unknown_id_raises(samples):
    with pytest.raises(UnknownTaskIds) as e:
        select(samples, TaskSelector(ids=["wild-csv-totals", "typo-task", "nothing-*"]))
    assert e.value.ids == ["typo-task", "nothing-*"]
