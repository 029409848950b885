"""EvoClawBench as a clawkube benchmark plugin (`PLUGIN`, made on first use: the grading process imports
`grading.py` alone, without the plugin and its dependencies)."""
from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "PLUGIN":
        from .plugin import EvoClawBench

        globals()["PLUGIN"] = plugin = EvoClawBench()
        return plugin
    raise AttributeError(name)
