"""The grader arguments every benchmark's graders may declare (`tasks/grader_code.GRADER_ARGS`), built inside
the grading process from a `GradeRequest`:
- transcript: the normalised transcript events (list of dicts);
- workspace_path: the grading workspace (the agent's workspace + grading-only files);
- audit: {service name: audit log} of the task's mock services;
- task: the grading manifest (grading.json) as a dict;
- env_snapshot: the task's probes over the agent's workspace (files read, commands run);
- judge: the run's LLM judge as {"base_url", "model", "api_key"}, or None when the run has none.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Optional

from ..agents.transcript import as_dicts, read_jsonl
from ..contracts.grading import GradeRequest
from ..contracts.judge import Judge


def _load_json(path: str, default: Any) -> Any:
    p = Path(path)
    return json.loads(p.read_text()) if p.exists() else default


def read_audit(folder: str) -> dict[str, Any]:
    d = Path(folder)
    if not d.is_dir():
        return {}
    return {f.stem: json.loads(f.read_text()) for f in sorted(d.glob("*.json"))}


def default_kwargs(req: GradeRequest, judge: Optional[Judge]) -> dict[str, Callable[[], Any]]:
    return {
        "transcript": lambda: as_dicts(read_jsonl(Path(req.transcript_path))),
        "workspace_path": lambda: req.workspace_path,
        "audit": lambda: read_audit(req.audit_dir),
        "task": lambda: _load_json(req.task_manifest_path, {}),
        "env_snapshot": lambda: _load_json(req.env_snapshot_path, {}),
        "judge": lambda: judge.model_dump() if judge is not None else None,
    }
