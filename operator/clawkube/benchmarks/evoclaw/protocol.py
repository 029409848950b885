"""EvoClawBench's three modes as its paper and runner define them: the phases of each mode and the prefix each
phase puts before the task prompt.

| mode      | phases (in order)                                            | graded               |
|-----------|--------------------------------------------------------------|----------------------|
| baseline  | baseline                                                     | baseline             |
| preskill  | preskill_author -> preskill_execute                          | preskill_execute     |
| postskill | postskill_first -> postskill_summary -> postskill_second     | first and second     |

(This project's trial plan, plan.py, names the same phases by stage: `execution`, `authoring`, `first_run`,
`summary`; `phase_of(mode, stage)` maps them.)

Every phase runs in a fresh copy of the task workspace (`assets/...` and an empty `outputs/`). The skill-writing
phases (`preskill_author`, `postskill_summary`) also get the seeded `skills/skill-creator` guide and, for the
summary, `.evoclawbench/first_run_context.json`; what they leave under `skills/<name>/SKILL.md` (the seeded guide
excluded) is copied into the next execution's `skills/`. Skill reuse executions must not change those skills:
their files are hashed before and after (`skill_mutation_violation`).

The prefixes are the benchmark's own protocol text (published in the paper's appendix "Mode Prompt Prefixes"),
reproduced so that an agent gets exactly the prompt it gets under the benchmark's runner.
"""
from __future__ import annotations

from typing import Literal

Mode = Literal["baseline", "preskill", "postskill"]
Phase = Literal["baseline", "preskill_author", "preskill_execute", "postskill_first", "postskill_summary",
                "postskill_second"]

PHASES: dict[str, tuple[str, ...]] = {
    "baseline": ("baseline",),
    "preskill": ("preskill_author", "preskill_execute"),
    "postskill": ("postskill_first", "postskill_summary", "postskill_second"),
}
SKILL_AUTHOR_PHASES = frozenset({"preskill_author", "postskill_summary"})
SKILL_REUSE_PHASES = frozenset({"preskill_execute", "postskill_second"})
BASELINE_PHASES = frozenset({"baseline", "postskill_first"})
SEEDED_SKILLS = frozenset({"skill-creator"})  # seeded into skill-writing phases; never counted as authored
CONTEXT_FILE = ".evoclawbench/first_run_context.json"  # the summary phase's view of the first run
SKILLS_DIR = "skills"  # inside the workspace
OUTPUTS_DIR = "outputs"  # inside the workspace, created empty before every phase

BASELINE_PREFIX = (
    "BASELINE MODE:\n"
    "Complete the task directly. You must NOT create, edit, or delete any skills or "
    "SKILL.md files. Solve each sub-problem independently from scratch, and focus on "
    "producing the required grader-visible outputs.\n\n"
)
PRESKILL_AUTHOR_PREFIX = (
    "PRESKILL AUTHOR MODE:\n"
    "Before solving the task, create a task-specific reusable skill. Read "
    "`skills/skill-creator/SKILL.md` and write one or more new skills under "
    "`skills/<skill-name>/SKILL.md` that would help an agent solve this task later. "
    "Do not produce the final task outputs in `outputs/`; this phase is only for "
    "skill authoring. Do not replace or delete `skills/skill-creator`.\n\n"
)
POSTSKILL_SUMMARY_PREFIX = (
    "POSTSKILL SUMMARY MODE:\n"
    "Summarize a reusable task-specific skill from a completed first run. Read "
    "`.evoclawbench/first_run_context.json` for the first run prompt, grading details, "
    "workspace output summary, and transcript summary. Create one or more skills under "
    "`skills/<skill-name>/SKILL.md` so a later agent can solve the same task more "
    "accurately and efficiently. Do not redo the task and do not write final task "
    "outputs in `outputs/`. Do not replace or delete `skills/skill-creator`.\n\n"
)
SKILL_REUSE_PREFIX = (
    "SKILL REUSE EXECUTION MODE:\n"
    "Complete the task using the existing skills in `skills/` when helpful. You must NOT "
    "create, edit, or delete any skills or SKILL.md files during this execution phase. "
    "Focus on producing the required grader-visible outputs and validate them before "
    "finishing.\n\n"
)


def prefix(phase: str) -> str:
    if phase in BASELINE_PHASES:
        return BASELINE_PREFIX
    if phase == "preskill_author":
        return PRESKILL_AUTHOR_PREFIX
    if phase == "postskill_summary":
        return POSTSKILL_SUMMARY_PREFIX
    if phase in SKILL_REUSE_PHASES:
        return SKILL_REUSE_PREFIX
    raise ValueError(f"unknown phase {phase!r}")


def phase_prompt(phase: str, task_prompt: str) -> str:
    """The prompt the agent gets in this phase: the phase's prefix, then the task prompt as the task file has it."""
    return prefix(phase) + task_prompt


def execution_phase(mode: str, second: bool = False) -> str:
    """The graded execution phase of a mode (PostSkill: its first or second run)."""
    if mode == "baseline":
        return "baseline"
    if mode == "preskill":
        return "preskill_execute"
    if mode == "postskill":
        return "postskill_second" if second else "postskill_first"
    raise ValueError(f"unknown evaluation mode {mode!r}")


def adapter_phase(phase: str) -> str:
    """The phase name the agent adapters' per-phase options use (skills/phase_args.py)."""
    return {"preskill_author": "authoring", "postskill_summary": "summary"}.get(phase, "execution")


_STAGE_PHASES = {("baseline", "execution"): "baseline", ("preskill", "authoring"): "preskill_author",
                 ("preskill", "execution"): "preskill_execute", ("postskill", "first_run"): "postskill_first",
                 ("postskill", "summary"): "postskill_summary", ("postskill", "execution"): "postskill_second"}


def phase_of(mode: str, stage: str) -> str:
    """The phase a stage of the trial plan (plan.py) runs in `mode`."""
    try:
        return _STAGE_PHASES[(mode, stage)]
    except KeyError:
        raise ValueError(f"mode {mode!r} has no agent stage {stage!r}") from None
