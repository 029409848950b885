"""EvoClawBench as a clawkube benchmark plugin (`PLUGIN`)."""
from .plugin import EvoClawBench

PLUGIN = EvoClawBench()
