"""The grading request: what the trial process hands to the grading process (`grade_request.json`).

The grading process (`python -m clawkube.lifecycle.grader_main REQUEST.json`) looks up the request's benchmark
plugin and lets it run the task's grader (`Benchmark.run_grader`); it writes a `GradeOutput` to `output_path`.
"""
from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, ConfigDict


JUDGE_KEY_ENV = "CLAWKUBE_JUDGE_API_KEY"  # the grading process's environment variable holding the judge's key


class JudgeRef(BaseModel):
    """The run's LLM judge (`spec.judge`) as the grading process gets it; the key is in `$JUDGE_KEY_ENV`."""

    model_config = ConfigDict(extra="forbid")

    base_url: Optional[str] = None
    model: str


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
    judge: Optional[JudgeRef] = None  # None: no judge configured for the run


class GradeOutput(BaseModel):
    """What the grading process writes: the grader's raw criterion scores, or its failure."""

    model_config = ConfigDict(extra="forbid")

    ok: bool
    scores: dict[str, float] = {}
    details: dict[str, Any] = {}  # what the plugin's grading keeps besides the numbers (e.g. a judge's notes)
    error: Optional[str] = None
    traceback: Optional[str] = None
