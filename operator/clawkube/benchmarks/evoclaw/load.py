"""EvoClawBench: one Markdown file per task (`tasks/task_*.md` in the benchmark's repository), read as its runner
reads it (taskfile.py).

Frontmatter `id, name, category, grading_type (automated|hybrid|llm_judge; default automated), timeout_seconds
(default 120), sub_problems (a count), skill_category, workspace_files, grading_weights`; sections `Prompt`,
`Expected Behavior`, `Sub-Problems` (`### Sub-Problem N: title` + text), `Grading Criteria`, `Automated Checks`
(`grade(transcript, workspace_path) -> {criterion: float}`), `LLM Judge Rubric`, and this project's optional
`Reference Solution` (a shell script for the oracle agent; the benchmark's own tasks have none).

`grading_weights: {automated: w1, llm_judge: w2}` weighs a hybrid task's automated part against the judge's.

Workspace files keep the benchmark's layout: `assets/<dir>/<file>` is copied from the benchmark's root (the
folder above `tasks/`) to `assets/<dir>/<file>` in the workspace. (This project's own sample tasks may name a
path relative to their folder or a parent of it, found as loader.py says.) A task whose workspace file is missing
is unavailable (`TaskUnavailable`: skipped with the reason, not malformed) - the shared corpus leaves out a few
code fixtures.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from ...tasks import paths
from ...tasks.field_errors import validated
from ...tasks.grader_code import check_grader
from ...tasks.model import FileMapping, GraderSpec, SubProblem, TaskLoadError, TaskSpec, TaskUnavailable
from . import taskfile

NAME = "evoclawbench"  # the format id (TaskSpec.format)
AUTOMATED_TIMEOUT = 120  # grader time limit (s) of an automated task
JUDGE_TIMEOUT = 1200  # of a task with a judge share: the judge's retries (15+30+60+90 s) and calls fit in it
SECTION_OF_FIELD = {"prompt": "Prompt", "sub_problems": "Sub-Problems", "reference_solution": "Reference Solution"}
_LOOSE_SUB = re.compile(r"^###\s+(.*)$")


class Frontmatter(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: str = Field(min_length=1)
    name: Optional[str] = None
    category: str = "uncategorized"
    grading_type: Literal["automated", "hybrid", "llm_judge"] = "automated"
    timeout_seconds: int = Field(default=120, ge=1)
    sub_problems: Optional[int] = Field(default=None, ge=0)
    skill_category: Optional[str] = None
    workspace_files: list[Any] = Field(default_factory=list)
    grading_weights: dict[str, float] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)
    difficulty: Optional[str] = None


def check_weights(path: Path, weights: dict[str, float]) -> None:
    bad = {k: v for k, v in weights.items() if v < 0}
    if bad:
        raise TaskLoadError(path, "grading_weights", f"weights must be >= 0, got {bad}")
    if weights and sum(weights.values()) <= 0:
        raise TaskLoadError(path, "grading_weights", "weights sum to 0")


def sub_problems(tf: taskfile.TaskFile, declared: Optional[int]) -> list[SubProblem]:
    """`### Sub-Problem N: title` headings (the benchmark's form, colon included), numbered 1..N in order,
    matching the frontmatter count when given. Any other `###` heading there is an error: the benchmark's
    runner would silently fold it into the sub-problem before it."""
    path, found = tf.path, []
    file_lines = path.read_text(encoding="utf-8").split("\n")
    for line in (tf.section("Sub-Problems") or "").split("\n"):
        if not _LOOSE_SUB.match(line):
            continue
        where = f"line {file_lines.index(line) + 1}" if line in file_lines else "Sub-Problems"
        m = taskfile.SUB_HEADING.match(line)
        if not m:
            raise TaskLoadError(path, "Sub-Problems", f"heading '{line.strip()}' ({where}) is not "
                                                      "'### Sub-Problem N: title'")
        if int(m.group(1)) != len(found) + 1:
            raise TaskLoadError(path, "Sub-Problems", f"'{line.strip()}' ({where}) should be Sub-Problem "
                                                      f"{len(found) + 1}")
        found.append(len(found) + 1)
    subs = [SubProblem(index=s.index, title=s.title, text=s.description) for s in tf.sub_problems]
    if declared is not None and declared != len(subs):
        raise TaskLoadError(path, "sub_problems", f"frontmatter says {declared} sub-problems but the file has "
                                                  f"{len(subs)} '### Sub-Problem N' headings")
    return subs


def workspace(entries: Any, path: Path) -> list[FileMapping]:
    if not isinstance(entries, list):
        raise TaskLoadError(path, "workspace_files", f"must be a list, got {type(entries).__name__}")
    root = taskfile.benchmark_root(path)  # resolved once: entries below it are joined, not resolved one by one
    bases: Optional[list[Path]] = None
    out: list[FileMapping] = []
    for i, entry in enumerate(entries):
        field = f"workspace_files[{i}]"
        src, dest = taskfile.workspace_entry(entry, path, field)
        dest = paths.check_dest(dest, path, field)
        candidate = Path(src).expanduser()
        if candidate.is_absolute():
            found = candidate if candidate.exists() else None
        else:
            found = root / candidate if (root / candidate).exists() else None
            if found is None:  # this project's samples: relative to the task's folder or a parent
                bases = bases if bases is not None else paths.search_bases(path.parent)
                found = next((b / candidate for b in bases if (b / candidate).exists()), None)
        if found is None:
            raise TaskUnavailable(path, field, f"workspace file '{src}' does not exist (looked under {root})")
        out.append(FileMapping(src=found if found.is_relative_to(root) and ".." not in candidate.parts
                               else found.resolve(), dest=dest))
    return out


def grader(tf: taskfile.TaskFile, grading_type: str) -> GraderSpec:
    code = tf.grader_code
    timeout = AUTOMATED_TIMEOUT if grading_type == "automated" else JUDGE_TIMEOUT
    if grading_type == "llm_judge" and not code:
        return GraderSpec(inline_code="", timeout_seconds=timeout)  # the judge alone
    if tf.section("Automated Checks") is None:
        raise TaskLoadError(tf.path, "Automated Checks", f"missing section '## Automated Checks' (a "
                                                         f"{grading_type} task needs its grade() function)")
    if not code:
        raise TaskLoadError(tf.path, "Automated Checks", "no fenced ```python code block")
    check_grader(code, tf.path, "Automated Checks")
    return GraderSpec(inline_code=code, timeout_seconds=timeout)


def reference_solution(tf: taskfile.TaskFile) -> Optional[str]:
    text = tf.section("Reference Solution")
    if text is None:
        return None
    blocks = re.findall(r"```(?:bash|sh|shell)\s*\n(.*?)```", text, re.S)
    if not blocks:
        raise TaskLoadError(tf.path, "Reference Solution", "no fenced ```bash code block")
    return blocks[0]


def load(path: Path) -> TaskSpec:
    path = Path(path).resolve()
    tf = taskfile.read(path)
    front = validated(Frontmatter, tf.frontmatter, path)
    check_weights(path, front.grading_weights)
    if "Prompt" not in tf.sections:
        raise TaskLoadError(path, "Prompt", "missing section '## Prompt'")
    data = dict(
        id=front.id, name=front.name or front.id, category=front.category, format=NAME, source_path=path,
        tags=front.tags, difficulty=front.difficulty, prompt=tf.prompt, timeout_seconds=front.timeout_seconds,
        workspace=workspace(front.workspace_files, path), sub_problems=sub_problems(tf, front.sub_problems),
        skill_category=front.skill_category, expected_behavior=(tf.section("Expected Behavior") or "").strip(),
        grading_criteria=tf.section("Grading Criteria") or "", judge_rubric=tf.judge_rubric,
        grading_type=front.grading_type, grading_weights=front.grading_weights,
        grader=grader(tf, front.grading_type), reference_solution=reference_solution(tf),
    )
    return validated(TaskSpec, data, path, lambda f: SECTION_OF_FIELD.get(f.split(".")[0].split("[")[0], f))
