"""Find, detect and load the tasks of every registered benchmark; select among them.

Which benchmark a path belongs to is the plugins' decision (`registry.detect`, in priority order: each plugin's
`detect`); the built-in ones recognise (see each plugin's module):
- a folder holding `task.yaml` (or that file itself): CLAW-Eval;
- a `*.md` file whose YAML frontmatter has `grading_type` or `sub_problems`: EvoClawBench;
- any other `*.md` file with frontmatter: WildClawBench;
- `README.md` (any case) without frontmatter: not a task (ignored); other `*.md` without frontmatter are errors.

`load_tasks(root)` walks `root` (sorted, skipping hidden folders, `__pycache__`, `node_modules` and folders named
`fixtures`, which hold task data such as skills and notes; it does not descend into a folder a plugin claims as
one task), loads every task, records each failure as a `LoadError` and goes on. A path its plugin calls a
template (`Benchmark.is_template`) is skipped and listed in `LoadReport.skipped`, not an error. A task its plugin
finds well-formed but unavailable here (`TaskUnavailable`: a file it names is missing, e.g. a fixture the shared
corpus leaves out) is a load error marked `unavailable` (`clawkube validate` does not count it as malformed).
Task ids must be unique: every file of a duplicated id is reported and none of them is
loaded (which one was meant is unknown).

Path resolution. Task files name files by relative paths (WildClawBench `Workspace Path` and `Skills`,
EvoClawBench `workspace_files`, CLAW-Eval `sandbox_files`, `sandbox_grader_files`, `environment.fixtures`).
A relative path is looked up against, in order:
1. the task's folder (the Markdown file's folder; the CLAW-Eval task folder),
2. then each parent folder in turn, up to and including the first one holding a `.git` entry (the repository
   root); without a repository, up to the filesystem root.
The first folder where the path exists wins. So `tasks/wildclaw/x.md` may say `fixtures/x` (beside it, as the
sample tasks do, so that a copy of the tasks folder alone - a ConfigMap, an S3 prefix - still has them) or
`workspace/x` (relative to the repo root, as the real benchmarks do), and `tasks/claw-eval/t/task.yaml` may say
`fixtures/data.csv` (inside its own folder). Absolute paths are used as they are. Every path in a loaded
`TaskSpec` is absolute and exists; a path found nowhere is an error naming the field.

File mappings: a plain path entry is copied under its base name; `{source, dest}` copies to `dest` (relative,
no `..`). A folder's contents are merged into its dest (`"."` = the top of the target folder).
"""
from __future__ import annotations

import os
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Sequence, Union

from pydantic import BaseModel, Field

from ..runspec import TaskSelector
from ..tasks.model import TaskLoadError, TaskSpec, TaskUnavailable
from . import registry
from .base import Benchmark

_SKIP_DIRS = {"__pycache__", "node_modules", "fixtures"}  # fixtures/: task data (SKILL.md, notes), never tasks


class LoadError(BaseModel):
    path: Path
    field: str
    problem: str

    unavailable: bool = False  # well-formed, but a file it names is missing here (TaskUnavailable)

    @classmethod
    def of(cls, e: TaskLoadError) -> "LoadError":
        return cls(path=e.path, field=e.field, problem=e.problem, unavailable=isinstance(e, TaskUnavailable))

    def __str__(self) -> str:
        return f"{self.path}: field '{self.field}': {self.problem}"


class Skipped(BaseModel):
    path: Path
    benchmark: str
    reason: str


class LoadReport(BaseModel):
    tasks: list[TaskSpec] = Field(default_factory=list)
    errors: list[LoadError] = Field(default_factory=list)
    skipped: list[Skipped] = Field(default_factory=list)  # templates: not tasks, not errors


class UnknownTaskIds(ValueError):
    """A selector names ids (or id patterns) that match no loaded task."""

    def __init__(self, ids: list[str]):
        self.ids = ids
        super().__init__(f"selector ids match no loaded task: {', '.join(ids)}")


def load_task(path: Path) -> TaskSpec:
    path = Path(path)
    if not path.exists():
        raise TaskLoadError(path, "path", "does not exist")
    plugin = registry.detect(path)
    if plugin is None:
        raise TaskLoadError(path, "format", "not a task of any benchmark "
                                            f"({', '.join(registry.names())})")
    if plugin.is_template(path):
        raise TaskLoadError(path, "format", f"a {plugin.title} template, not a task")
    return plugin.load(path)


Candidate = tuple[Path, Union[Benchmark, TaskLoadError]]


def candidates(root: Path) -> list[Candidate]:
    """(path, its plugin) of every task under root in sorted walk order, or (path, TaskLoadError) where a plugin
    found a malformed file of its kind. A folder a plugin claims is one task and is not entered."""
    root = Path(root)
    found: list[Candidate] = []

    def visit(path: Path) -> bool:
        try:
            plugin = registry.detect(path)
        except TaskLoadError as e:
            found.append((path, e))
            return False
        if plugin is not None:
            found.append((path, plugin))
        return plugin is not None

    if root.is_file():
        visit(root)
        return found
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        if visit(here):
            dirnames[:] = []
            continue
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in _SKIP_DIRS)
        for f in sorted(filenames):
            visit(here / f)
    return found


def load_tasks(root: Path, ids: Sequence[str] = ()) -> LoadReport:
    """Every task under root. With `ids` (exact ids or glob patterns, a run's selector), a task whose plugin can
    tell its id without loading it (`Benchmark.task_id`) and that matches none is passed over unloaded."""
    root = Path(root)
    report = LoadReport()
    if not root.exists():
        report.errors.append(LoadError(path=root, field="path", problem="does not exist"))
        return report
    loaded: list[TaskSpec] = []
    for cand, plugin in candidates(root):
        if isinstance(plugin, TaskLoadError):
            report.errors.append(LoadError.of(plugin))
            continue
        if plugin.is_template(cand):
            report.skipped.append(Skipped(path=cand, benchmark=plugin.name,
                                          reason=f"a {plugin.title} template, not a task"))
            continue
        if ids and (known := plugin.task_id(cand)) is not None and not any(fnmatchcase(known, p) for p in ids):
            continue
        try:
            loaded.append(plugin.load(cand))
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
