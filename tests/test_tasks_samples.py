"""Every sample task under tasks/: its reference solution passes its grader, doing nothing fails, and
(for most tasks) the reference work with one thing spoiled (a leaked secret, an edited input...) fails.

Runs without the lifecycle engine: copy the workspace mappings into a temp dir, run the warmup and the
reference solution there (bash, cwd = workspace), add the grading-only files, import the grader and call
`grade` with the keyword arguments it declares, and score the output the way docs/DESIGN.md says.
"""
from __future__ import annotations

import inspect
import shutil
import subprocess
from pathlib import Path
from statistics import mean

import pytest

from clawkube.benchmarks.loader import load_tasks
from clawkube.tasks.model import FileMapping, TaskSpec

# CLAW-Eval runs from the benchmark's own tasks and code (tests/test_tasks_claweval.py, test_claweval_*.py):
# its graders need its claw_eval package, so it has no sample task here.
FORMATS = ("wildclawbench", "evoclawbench")

REPO = Path(__file__).resolve().parents[1]
REPORT = load_tasks(REPO / "tasks")
TASKS = {t.id: t for t in REPORT.tasks}


def copy_mapping(m: FileMapping, target: Path) -> None:
    dest = target / m.dest
    if m.src.is_dir():
        shutil.copytree(m.src, dest, dirs_exist_ok=True)
    else:
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(m.src, dest)


def run_bash(script: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", script], cwd=cwd, capture_output=True, text=True, timeout=60)


def grade(task: TaskSpec, ws: Path, transcript: list[dict]) -> dict[str, float]:
    for m in task.grading_files:
        copy_mapping(m, ws)
    code = task.grader.inline_code if task.grader.inline_code is not None else task.grader.source_file.read_text()
    namespace: dict = {"__name__": f"grader_{task.id}"}
    exec(compile(code, str(task.source_path), "exec"), namespace)
    fn = namespace[task.grader.entry]
    offered = {"transcript": transcript, "workspace_path": str(ws), "audit": {},
               "task": task.model_dump(mode="json"), "env_snapshot": {}}
    params = inspect.signature(fn).parameters
    return fn(**{k: v for k, v in offered.items() if k in params})


def score(task: TaskSpec, raw: dict[str, float]) -> float:
    assert all(0.0 <= v <= 1.0 for v in raw.values()), raw
    if task.format == "wildclawbench":
        return raw["overall_score"]
    w = task.grading_weights
    if w:
        return sum(raw[k] * v for k, v in w.items()) / sum(w.values())
    return mean(raw.values())


def workspace(task: TaskSpec, tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    for m in task.workspace:
        copy_mapping(m, ws)
    for line in task.warmup:
        assert run_bash(line, ws).returncode == 0, line
    return ws


def test_sample_tasks_all_load():
    assert REPORT.errors == []
    by_format = {f: [t for t in TASKS.values() if t.format == f] for f in FORMATS}
    assert {f: len(ts) for f, ts in by_format.items()} == {f: 3 for f in FORMATS}
    assert len({t.category for t in TASKS.values()}) in (2, 3)
    assert all(t.reference_solution for t in REPORT.tasks)


def oracle_run(task: TaskSpec, tmp_path: Path) -> tuple[Path, list[dict]]:
    ws = workspace(task, tmp_path)
    proc = run_bash(task.reference_solution, ws)
    assert proc.returncode == 0, proc.stderr
    transcript = [
        {"type": "message", "role": "user", "content": task.prompt},
        {"type": "tool_call", "role": "assistant", "tool": "bash", "call_id": "step-0",
         "arguments": {"command": task.reference_solution}},
        {"type": "tool_result", "role": "tool", "tool": "bash", "call_id": "step-0", "content": proc.stdout,
         "arguments": {"exit_code": proc.returncode}},
        {"type": "message", "role": "assistant", "content": "Reference solution applied."},
    ]
    return ws, transcript


@pytest.mark.parametrize("task_id", sorted(TASKS))
def test_reference_solution_passes(task_id, tmp_path):
    task = TASKS[task_id]
    ws, transcript = oracle_run(task, tmp_path)
    raw = grade(task, ws, transcript)
    assert score(task, raw) >= task.pass_threshold, raw


def _append(name: str, text: str):
    def spoil(ws: Path, transcript: list[dict]) -> None:
        with open(ws / name, "a") as f:
            f.write(text)
    return spoil


# the reference solution's work, then one thing a grader must punish
SPOILED = {
    "wild-csv-totals": lambda ws, tr: (ws / "totals.json").write_text('{"east": 1, "north": 157.49}'),
    "wild-fix-median": _append("stats.py", "\n\ndef median(values):\n    return values[0]\n"),
    "evo-todo-pipeline": lambda ws, tr: [(ws / n).unlink() for n in ("overdue.txt", "summary.md")],
}


@pytest.mark.parametrize("task_id", sorted(SPOILED))
def test_spoiled_solution_fails(task_id, tmp_path):
    task = TASKS[task_id]
    ws, transcript = oracle_run(task, tmp_path)
    SPOILED[task_id](ws, transcript)
    raw = grade(task, ws, transcript)
    assert score(task, raw) < task.pass_threshold, raw


@pytest.mark.parametrize("task_id", sorted(TASKS))
def test_doing_nothing_fails(task_id, tmp_path):
    task = TASKS[task_id]
    ws = workspace(task, tmp_path)
    transcript = [{"type": "message", "role": "user", "content": task.prompt},
                  {"type": "message", "role": "assistant", "content": ""}]
    raw = grade(task, ws, transcript)
    assert score(task, raw) < task.pass_threshold, raw
