"""Skill files hashed before and after an execution that reuses them; what changed is reported.

The seeded guide (`skill-creator`) is left out, as the benchmark's runner leaves it out: a skill reuse execution
that adds, changes or deletes any other file under the skills dir commits a skill mutation violation."""
from __future__ import annotations

from pathlib import Path

from ..benchmarks.evoclaw.protocol import SEEDED_SKILLS
from ..contracts.skills import SkillReport
from ..lifecycle import workspace


def hashes(skills_dir: Path, exclude: frozenset[str] = SEEDED_SKILLS) -> dict[str, str]:
    return {rel: h for rel, h in workspace.manifest(skills_dir).items() if rel.split("/", 1)[0] not in exclude}


def report(source: str, before: dict[str, str], skills_dir: Path) -> SkillReport:
    return SkillReport(source=source, files=before, mutations=workspace.diff(before, hashes(skills_dir)))
