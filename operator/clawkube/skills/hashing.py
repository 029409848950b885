"""Skill files hashed before and after an execution reuses them; what changed is reported."""
from __future__ import annotations

from pathlib import Path

from ..contracts.skills import SkillReport
from ..lifecycle import workspace



def hashes(skills_dir: Path) -> dict[str, str]:
    return workspace.manifest(skills_dir)


def report(source: str, before: dict[str, str], skills_dir: Path) -> SkillReport:
    return SkillReport(source=source, files=before, mutations=workspace.diff(before, hashes(skills_dir)))
