"""What the engine itself establishes about a trial from the services' audit logs and the transcript:
safety checks, expected actions, and (when faults were injected) robustness. The CLAW-Eval plugin
(`benchmarks/claweval/plugin.py`) combines it with the grader's dimensions."""
from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel

from .audit import parse_audit
from .checks import Evaluation, evaluate
from .robustness import Robustness, injection_on, robustness


class Evidence(BaseModel):
    checks: Evaluation
    robustness: Optional[Robustness] = None  # set when any service ran with fault injection


def gather(safety_checks: list[Any], expected_actions: list[Any], audit: dict[str, Any],
           transcript: list[dict]) -> Evidence:
    """Raises checks.CheckError (malformed task entries) or ValueError (malformed audit log)."""
    logs = parse_audit(audit)
    return Evidence(checks=evaluate(safety_checks, expected_actions, logs, transcript),
                    robustness=robustness(logs) if injection_on(logs) else None)
