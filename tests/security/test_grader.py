"""A grader that imports the agent's code (as real graders do) runs that code: it must not run it as root, nor let
it read other tasks' grading bundles or the runner's environment, write into the results, or leave a process
behind that outlives grading."""
from __future__ import annotations

import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from .attack import (CONTROL, ENV_SECRET, IMPORTING_GRADER, IS_ROOT, NEEDS_ROOT, SANDBOXED, make_task, run,
                     world_root, write_solution)

pytestmark = pytest.mark.skipif(not IS_ROOT, reason=NEEDS_ROOT)


def _solution(out: Path, marker: str) -> str:
    return write_solution(f'''
        import glob, os, subprocess, sys
        FOUND = {{}}
        FOUND["uid_root"] = os.getuid() == 0
        def read(p):
            try:
                return open(p, errors="replace").read()
            except OSError:
                return ""
        FOUND["other_task_ground_truth"] = "GT-SECRET" in read("{out}/.private/tasks/another/grading/files/gt/answer.txt")
        envs = [read(p) for p in glob.glob("/proc/[0-9]*/environ")] + [str(dict(os.environ))]
        FOUND["runner_env"] = any("{ENV_SECRET}" in e for e in envs)
        try:
            open("{out}/trials/planted-by-grader.txt", "w").write("x")
            FOUND["wrote_results"] = True
        except OSError:
            FOUND["wrote_results"] = False
        p = subprocess.Popen(["sh", "-c", "sleep 600 # {marker}"], start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        FOUND["daemon_started"] = p.pid > 0
    ''')


def _attack(tmp_path: Path, mode: str, monkeypatch) -> tuple[dict[str, float], Path, str]:
    monkeypatch.setenv("CLAWKUBE_TEST_RUNNER_SECRET", ENV_SECRET)
    root = world_root(tmp_path)
    make_task(root, grader=IMPORTING_GRADER)
    make_task(root, task_id="another")  # runs first: its bundles are extracted when "answer" is graded
    out = root / "out"
    marker = f"clawkube-leftover-{uuid.uuid4().hex}"
    # the runner's key in a process's initial environment, as a deployed runner has it (/proc/PID/environ shows
    # only that: setenv in this test process would not, and whether a helper the runner starts later inherits it
    # depends on test order)
    holder = subprocess.Popen(["sleep", "600"], env={**os.environ, "CLAWKUBE_TEST_RUNNER_SECRET": ENV_SECRET})
    try:
        o = run(root / "tasks", out, [_solution(out, marker)], mode=mode)
    finally:
        holder.kill()
        holder.wait()
    r = next(x for x in o.results if x.task_id == "answer")
    assert r.score is not None, r.error_message
    return r.score.criteria, out, marker


def _alive(marker: str) -> bool:
    return subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode == 0


def test_agent_code_imported_by_the_grader_is_contained(tmp_path: Path, monkeypatch):
    found, out, marker = _attack(tmp_path, SANDBOXED, monkeypatch)
    assert found["daemon_started"] == 1.0  # the probe really ran inside the grader
    time.sleep(0.5)
    left = _alive(marker)
    subprocess.run(["pkill", "-9", "-f", marker])
    assert not left, "a process started by the grader outlived grading"
    assert found["uid_root"] == 0.0
    assert found["other_task_ground_truth"] == 0.0
    assert found["runner_env"] == 0.0
    assert found["wrote_results"] == 0.0 and not (out / "trials" / "planted-by-grader.txt").exists()


def test_control_a_grader_outside_the_sandbox_reaches_it_all(tmp_path: Path, monkeypatch):
    found, out, marker = _attack(tmp_path, CONTROL, monkeypatch)
    subprocess.run(["pkill", "-9", "-f", marker])
    assert found["uid_root"] == 1.0 and found["other_task_ground_truth"] == 1.0
    assert found["runner_env"] == 1.0 and found["wrote_results"] == 1.0
