"""The skills report of an execution: which skill files it started with (hashes) and what it changed.

Written by the execution (local trial, agent pod) into skills.json, the termination message and the score
details; a termination message too long for Kubernetes carries a `SkillDigest` instead.
"""
from __future__ import annotations

from typing import Literal, Union

from pydantic import BaseModel, ConfigDict, Field


class SkillReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str  # "task" (shipped with the task) | "authored" (PreSkill/PostSkill)
    files: dict[str, str] = Field(default_factory=dict)  # relative path -> sha256, as the execution started
    mutations: dict[str, list[str]] = Field(default_factory=dict)  # {added, modified, deleted} during execution

    @property
    def mutated(self) -> bool:
        return any(self.mutations.values())

    def digest(self) -> "SkillDigest":
        return SkillDigest(source=self.source, mutated=self.mutated, file_count=len(self.files))


class SkillDigest(BaseModel):
    """A `SkillReport` cut short (the full report stays in skills.json among the artifacts)."""

    model_config = ConfigDict(extra="forbid")

    source: str
    mutated: bool
    file_count: int
    truncated: Literal[True] = True


Skills = Union[SkillReport, SkillDigest]
