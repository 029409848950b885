"""A grader's raw criterion scores -> the trial's `Score`: the task's benchmark plugin checks them
(`Benchmark.check_raw`: by default each in 0..1) and composes the score (`Benchmark.score`, with the engine's own
evidence)."""
from __future__ import annotations

from typing import Optional

from ..benchmarks import registry
from ..benchmarks.base import GradingError
from ..contracts.manifests import GradingManifest
from ..results.model import Score
from ..services.evidence import Evidence

__all__ = ["GradingError", "to_score"]


def to_score(m: GradingManifest, raw: dict[str, float], evidence: Optional[Evidence] = None) -> Score:
    plugin = registry.get(m.format)
    plugin.check_raw(raw)
    return plugin.score(m, raw, evidence)
