"""The manifests inside the two task bundles (lifecycle/bundle.py writes them; the local runner and the pods
read them): `task.json` of the agent bundle and `grading.json` of the grading bundle."""
from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, Field

from ..tasks.model import AgentView, ServiceSpec, SubProblem


class AgentManifest(BaseModel):
    view: AgentView
    format: str  # the benchmark plugin's name
    workspace_mount: Optional[str] = None  # where the agent sees its workspace (Benchmark.workspace_mount)
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
