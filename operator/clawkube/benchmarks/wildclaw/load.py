"""WildClawBench: one Markdown file per task.

Frontmatter `id, name, category, timeout_seconds, modality`; sections `Prompt`, `Expected Behavior`,
`Grading Criteria`, `Automated Checks` (```python defining grade(...) -> {criteria..., overall_score}),
`Workspace Path` (a folder with exec/ = the agent's workspace, tmp/, gt/ = grading-only ground truth),
optional `Skills` (paths), `Env` (variable names), `Warmup` (shell lines), and our `Reference Solution`
(```bash, grading-only, for the oracle).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

from pydantic import BaseModel, ConfigDict, Field

from ...tasks import markdown, paths
from ...tasks.md_sections import grader_spec, reference_solution
from ...tasks.model import FileMapping, TaskLoadError, TaskSpec
from ...tasks.field_errors import validated

NAME = "wildclawbench"  # the format id (TaskSpec.format)

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SECTION_OF_FIELD = {"prompt": "Prompt", "workspace": "Workspace Path", "skills": "Skills", "env": "Env",
                    "warmup": "Warmup", "reference_solution": "Reference Solution"}


class Frontmatter(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: str = Field(min_length=1)
    name: Optional[str] = None
    category: str = "uncategorized"
    timeout_seconds: int = Field(default=600, ge=1)
    modality: Optional[str] = None
    tags: list[str] = Field(default_factory=list)
    difficulty: Optional[str] = None


def env_names(doc: markdown.MarkdownDoc) -> list[str]:
    sec = doc.section("Env")
    names = sec.items() if sec is not None else []
    for n in names:
        if not _ENV_NAME.match(n):
            raise TaskLoadError(doc.path, "Env", f"'{n}' is not an environment variable name")
    return names


def skill_paths(doc: markdown.MarkdownDoc) -> list[Path]:
    sec = doc.section("Skills")
    if sec is None:
        return []
    bases = paths.search_bases(doc.path.parent)
    return [paths.resolve(item, doc.path.parent, doc.path, "Skills", bases) for item in sec.items()]


def warmup_lines(doc: markdown.MarkdownDoc) -> list[str]:
    sec = doc.section("Warmup")
    return sec.items() if sec is not None else []


def workspace(doc: markdown.MarkdownDoc) -> tuple[list[FileMapping], list[FileMapping]]:
    """(agent workspace, grading files) from the Workspace Path folder: exec/ -> ".", gt/ -> "gt"."""
    sec = doc.require("Workspace Path")
    raw = markdown.strip_inline(sec.body)
    folder = paths.resolve(raw, doc.path.parent, doc.path, sec.title)
    if not folder.is_dir():
        raise TaskLoadError(doc.path, sec.title, f"'{raw}' is not a folder")
    exec_dir = folder / "exec"
    if not exec_dir.is_dir():
        raise TaskLoadError(doc.path, sec.title, f"'{raw}' has no exec/ folder (the agent's workspace)")
    gt = folder / "gt"
    grading = [FileMapping(src=gt, dest="gt")] if gt.is_dir() else []
    return [FileMapping(src=exec_dir, dest=".")], grading


def load(path: Path) -> TaskSpec:
    path = Path(path).resolve()
    doc = markdown.parse(path)
    front = validated(Frontmatter, doc.frontmatter, path)
    ws, grading = workspace(doc)
    data = dict(
        id=front.id, name=front.name or front.id, category=front.category, format=NAME,
        source_path=path, modality=front.modality, tags=front.tags, difficulty=front.difficulty,
        prompt=doc.require("Prompt").body.strip(), timeout_seconds=front.timeout_seconds,
        workspace=ws, skills=skill_paths(doc), env=env_names(doc), warmup=warmup_lines(doc),
        expected_behavior=doc.text("Expected Behavior"), grading_criteria=doc.text("Grading Criteria"),
        grader=grader_spec(doc), grading_files=grading, reference_solution=reference_solution(doc),
    )
    return validated(TaskSpec, data, path, lambda f: SECTION_OF_FIELD.get(f.split(".")[0].split("[")[0], f))

