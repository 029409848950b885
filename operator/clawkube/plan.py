"""The trial plan: what one attempt of a trial runs, per evaluation mode, and what happens after a failure.

Read alike by the local executor (local/trial.py), the operator's decide functions (k8s/decide_trial.py:
one pod per stage) and the pods (pod.py: `--stage`). Nothing else writes down the order of a trial's phases.

Each mode is a sequence of stages; each stage has a role:
- `execute`: an agent run on the task (fresh workspace, task services, agent, audit logs, workspace capture);
  writes the agent-side artifacts (transcript, workspace snapshot, usage, skills report). It starts with the
  task's own skills, or with the skills an `author` stage wrote (`skills_from`).
- `grade`: the firewall and the grader over one execution's evidence (`grades`); writes its score.
- `author`: a skill-writing agent run (skills/writing.py) in an empty workspace; writes skills. It may read an
  earlier execution's agent-side artifacts and that execution's score (`context_from`: never grader output).

The last two stages of every mode are the graded execution and its grade (`graded=True`): they decide the trial.
The stages before them are preparatory: their own verdict (an agent error or timeout, a grading error) is
recorded in the score details and the attempt goes on.

    baseline:  execution -> grade
    preskill:  authoring -> execution(skills of authoring) -> grade
    postskill: first_run -> first_run_grade -> summary(context of first_run) -> execution(skills of summary) -> grade

Retries (`after_failure`), the same locally and on the operator: a failure of kind K is retried while fewer than
`retry.<K>` attempts have failed with K (infra and agent failures start a new attempt, which runs every stage
again; a grading failure regrades the same execution). When no retry is left, an agent error or timeout whose
evidence was captured is still graded (the error is recorded with the score); anything else fails the trial.
"""
from __future__ import annotations

from enum import Enum
from typing import Optional

from pydantic import BaseModel, ConfigDict

from .results.model import ErrorKind
from .runspec import EvalMode, RetryPolicy


class Role(str, Enum):
    EXECUTE = "execute"
    GRADE = "grade"
    AUTHOR = "author"


class Stage(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    role: Role
    graded: bool = False  # the trial's own execution and grade
    skills_from: Optional[str] = None  # execute: the author stage whose skills it starts with (None: the task's)
    grades: Optional[str] = None  # grade: the execution it grades
    context_from: Optional[str] = None  # author: the execution whose artifacts (and grade) it is told about
    pod_suffix: str = ""  # cluster: a preparatory stage's pod is <trial>-a<N>-<pod_suffix> (k8s/names.py)

    @property
    def reads(self) -> tuple[str, ...]:
        """The earlier stages whose output this stage reads."""
        return tuple(s for s in (self.skills_from, self.grades, self.context_from) if s)

    @property
    def writes(self) -> str:
        return {Role.EXECUTE: "agent artifacts", Role.GRADE: "score", Role.AUTHOR: "skills"}[self.role]


EXECUTION, GRADE = "execution", "grade"


def _graded(skills_from: Optional[str] = None) -> tuple[Stage, Stage]:
    return (Stage(name=EXECUTION, role=Role.EXECUTE, graded=True, skills_from=skills_from),
            Stage(name=GRADE, role=Role.GRADE, graded=True, grades=EXECUTION))


PLANS: dict[EvalMode, tuple[Stage, ...]] = {
    EvalMode.BASELINE: _graded(),
    EvalMode.PRESKILL: (Stage(name="authoring", role=Role.AUTHOR, pod_suffix="author"),
                        *_graded(skills_from="authoring")),
    EvalMode.POSTSKILL: (
        Stage(name="first_run", role=Role.EXECUTE, pod_suffix="first"),
        Stage(name="first_run_grade", role=Role.GRADE, grades="first_run", pod_suffix="first-grade"),
        Stage(name="summary", role=Role.AUTHOR, context_from="first_run", pod_suffix="summary"),
        *_graded(skills_from="summary"),
    ),
}


def stages(mode: EvalMode | str) -> tuple[Stage, ...]:
    return PLANS[EvalMode(mode)]


def preparatory(mode: EvalMode | str) -> tuple[Stage, ...]:
    """The stages before the graded execution."""
    return tuple(s for s in stages(mode) if not s.graded)


def graded_execution(mode: EvalMode | str) -> Stage:
    return next(s for s in stages(mode) if s.graded and s.role is Role.EXECUTE)


def stage(mode: EvalMode | str, name: str) -> Stage:
    for s in stages(mode):
        if s.name == name:
            return s
    raise KeyError(f"mode {EvalMode(mode).value} has no stage {name!r} "
                   f"(stages: {', '.join(s.name for s in stages(mode))})")


def stage_named(name: str, mode: Optional[EvalMode | str] = None) -> Stage:
    """The stage `name` of `mode`; without a mode, of the first mode that has it (a stage name means the same
    thing in every mode that has it)."""
    if mode is not None:
        return stage(mode, name)
    for m in EvalMode:
        if any(s.name == name for s in stages(m)):
            return stage(m, name)
    raise KeyError(f"no mode has a stage {name!r}")


def grade_of(mode: EvalMode | str, execution: str) -> Optional[Stage]:
    """The stage that grades `execution`, if any."""
    return next((s for s in stages(mode) if s.grades == execution), None)


# ---- retries -------------------------------------------------------------------------------------------------

class Next(str, Enum):
    RETRY = "retry"  # agent-side or infra failure: a new attempt; grading failure: grade again
    GRADE = "grade"  # no retry left for an agent error/timeout with evidence: grade what the agent left
    FAIL = "fail"  # the trial fails with this error


AGENT_KINDS = (ErrorKind.AGENT_TIMEOUT, ErrorKind.AGENT_ERROR)


def retry_limit(policy: RetryPolicy, kind: ErrorKind) -> int:
    """Attempts allowed to fail with `kind` (1 = no retry)."""
    return {ErrorKind.AGENT_TIMEOUT: policy.agent_timeout, ErrorKind.AGENT_ERROR: policy.agent_error,
            ErrorKind.GRADING_ERROR: policy.grading_error, ErrorKind.INFRA: policy.infra,
            ErrorKind.SETUP_ERROR: 1}[kind]  # the task cannot run here: retrying cannot help


def after_failure(policy: RetryPolicy, kind: ErrorKind, failed: int, evidence: bool = False) -> Next:
    """What follows the `failed`-th failure of `kind` (counting this one). `evidence`: the agent's workspace and
    transcript were captured (the agent process ended by itself or by its time budget, and reported)."""
    if failed < retry_limit(policy, kind):
        return Next.RETRY
    if kind in AGENT_KINDS and evidence:
        return Next.GRADE
    return Next.FAIL
