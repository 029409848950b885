"""EvoClawBench as a clawkube benchmark plugin (`PLUGIN`, made on first use: the grading process imports
`grading.py` alone, without the plugin and its dependencies)."""
from __future__ import annotations

def __getattr__(name: str) -> object:
    if name == "PLUGIN":
        from .plugin import EvoClawBench

        globals()["PLUGIN"] = plugin = EvoClawBench()
        return plugin
    raise AttributeError(name)
