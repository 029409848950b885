"""Find, detect and load tasks of all three formats; select among them.

Formats (`detect_format`):
- a folder holding `task.yaml` (or that file itself): CLAW-Eval;
- a `*.md` file whose YAML frontmatter has `grading_type` or `sub_problems`: EvoClawBench;
- any other `*.md` file with frontmatter: WildClawBench;
- `README.md` (any case) without frontmatter: not a task (ignored); other `*.md` without frontmatter are errors.

`load_tasks(root)` walks `root` (sorted, skipping hidden folders, `__pycache__`, `node_modules` and folders named
`fixtures`, which hold task data such as skills and notes; it does not descend into a CLAW-Eval task folder), loads every task, records each failure as a `LoadError` and goes on. Task ids must be
unique: every file of a duplicated id is reported and none of them is loaded (which one was meant is unknown).

Path resolution. Task files name files by relative paths (WildClawBench `Workspace Path` and `Skills`,
EvoClawBench `workspace_files`, CLAW-Eval `sandbox_files`, `sandbox_grader_files`, `environment.fixtures`).
A relative path is looked up against, in order:
1. the task's folder (the Markdown file's folder; the CLAW-Eval task folder),
2. then each parent folder in turn, up to and including the first one holding a `.git` entry (the repository
   root); without a repository, up to the filesystem root.
The first folder where the path exists wins. So `tasks/wildclaw/x.md` may say `fixtures/x` (beside it, as the
sample tasks do, so that a copy of the tasks folder alone - a ConfigMap, an S3 prefix - still has them) or
`workspace/x` (relative to the repo root, as the real benchmarks do), and `tasks/claw-eval/t/task.yaml` may say
`fixtures/data.csv` (inside its own folder). Absolute paths are used as they are. Every path in a loaded `TaskSpec` is absolute and
exists; a path found nowhere is an error naming the field.

File mappings: a plain path entry is copied under its base name; `{source, dest}` copies to `dest` (relative,
no `..`). A folder's contents are merged into its dest (`"."` = the top of the target folder).
"""
from __future__ import annotations

import os
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Optional

from pydantic import BaseModel, Field

from ..runspec import TaskSelector
from . import claweval, evoclaw, markdown, wildclaw
from .model import TaskFormat, TaskLoadError, TaskSpec

_LOADERS = {TaskFormat.WILDCLAW: wildclaw.load, TaskFormat.CLAW_EVAL: claweval.load,
            TaskFormat.EVOCLAW: evoclaw.load}
_EVO_KEYS = ("grading_type", "sub_problems")
_SKIP_DIRS = {"__pycache__", "node_modules", "fixtures"}  # fixtures/: task data (SKILL.md, notes), never tasks


class LoadError(BaseModel):
    path: Path
    field: str
    problem: str

    @classmethod
    def of(cls, e: TaskLoadError) -> "LoadError":
        return cls(path=e.path, field=e.field, problem=e.problem)

    def __str__(self) -> str:
        return f"{self.path}: field '{self.field}': {self.problem}"


class LoadReport(BaseModel):
    tasks: list[TaskSpec] = Field(default_factory=list)
    errors: list[LoadError] = Field(default_factory=list)


class UnknownTaskIds(ValueError):
    """A selector names ids (or id patterns) that match no loaded task."""

    def __init__(self, ids: list[str]):
        self.ids = ids
        super().__init__(f"selector ids match no loaded task: {', '.join(ids)}")


def _is_readme(path: Path) -> bool:
    return path.name.lower() == "readme.md"


def detect_format(path: Path) -> Optional[TaskFormat]:
    """The task format of a file or folder, or None when it is not a task (README, other files, plain folders)."""
    path = Path(path)
    if path.is_dir():
        return TaskFormat.CLAW_EVAL if (path / claweval.TASK_FILE).is_file() else None
    if path.name == claweval.TASK_FILE:
        return TaskFormat.CLAW_EVAL
    if path.suffix.lower() != ".md" or not path.is_file():
        return None
    front = markdown.read_frontmatter(path)
    if front is None:
        if _is_readme(path):
            return None
        raise TaskLoadError(path, "frontmatter", "Markdown file has no YAML frontmatter, so it is not a task "
                                                 "(only README.md files may lack one)")
    return TaskFormat.EVOCLAW if any(k in front for k in _EVO_KEYS) else TaskFormat.WILDCLAW


def load_task(path: Path) -> TaskSpec:
    path = Path(path)
    if not path.exists():
        raise TaskLoadError(path, "path", "does not exist")
    fmt = detect_format(path)
    if fmt is None:
        raise TaskLoadError(path, "format", "not a task: expected a task folder with task.yaml, a task.yaml, "
                                            "or a Markdown file with YAML frontmatter")
    return _LOADERS[fmt](path)


def candidates(root: Path) -> list[Path]:
    """Task files/folders under root, in sorted order (README.md files included; detect_format skips them)."""
    root = Path(root)
    if root.is_file():
        return [root]
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        if claweval.TASK_FILE in filenames:
            found.append(here)
            dirnames[:] = []
            continue
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in _SKIP_DIRS)
        found.extend(here / f for f in sorted(filenames) if f.lower().endswith(".md"))
    return found


def load_tasks(root: Path) -> LoadReport:
    root = Path(root)
    report = LoadReport()
    if not root.exists():
        report.errors.append(LoadError(path=root, field="path", problem="does not exist"))
        return report
    loaded: list[TaskSpec] = []
    for cand in candidates(root):
        try:
            if detect_format(cand) is None:
                continue
            loaded.append(load_task(cand))
        except TaskLoadError as e:
            report.errors.append(LoadError.of(e))
    by_id: dict[str, list[TaskSpec]] = {}
    for t in loaded:
        by_id.setdefault(t.id, []).append(t)
    for t in loaded:
        same = by_id[t.id]
        if len(same) == 1:
            report.tasks.append(t)
            continue
        others = ", ".join(str(o.source_path) for o in same if o is not t)
        report.errors.append(LoadError(path=t.source_path, field="id",
                                       problem=f"duplicate task id '{t.id}' (also in {others}); not loaded"))
    return report


def select(tasks: list[TaskSpec], selector: TaskSelector) -> list[TaskSpec]:
    """Tasks matching every non-empty criterion: ids (exact or glob), categories, tags (any). Order kept.

    An id (pattern) matching none of `tasks` raises UnknownTaskIds: a typo must not silently select nothing.
    """
    unknown = [p for p in selector.ids if not any(fnmatchcase(t.id, p) for t in tasks)]
    if unknown:
        raise UnknownTaskIds(unknown)
    out = []
    for t in tasks:
        if selector.ids and not any(fnmatchcase(t.id, p) for p in selector.ids):
            continue
        if selector.categories and t.category not in selector.categories:
            continue
        if selector.tags and not set(t.tags) & set(selector.tags):
            continue
        out.append(t)
    return out
