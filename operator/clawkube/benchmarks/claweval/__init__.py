"""CLAW-Eval as a clawkube benchmark plugin (`PLUGIN`)."""
from .plugin import ClawEval

PLUGIN = ClawEval()
