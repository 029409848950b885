"""What a trial's `Score.details` holds besides its benchmark plugin's own keys (e.g. CLAW-Eval's `engine`): the
mode details, built by one function (`mode_details`) from the records of the plan's stages, locally
(local/trial.py) and by the operator (k8s/decide_trial.py) alike, and read back with `ModeDetails.read`.

- mode: the evaluation mode; phase_usage: usage of every agent stage (`execution` = the graded one);
  execution_usage: the graded execution's usage alone (summary.py's execution-only usage);
- skills / skills_mutated: the graded execution's skills report;
- <author stage>_error (authoring_error, summary_error): the skill-writing stage's own error, if any;
- <preparatory execution> (first_run): its score, grading error, agent error and skills report;
- created_skills / skill_quality: the skills the skill-writing stage created (name, SKILL.md path and size,
  frontmatter, scripts and references counts) and their quality score (EvoClawBench's heuristic, skills/scan.py);
- skill_mutation_violation: a skill-reuse execution (PreSkill/PostSkill) added, changed or deleted a skill file.
"""
from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field

from .. import plan
from ..results.model import ErrorKind, Score, Usage
from ..runspec import EvalMode
from .skills import Skills


class StageRecord(BaseModel):
    """What one finished stage of an attempt produced, as far as the details need it."""

    name: str
    usage: Usage = Field(default_factory=Usage)
    error_kind: Optional[ErrorKind] = None
    error_message: Optional[str] = None
    skills: Optional[Skills] = None  # execute stages
    score: Optional[Score] = None  # grade stages
    created_skills: Optional[list[dict[str, Any]]] = None  # author stages: the skills they created
    skill_quality: Optional[float] = None  # author stages: their quality score

    @property
    def error(self) -> Optional[str]:
        return self.error_message if self.error_kind else None


class ExecutionDetails(BaseModel):
    model_config = ConfigDict(extra="forbid")

    score: Optional[Score] = None
    grading_error: Optional[str] = None
    agent_error: Optional[str] = None
    skills: Optional[Skills] = None


class ModeDetails(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mode: str
    phase_usage: dict[str, Usage]
    execution_usage: Usage
    skills: Optional[Skills] = None
    skills_mutated: Optional[bool] = None
    authoring_error: Optional[str] = None  # PreSkill
    summary_error: Optional[str] = None  # PostSkill
    first_run: Optional[ExecutionDetails] = None  # PostSkill
    created_skills: Optional[list[dict[str, Any]]] = None  # PreSkill/PostSkill: what the skill-writing stage made
    skill_quality: Optional[float] = None
    skill_mutation_violation: Optional[bool] = None  # PreSkill/PostSkill: the graded execution changed its skills

    def as_details(self) -> dict[str, Any]:
        """The keys this trial's mode has (a stage a mode lacks leaves no key)."""
        return self.model_dump(mode="json", exclude_unset=True)

    @classmethod
    def read(cls, details: dict[str, Any]) -> Optional["ModeDetails"]:
        """The mode details among a score's details (None when it has none); ValueError when malformed."""
        if "mode" not in details:
            return None
        return cls.model_validate({k: v for k, v in details.items() if k in cls.model_fields})


def execution_usage(details: dict[str, Any]) -> Optional[Usage]:
    """The graded execution's usage among a score's details, if it has one (ValueError when malformed)."""
    key = "execution_usage"
    assert key in ModeDetails.model_fields
    return Usage.model_validate(details[key]) if key in details else None


def mode_details(mode: EvalMode | str, records: dict[str, StageRecord]) -> ModeDetails:
    """The details of an attempt whose stages produced `records` (by stage name; the graded execution's is
    required, a preparatory stage without a record is left out)."""
    stages = plan.stages(mode)
    execution = records[plan.graded_execution(mode).name]
    fields: dict[str, Any] = {
        "mode": EvalMode(mode).value,
        "phase_usage": {s.name: records[s.name].usage for s in stages
                        if s.role is not plan.Role.GRADE and s.name in records},
        "execution_usage": execution.usage,
    }
    if execution.skills is not None:
        fields.update(skills=execution.skills, skills_mutated=execution.skills.mutated)
        if EvalMode(mode) is not EvalMode.BASELINE:
            fields["skill_mutation_violation"] = execution.skills.mutated
    for s in plan.preparatory(mode):
        r = records.get(s.name)
        if r is None:
            continue
        if s.role is plan.Role.AUTHOR:
            fields[f"{s.name}_error"] = r.error
            if r.created_skills is not None:
                fields.update(created_skills=r.created_skills, skill_quality=r.skill_quality or 0.0)
        elif s.role is plan.Role.EXECUTE:
            g = plan.grade_of(mode, s.name)
            graded = records.get(g.name) if g else None
            fields[s.name] = ExecutionDetails(score=graded.score if graded else None,
                                              grading_error=graded.error if graded else None,
                                              agent_error=r.error, skills=r.skills)
    return ModeDetails(**fields)


def with_mode_details(details: dict[str, Any], mode: ModeDetails) -> dict[str, Any]:
    """A score's details (its plugin's keys) + the mode details; a plugin key that collides is an error."""
    own = mode.as_details()
    clash = sorted(set(details) & set(own))
    if clash:
        raise ValueError(f"score details keys {clash} are reserved for the mode details (contracts/details.py)")
    return {**details, **own}
