"""EvoClawBench: one Markdown file per task.

Frontmatter `id, name, category, grading_type (automated|hybrid|llm_judge), timeout_seconds, sub_problems
(a count), skill_category, workspace_files, grading_weights`; sections `Prompt`, `Expected Behavior`,
`Sub-Problems` (`### Sub-Problem N: title` + text), `Grading Criteria`, `Automated Checks`
(grade(transcript, workspace_path) -> {criterion: float}), `LLM Judge Rubric`, and our `Reference Solution`.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from ...tasks import markdown, paths
from ...tasks.md_sections import grader_spec, reference_solution
from ...tasks.model import SubProblem, TaskLoadError, TaskSpec
from ...tasks.field_errors import validated

NAME = "evoclawbench"  # the format id (TaskSpec.format)

_SUB_HEADING = re.compile(r"^sub[\s_-]*problem\s+(\d+)\s*(?:[:.\-\u2013\u2014]\s*(.*))?$", re.IGNORECASE)
SECTION_OF_FIELD = {"prompt": "Prompt", "sub_problems": "Sub-Problems", "reference_solution": "Reference Solution"}


class Frontmatter(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: str = Field(min_length=1)
    name: Optional[str] = None
    category: str = "uncategorized"
    grading_type: Literal["automated", "hybrid", "llm_judge"] = "automated"
    timeout_seconds: int = Field(default=600, ge=1)
    sub_problems: Optional[int] = Field(default=None, ge=0)
    skill_category: Optional[str] = None
    workspace_files: list[Any] = Field(default_factory=list)
    grading_weights: dict[str, float] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)
    difficulty: Optional[str] = None


def sub_problems(doc: markdown.MarkdownDoc, declared: Optional[int]) -> list[SubProblem]:
    """`### Sub-Problem N: title` headings, numbered 1..N in order, matching the frontmatter count."""
    sec = doc.section("Sub-Problems")
    found: list[SubProblem] = []
    for sub in sec.subsections if sec is not None else []:
        m = _SUB_HEADING.match(sub.title.strip())
        if not m:
            raise TaskLoadError(doc.path, "Sub-Problems",
                                f"heading '### {sub.title}' (line {sub.line}) is not '### Sub-Problem N: title'")
        idx = int(m.group(1))
        if idx != len(found) + 1:
            raise TaskLoadError(doc.path, "Sub-Problems",
                                f"'### {sub.title}' (line {sub.line}) should be Sub-Problem {len(found) + 1}")
        found.append(SubProblem(index=idx, title=(m.group(2) or "").strip() or f"Sub-Problem {idx}",
                                text=sub.body.strip()))
    if declared is not None and declared != len(found):
        raise TaskLoadError(doc.path, "sub_problems",
                            f"frontmatter says {declared} sub-problems but the file has {len(found)} "
                            "'### Sub-Problem N' headings")
    return found


def check_weights(path: Path, weights: dict[str, float]) -> None:
    bad = {k: v for k, v in weights.items() if v < 0}
    if bad:
        raise TaskLoadError(path, "grading_weights", f"weights must be >= 0, got {bad}")
    if weights and sum(weights.values()) <= 0:
        raise TaskLoadError(path, "grading_weights", "weights sum to 0")


def load(path: Path) -> TaskSpec:
    path = Path(path).resolve()
    doc = markdown.parse(path)
    front = validated(Frontmatter, doc.frontmatter, path)
    check_weights(path, front.grading_weights)
    if doc.section("Automated Checks") is None and front.grading_type == "llm_judge":
        raise TaskLoadError(path, "Automated Checks", "missing: this llm_judge task has no automated grader, "
                                                      "and clawkube has no LLM judge")
    data = dict(
        id=front.id, name=front.name or front.id, category=front.category, format=NAME,
        source_path=path, tags=front.tags, difficulty=front.difficulty,
        prompt=doc.require("Prompt").body.strip(), timeout_seconds=front.timeout_seconds,
        workspace=paths.mappings(front.workspace_files, path.parent, path, "workspace_files"),
        sub_problems=sub_problems(doc, front.sub_problems), skill_category=front.skill_category,
        expected_behavior=doc.text("Expected Behavior"), grading_criteria=doc.text("Grading Criteria"),
        judge_rubric=doc.text("LLM Judge Rubric"), grading_type=front.grading_type,
        grading_weights=front.grading_weights, grader=grader_spec(doc), reference_solution=reference_solution(doc),
    )
    return validated(TaskSpec, data, path, lambda f: SECTION_OF_FIELD.get(f.split(".")[0].split("[")[0], f))
