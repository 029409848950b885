"""One small task and a scripted model that solves it with each harness's own file tool.

The task asks for `answer.txt` holding `42`. The script answers turn 0 with a tool call in the tool vocabulary
of whichever harness is asking (each alternative matches only when the request offers that tool), then turn 1
with a closing text. Usage is fixed per reply, with cache reads, so tests can check how each harness adds up
and splits tokens.
"""
from __future__ import annotations

from pathlib import Path

ANSWER = "42"
PROMPT = ("Create a file named answer.txt in your working directory that contains exactly the line 42. "
          "Use your file-writing tool.")

# Harness -> (tool the scripted model calls, kind of that tool)
EXPECTED_TOOL = {"claude-code": ("Write", "write"), "codex": ("shell", "exec"), "openclaw": ("write", "write"),
                 "hermes": ("write_file", "write"), "nanobot": ("write_file", "write")}

SCRIPT = {
    "models": ["scripted"],
    "turns": [
        [
            {"name": "claude-code", "when": {"regex": r"[Ww]orking directory: (?P<cwd>/\S+)"},
             "tool_calls": [{"name": "Write", "arguments": {"file_path": "${cwd}/answer.txt", "content": "42\n"}}],
             "usage": {"input_tokens": 1000, "cached_input_tokens": 200, "output_tokens": 40}},
            {"name": "openclaw", "tool_calls": [{"name": "write", "arguments": {"path": "answer.txt", "content": "42\n"}}],
             "usage": {"input_tokens": 1000, "cached_input_tokens": 200, "output_tokens": 40}},
            {"name": "write_file", "tool_calls": [{"name": "write_file",
                                                   "arguments": {"path": "answer.txt", "content": "42\n"}}],
             "usage": {"input_tokens": 1000, "cached_input_tokens": 200, "output_tokens": 40}},
            {"name": "codex", "tool_calls": [{"name": "exec_command", "arguments": {"cmd": "printf '42\\n' > answer.txt"}}],
             "usage": {"input_tokens": 1000, "cached_input_tokens": 200, "output_tokens": 40}},
        ],
        {"name": "done", "text": "Done: answer.txt holds 42.",
         "usage": {"input_tokens": 1100, "cached_input_tokens": 300, "output_tokens": 10}},
    ],
    "fallback": {"name": "side", "text": "ok", "usage": {"input_tokens": 7, "output_tokens": 1}},
}

TASK_MD = """---
id: harness-answer
name: Write the answer
category: harness
timeout_seconds: 240
---

# Write the answer

## Prompt

{prompt}

## Expected Behavior

The agent writes answer.txt with its file tool.

## Grading Criteria

- [ ] answer.txt holds 42

## Automated Checks

```python
import os


def grade(transcript, workspace_path):
    path = os.path.join(workspace_path, "answer.txt")
    ok = os.path.isfile(path) and open(path).read().strip() == "42"
    return {{"answer": 1.0 if ok else 0.0, "overall_score": 1.0 if ok else 0.0}}
```

## Workspace Path

fixtures/harness-answer

## Reference Solution

```bash
echo 42 > answer.txt
```
"""


def make_task(root: Path) -> Path:
    """tasks/ + fixtures/ under `root`; returns the tasks folder."""
    tasks = root / "tasks"
    tasks.mkdir(parents=True)
    (tasks / "harness-answer.md").write_text(TASK_MD.format(prompt=PROMPT))
    fx = root / "fixtures" / "harness-answer"
    for d in ("exec", "tmp", "gt"):
        (fx / d).mkdir(parents=True)
    (fx / "exec" / "README.txt").write_text("Write the answer into answer.txt.\n")
    (fx / "gt" / "answer.txt").write_text("42\n")
    return tasks
