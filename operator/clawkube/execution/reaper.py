"""The reaper: a small process that outlives the runner and, when the runner dies (even by SIGKILL), kills every
process left in the runner's cgroups and removes them. It waits on a pipe whose only writer is the runner: EOF
means the runner is gone. Started once per runner process, on its first cgroup (execution/cgroups.py)."""
from __future__ import annotations

import os
import subprocess
import sys

# Runs as `python -I -S -c CODE group...`: standard library only.
CODE = r"""
import os, signal, sys, time
sys.stdin.buffer.read()
def tree(p):
    out, stack = [], [p]
    while stack:
        d = stack.pop()
        out.append(d)
        try:
            stack.extend(os.path.join(d, e) for e in os.listdir(d) if os.path.isdir(os.path.join(d, e)))
        except OSError:
            pass
    return out
def pids(p):
    s = set()
    for d in tree(p):
        try:
            s |= {int(x) for x in open(os.path.join(d, "cgroup.procs")).read().split()}
        except (OSError, ValueError):
            pass
    return s
groups = sys.argv[1:]
for _ in range(300):
    left = set()
    for g in groups:
        k = os.path.join(g, "cgroup.kill")
        if os.path.exists(k):
            try:
                open(k, "w").write("1")
            except OSError:
                pass
        left |= pids(g)
    if not left:
        break
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    time.sleep(0.02)
for g in groups:
    for d in reversed(tree(g)):
        for _ in range(50):
            try:
                os.rmdir(d)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.02)
"""

_keep: list = []  # the write end of the pipe (and the process), alive as long as this process


def start_reaper(groups: list[str]) -> None:
    r, w = os.pipe()  # both ends non-inheritable: no child of ours holds the write end
    proc = subprocess.Popen([sys.executable, "-I", "-S", "-c", CODE, *groups], stdin=r, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
    os.close(r)
    _keep.extend([w, proc])
