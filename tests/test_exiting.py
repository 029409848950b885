"""`clawkube.exiting.exit_now`: the `clawkube` command's end skips the interpreter's teardown, but nothing anyone
can see: atexit handlers run, buffered output reaches a pipe, the exit code is kept, and a non-daemon thread still
at work is waited for (the normal exit)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

OPERATOR = Path(__file__).resolve().parents[1] / "operator"


def _run(code: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(OPERATOR)}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)


def test_atexit_handlers_run_output_is_flushed_and_the_code_kept(tmp_path: Path):
    mark = tmp_path / "atexit-ran"
    r = _run(f"""
import atexit, sys
from clawkube.exiting import exit_now
atexit.register(lambda: open({str(mark)!r}, "w").write("yes"))
sys.stdout.write("buffered " * 1000)  # a pipe: block-buffered, not yet written
exit_now(3)
""")
    assert r.returncode == 3
    assert r.stdout == "buffered " * 1000
    assert mark.read_text() == "yes"


def test_values_mean_what_sys_exit_makes_of_them():
    assert _run("from clawkube.exiting import exit_now; exit_now(None)").returncode == 0
    r = _run("from clawkube.exiting import exit_now; exit_now('clawkube: no such run')")
    assert r.returncode == 1 and "clawkube: no such run" in r.stderr


def test_a_non_daemon_thread_at_work_is_waited_for(tmp_path: Path):
    done = tmp_path / "thread-finished"
    r = _run(f"""
import threading, time
from clawkube.exiting import exit_now
def work():
    time.sleep(0.5)
    open({str(done)!r}, "w").write("yes")
threading.Thread(target=work).start()
exit_now(0)
""")
    assert r.returncode == 0 and done.read_text() == "yes"
