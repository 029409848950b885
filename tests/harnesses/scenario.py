"""One small task and a scripted model that solves it with each harness's own file tool: the README's example
(examples/harness/), used as is.

The task asks for `answer.txt` holding `42`. The script answers turn 0 with a tool call in the tool vocabulary
of whichever harness is asking (each alternative matches only when the request offers that tool), then turn 1
with a closing text. Usage is fixed per reply, with cache reads, so tests can check how each harness adds up
and splits tokens.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import yaml

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "harness"
ANSWER = "42"
PROMPT = ("Create a file named answer.txt in your working directory that contains exactly the line 42. "
          "Use your file-writing tool.")
SCRIPT = yaml.safe_load((EXAMPLE / "scripted-model.yaml").read_text())

# Harness -> (tool the scripted model calls, as the transcript names it; kind of that tool)
EXPECTED_TOOL = {"claude-code": ("Write", "write"), "codex": ("shell", "exec"), "openclaw": ("write", "write"),
                 "hermes": ("write_file", "write"), "nanobot": ("write_file", "write")}


def make_task(root: Path) -> Path:
    """A copy of the example's tasks/ + fixtures/ under `root`; returns the tasks folder."""
    for d in ("tasks", "fixtures"):
        shutil.copytree(EXAMPLE / d, root / d)
    return root / "tasks"
