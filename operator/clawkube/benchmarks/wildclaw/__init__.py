"""WildClawBench as a clawkube benchmark plugin (`PLUGIN`)."""
from .plugin import WildClawBench

PLUGIN = WildClawBench()
