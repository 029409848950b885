"""Helpers for the hostile-agent suite: a task whose ground truth is a secret, and runs of the `script` harness
(the agent's moves are shell commands) through the real local runner.

The attacker knows where to look (paths are formatted into its commands), never what the secrets are: the
secrets are generated per test session and exist only in the generated task files.

Sandbox modes: "auto" is the runner's default sandbox (bwrap on this machine when root), "none" is the
control: the same probe with the sandbox off, which must find the material, so that every test can fail.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import textwrap
import uuid
from pathlib import Path
from typing import Optional

from clawkube.local.runner import LocalRunner
from clawkube.runspec import AgentSpec, BenchmarkRunSpec, RetryPolicy, TaskSource

SECRET = f"GT-SECRET-{uuid.uuid4().hex}"
ENV_SECRET = f"ENV-SECRET-{uuid.uuid4().hex}"
SANDBOXED = "auto"
CONTROL = "none"
IS_ROOT = os.geteuid() == 0
NEEDS_ROOT = "the sandbox under test needs root (bubblewrap with per-trial uids and cgroups)"

# The grader scores 1.0 only when answer.txt holds exactly the ground truth: the agent cannot know it, so only
# reaching the ground truth (a link, a write through a link, reading it) can score.
GT_GRADER = '''
import os
def grade(transcript, workspace_path):
    gt = open(os.path.join(workspace_path, "gt", "answer.txt")).read().strip()
    p = os.path.join(workspace_path, "answer.txt")
    got = open(p).read().strip() if os.path.exists(p) else ""
    ok = float(got == gt)
    return {"matches_ground_truth": ok, "overall_score": ok}
'''

# The grader imports the agent's module `solution` from the workspace (as real graders import the agent's code)
# and reports what that code found, as criteria.
IMPORTING_GRADER = '''
import json, os, sys
def grade(transcript, workspace_path):
    sys.path.insert(0, workspace_path)
    try:
        import solution
        found = getattr(solution, "FOUND", {})
    except Exception as e:
        found = {"import_error": 1.0}
    out = {k: float(v) for k, v in found.items()}
    out["overall_score"] = 1.0
    return out
'''


def make_task(root: Path, task_id: str = "answer", grader: str = GT_GRADER, timeout: int = 120,
              warmup: Optional[list[str]] = None) -> Path:
    """A WildClawBench-format task under root/tasks, workspace and ground truth under root/fixtures/<id>."""
    fx = root / "fixtures" / task_id
    (fx / "exec").mkdir(parents=True)
    (fx / "gt").mkdir()
    (fx / "exec" / "question.txt").write_text("What is the secret?\n")
    (fx / "gt" / "answer.txt").write_text(SECRET + "\n")
    md = root / "tasks" / f"{task_id}.md"
    md.parent.mkdir(parents=True, exist_ok=True)
    warm = ("\n## Warmup\n\n```bash\n" + "\n".join(warmup) + "\n```\n") if warmup else ""
    md.write_text(textwrap.dedent(f"""\
        ---
        id: {task_id}
        name: Hostile agent probe
        category: security
        timeout_seconds: {timeout}
        ---

        ## Prompt

        Put the secret into answer.txt.

        ## Automated Checks

        ```python
        {{grader}}
        ```

        ## Workspace Path

        `{fx}`
        """).replace("{grader}", grader.strip()) + warm)
    return md


def world_root(tmp_path: Path) -> Path:
    """A world-traversable folder for tasks and results, so only the sandbox (not file modes) stands in the way."""
    root = Path(tempfile.mkdtemp(prefix="clawkube-sec-", dir=tmp_path))
    for p in (tmp_path, root):
        p.chmod(0o755)
    return root


def spec(tasks: Path, commands: list[str], trials: int = 1, parallel: int = 1, **fields) -> BenchmarkRunSpec:
    s = BenchmarkRunSpec(tasks=TaskSource(path=str(tasks)), agent=AgentSpec(harness="script",
                         args={"commands": commands}), trials=trials, parallelism=parallel,
                         retry=RetryPolicy(grading_error=1), **fields)
    return s


def run(tasks: Path, out: Path, commands: list[str], mode: str = SANDBOXED, **kw):
    """Run the script agent; returns the run outcome."""
    return LocalRunner(spec(tasks, commands, **kw), out, sandbox_mode=mode, progress=None).run()


def outputs(out: Path, task: str = "answer", trial: str = "0") -> list[str]:
    """What each scripted command printed (stdout and stderr of the step), in order."""
    f = out / "trials" / task / trial / "transcript.jsonl"
    events = [json.loads(x) for x in f.read_text(errors="replace").splitlines() if x.strip()]
    return [e.get("content", "") for e in events if e.get("type") == "tool_result"]


def py(code: str, pipe: str = "") -> str:
    """A shell command running `code` with the sandbox's python3 (`pipe`: e.g. "2>&1 | tail -1")."""
    return f"python3 - <<'PYEOF' {pipe}\n" + textwrap.dedent(code).strip() + "\nPYEOF"


def write_solution(code: str) -> str:
    """A shell command that writes solution.py (imported by IMPORTING_GRADER) into the workspace."""
    return "cat > solution.py <<'PYEOF'\n" + textwrap.dedent(code).strip() + "\nPYEOF"


PYTHON = sys.executable
