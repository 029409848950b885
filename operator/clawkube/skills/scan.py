"""The skills a skill-writing phase left, as EvoClawBench reports them, and its skill-quality heuristic.

A skill is a folder under the workspace's `skills/` (the seeded `skill-creator` excluded) holding a SKILL.md;
its record: name, SKILL.md path, content length, YAML frontmatter, whether it has scripts, how many scripts and
references. Quality per skill (capped at 1): 0.2 name + 0.2 description in the frontmatter, 0.2 for more than
100 characters and 0.1 more for more than 500, 0.2 for scripts, 0.1 for references; a phase's quality is the
mean over its skills (0 without skills), rounded to 4 places.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field

from ..benchmarks.evoclaw.protocol import SEEDED_SKILLS

_FRONT = re.compile(r"^---\s*\n(.*?)\n---\s*\n", re.S)


class CreatedSkill(BaseModel):
    name: str
    path: str  # the SKILL.md, relative to the workspace
    content_length: int
    frontmatter: dict[str, Any] = Field(default_factory=dict)
    has_scripts: bool
    scripts_count: int
    references_count: int


def _frontmatter(text: str) -> dict[str, Any]:
    m = _FRONT.match(text)
    if not m:
        return {}
    try:
        data = yaml.safe_load(m.group(1))
    except yaml.YAMLError:
        return {}
    return data if isinstance(data, dict) else {}


def _count(folder: Path) -> int:
    return len(list(folder.glob("*"))) if folder.is_dir() and not folder.is_symlink() else 0


def created_skills(skills_root: Path, exclude: frozenset[str] = SEEDED_SKILLS) -> list[CreatedSkill]:
    """Skill folders under skills_root (a workspace's `skills/`) with a SKILL.md; symlinks are not followed."""
    found: list[CreatedSkill] = []
    if not skills_root.is_dir() or skills_root.is_symlink():
        return found
    for d in sorted(skills_root.iterdir()):
        md = d / "SKILL.md"
        if d.is_symlink() or not d.is_dir() or d.name in exclude or md.is_symlink() or not md.is_file():
            continue
        text = md.read_text(encoding="utf-8", errors="replace")
        scripts, refs = _count(d / "scripts"), _count(d / "references")
        found.append(CreatedSkill(name=d.name, path=f"{skills_root.name}/{d.name}/SKILL.md",
                                  content_length=len(text), frontmatter=_frontmatter(text), has_scripts=scripts > 0,
                                  scripts_count=scripts, references_count=refs))
    return found


def skill_quality(skills: list[CreatedSkill]) -> float:
    if not skills:
        return 0.0
    total = 0.0
    for s in skills:
        q = 0.0
        for earned, points in ((s.frontmatter.get("name"), 0.2), (s.frontmatter.get("description"), 0.2),
                               (s.content_length > 100, 0.2), (s.content_length > 500, 0.1), (s.has_scripts, 0.2),
                               (s.references_count > 0, 0.1)):
            if earned:
                q += points
        total += min(q, 1.0)
    return round(total / len(skills), 4)
