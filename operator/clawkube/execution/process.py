"""Start one process tree, enforce its wall-time limit, capture its output, and kill all of it at the end.
Shared by the backends: they differ only in the argv that enters the sandbox."""
from __future__ import annotations

import os
import select
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Optional

from .cgroups import Group
from .output import Capture
from .spec import ExecResult, Limits

DRAIN_SECONDS = 2.0  # after the tree is gone, wait this long for the output pipes to close


def _stdin_file(data: Optional[bytes]):
    if data is None:
        return subprocess.DEVNULL
    f = tempfile.TemporaryFile()
    f.write(data)
    f.seek(0)
    return f


def run_tree(argv: list[str], *, env: dict[str, str], cwd: Optional[Path], limits: Limits, group: Optional[Group],
             stdin: Optional[bytes] = None, stdout: Optional[Path] = None, stderr: Optional[Path] = None,
             keep_background: bool = False, backend: str = "", kill_extra=None) -> ExecResult:
    """Run argv (already wrapped by the backend) with a wall-time limit. At the end every process of `group` is
    killed (unless keep_background), and `kill_extra()` is called on a timeout (backends without cgroups)."""
    full = group.enter_argv(argv) if group is not None else list(argv)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    stdin_f = _stdin_file(stdin)
    start = time.monotonic()
    try:
        proc = subprocess.Popen(full, env=env, cwd=cwd, stdin=stdin_f, stdout=out_w, stderr=err_w,
                                start_new_session=True, close_fds=True)
    except OSError as e:
        for fd in (out_r, out_w, err_r, err_w):
            os.close(fd)
        return ExecResult(exit_code=None, start_error=f"{argv[0]}: {e}", backend=backend)
    finally:
        if stdin_f is not subprocess.DEVNULL:
            stdin_f.close()
    os.close(out_w)
    os.close(err_w)
    out = Capture(out_r, limits.output, stdout)
    err = Capture(err_r, limits.output, stderr)
    timed_out = False
    try:
        if not _wait(proc, limits.timeout):
            timed_out = True
            _kill(proc, group, kill_extra)
            proc.wait()
    except BaseException:  # interrupted (KeyboardInterrupt): leave nothing running
        _kill(proc, group, kill_extra)
        raise
    wall = time.monotonic() - start
    if not keep_background:
        _kill(proc, group, kill_extra)
    drained = out.wait(DRAIN_SECONDS) & err.wait(DRAIN_SECONDS)
    if not drained and not keep_background:  # a process outside our reach holds the pipes: stop reading
        _kill(proc, group, kill_extra)
    rc = proc.returncode
    oom = group.oom_killed() if group is not None else False
    return ExecResult(
        exit_code=rc if rc is not None and rc >= 0 else None, signal=-rc if rc is not None and rc < 0 else None,
        timed_out=timed_out, oom_killed=oom, wall_seconds=round(wall, 4),
        stdout=out.text(), stderr=err.text(), stdout_bytes=out.total, stderr_bytes=err.total,
        stdout_truncated=out.truncated, stderr_truncated=err.truncated, backend=backend,
        limits_enforced=list(group.enforced) if group is not None else [])


def _wait(proc: subprocess.Popen, timeout: float) -> bool:
    """Wait for the process to exit; False at the timeout. (A pidfd wakes us at once; Popen.wait(timeout) would
    poll with sleeps of up to 50 ms.)"""
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        try:
            proc.wait(timeout=timeout)
            return True
        except subprocess.TimeoutExpired:
            return False
    try:
        deadline = time.monotonic() + timeout
        while proc.poll() is None:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            select.select([fd], [], [], left)
        return True
    finally:
        os.close(fd)


def _kill(proc: subprocess.Popen, group: Optional[Group], kill_extra) -> None:
    if group is not None and group.paths:
        group.kill()
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if kill_extra is not None:
        kill_extra()
