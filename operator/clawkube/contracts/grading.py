"""The grading request: what the trial process hands to the grading process (`grade_request.json`).

The grading process (`python -m clawkube.lifecycle.grader_main REQUEST.json`) looks up the request's benchmark
plugin and lets it run the task's grader (`Benchmark.run_grader`); it writes a `GradeOutput` to `output_path`.
"""
from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, ConfigDict

from .judge import JudgeConfig


class GradeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    benchmark: str  # the plugin name (TaskSpec.format)
    grader_file: str
    entry: str = "grade"
    workspace_path: str
    transcript_path: str
    audit_dir: str
    task_manifest_path: str
    env_snapshot_path: str
    output_path: str
    judge: Optional[JudgeConfig] = None  # the run's judge (its key only in the process env, judge.KEY_ENV)
    light_grader: Optional[str] = None  # Benchmark.light_grader: the grading process's fast path, if any


class GradeOutput(BaseModel):
    """What the grading process writes: the grader's raw criterion scores, or its failure."""

    model_config = ConfigDict(extra="forbid")

    ok: bool
    scores: dict[str, float] = {}
    details: dict[str, Any] = {}  # the grader's non-numeric fields (kept in Score.details["grader_fields"])
    error: Optional[str] = None
    traceback: Optional[str] = None


class GraderResult(BaseModel):
    """What a plugin's `run_grader` may return instead of a plain dict of scores: the numeric fields and the rest."""

    scores: dict[str, float] = {}
    details: dict[str, Any] = {}
