"""A grader's raw criterion scores -> the trial's `Score`: range check, then the task's benchmark plugin composes
the score (`Benchmark.score`, with the engine's own evidence)."""
from __future__ import annotations

from typing import Optional

from ..benchmarks import registry
from ..benchmarks.base import GradingError, check_range
from ..contracts.manifests import GradingManifest
from ..results.model import Score
from ..services.evidence import Evidence

__all__ = ["GradingError", "to_score"]


def to_score(m: GradingManifest, raw: dict[str, float], evidence: Optional[Evidence] = None) -> Score:
    plugin = registry.get(m.format)
    if plugin.criteria_in_unit_range:
        check_range(raw)
    return plugin.score(m, raw, evidence)
