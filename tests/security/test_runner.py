"""The runner itself: one runner per --out, and a runner that dies takes everything it started with it."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from .attack import IS_ROOT, NEEDS_ROOT, make_task, world_root

REPO = Path(__file__).resolve().parents[2]


def _clawkube(*args: str, **kw) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH") or str(REPO / "operator")}
    return subprocess.Popen([sys.executable, "-m", "clawkube", "run", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def _wait_for(path: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.1)


def test_a_second_runner_on_the_same_out_stops_with_a_clear_error(tmp_path: Path):
    root = world_root(tmp_path)
    make_task(root, timeout=60)
    out = root / "out"
    common = ["--tasks", str(root / "tasks"), "--agent", "script", "--quiet"]
    first = _clawkube(*common, "--command", "sleep 8", "--out", str(out))
    try:
        _wait_for(out / "run.json")
        second = _clawkube(*common, "--command", "true", "--out", str(out))
        _, err = second.communicate(timeout=120)
        assert second.returncode == 2, err
        assert "in use by another clawkube run" in err and str(first.pid) in err
        # control: the same second runner on its own --out runs
        other = _clawkube(*common, "--command", "true", "--out", str(root / "out2"))
        _, err2 = other.communicate(timeout=300)
        assert other.returncode in (0, 3), err2
        assert (root / "out2" / "summary.json").exists()
    finally:
        first.kill()
        first.wait()


@pytest.mark.skipif(not IS_ROOT, reason=NEEDS_ROOT)
def test_runner_sigkill_takes_agents_and_their_daemons_with_it(tmp_path: Path):
    root = world_root(tmp_path)
    make_task(root, timeout=600)
    out = root / "out"
    marker = f"clawkube-orphan-{uuid.uuid4().hex}"
    cmd = (f"setsid bash -c 'exec -a {marker} sleep 900' </dev/null >/dev/null 2>&1 & "
           f"touch started; exec -a {marker}-main sleep 900")
    runner = _clawkube("--tasks", str(root / "tasks"), "--agent", "script", "--quiet", "--command", cmd,
                       "--out", str(out), start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while subprocess.run(["pgrep", "-f", marker], capture_output=True).stdout.count(b"\n") < 2:
            assert time.monotonic() < deadline and runner.poll() is None, "the agent never started"
            time.sleep(0.2)
        runner.send_signal(signal.SIGKILL)
        runner.wait()
        deadline = time.monotonic() + 10
        left = b""
        while time.monotonic() < deadline:
            left = subprocess.run(["pgrep", "-f", marker], capture_output=True).stdout
            if not left:
                break
            time.sleep(0.2)
    finally:
        subprocess.run(["pkill", "-9", "-f", marker])
    assert not left, f"processes outlived the runner: {left!r}"


@pytest.mark.skipif(not IS_ROOT, reason=NEEDS_ROOT)
def test_control_a_setsid_daemon_outlives_a_killed_parent_without_the_sandbox(tmp_path: Path):
    marker = f"clawkube-orphan-{uuid.uuid4().hex}"
    parent = subprocess.Popen(["sh", "-c", f"setsid bash -c 'exec -a {marker} sleep 900' </dev/null >/dev/null 2>&1 & "
                                           "sleep 900"], start_new_session=True)
    try:
        time.sleep(1)
        parent.kill()
        parent.wait()
        time.sleep(1)
        assert subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode == 0
    finally:
        subprocess.run(["pkill", "-9", "-f", marker])
