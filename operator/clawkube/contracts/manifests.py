"""The manifests inside the two task bundles (lifecycle/bundle.py writes them; the local runner and the pods
read them): `task.json` of the agent bundle and `grading.json` of the grading bundle."""
from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, Field

from ..tasks.model import AgentView, ServiceSpec, SubProblem


class TrialMounts(BaseModel):
    """What the benchmark's own container shows of a trial beyond the workspace (its plugin's
    `Benchmark.trial_mounts`). WildClawBench: the agent's skills are ~/skills, its graders look there (with HOME
    the agent's), and the task's workspace as handed over is read-only at /app for agent and grader."""

    skills_in_home: Optional[str] = None  # the agent's skills folder is seen at $HOME/<this> (outside-workspace skills)
    grader_home: bool = False  # the grader sees the agent's home (read-only, skills included) and has it as HOME
    initial_workspace: Optional[str] = None  # the workspace before the agent ran, read-only at this path for both


class AgentManifest(BaseModel):
    view: AgentView
    format: str  # the benchmark plugin's name
    workspace_mount: Optional[str] = None  # where the agent sees its workspace (Benchmark.workspace_mount)
    mounts: TrialMounts = Field(default_factory=TrialMounts)
    warmup: list[str] = Field(default_factory=list)
    services: list[ServiceSpec] = Field(default_factory=list)
    skills: list[str] = Field(default_factory=list)
    has_reference: bool = False
    workspace_dirs: list[str] = Field(default_factory=list)  # empty folders made in the workspace (Benchmark layout)
    skills_path: Optional[str] = None  # the skills dir inside the workspace (e.g. "skills"); None: outside it
    authoring_skills: list[str] = Field(default_factory=list)  # seeded into skill-writing phases only
    benchmark_data: dict[str, Any] = Field(default_factory=dict)  # the plugin's own agent-side data
    setup_error: Optional[str] = None  # TaskSpec.setup_error: the trial ends as a setup error before anything runs


class GradingManifest(BaseModel):
    task_id: str
    category: str
    format: str  # the benchmark plugin's name: it composes the score
    workspace_mount: Optional[str] = None  # where the grader sees the workspace (Benchmark.workspace_mount)
    mounts: TrialMounts = Field(default_factory=TrialMounts)
    entry: str = "grade"
    needs_judge: bool = False  # grading needs the run's LLM judge (Benchmark.needs_judge)
    timeout_seconds: int = 120
    pass_threshold: float = 0.75
    env: list[str] = Field(default_factory=list)
    safety_checks: list[Any] = Field(default_factory=list)
    expected_actions: list[Any] = Field(default_factory=list)
    sub_problems: list[SubProblem] = Field(default_factory=list)
    grading_weights: dict[str, float] = Field(default_factory=dict)
    env_snapshot_files: list[str] = Field(default_factory=list)
    env_snapshot_commands: list[str] = Field(default_factory=list)
    files: list[str] = Field(default_factory=list)  # dest paths of grading-only files, relative to the workspace
    benchmark_data: dict[str, Any] = Field(default_factory=dict)  # the plugin's own grading-side data
