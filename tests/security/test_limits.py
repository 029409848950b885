"""Resource attacks: fork bombs, memory hogs, daemons that outlive the agent, output floods. Each ends as the
agent's own problem (agent error or a normal score), with the machine and the runner unharmed."""
from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from clawkube.results.model import ErrorKind
from clawkube.runspec import Resources

from .attack import IS_ROOT, NEEDS_ROOT, make_task, outputs, py, run, world_root

pytestmark = pytest.mark.skipif(not IS_ROOT, reason=NEEDS_ROOT)

FORKS = 1500  # more than the sandbox's pids limit (1024)
FORK_BOMB = f'''
import os, time
n = 0
for _ in range({FORKS}):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        os.execv("/bin/sleep", ["sleep", "5"])
    n += 1
for _ in range(n):
    os.wait()
print("forked", n, flush=True)
'''


def test_fork_bomb_hits_the_pids_limit(tmp_path: Path):
    root = world_root(tmp_path)
    make_task(root)
    out = root / "out"
    (r,) = run(root / "tasks", out, [py(FORK_BOMB, "2>&1 | tail -1"), "echo 42 > answer.txt"]).results
    n = int(outputs(out)[0].split()[-1])
    assert n < FORKS, f"{n} processes forked: no pids limit"
    assert r.score is not None  # graded: the bomb was the agent's problem only


def test_control_the_fork_bomb_forks_them_all_without_a_limit():
    p = subprocess.run([sys.executable, "-c", FORK_BOMB],
                       capture_output=True, text=True, timeout=120, start_new_session=True)
    assert p.stdout.split()[-1] == str(FORKS)


HOG = '''
x = bytearray(1536 * 1024 * 1024)
for i in range(0, len(x), 4096):
    x[i] = 1
print("allocated", flush=True)
'''


def test_memory_hog_is_killed_at_spec_resources_memory(tmp_path: Path):
    root = world_root(tmp_path)
    make_task(root)
    out = root / "out"
    (r,) = run(root / "tasks", out, [py(HOG)], resources=Resources(memory="256Mi")).results
    assert "allocated" not in outputs(out)[0]
    assert r.score is not None and r.error_kind is None  # the kill hit the hog; the agent itself went on


def test_control_the_hog_allocates_without_a_limit():
    p = subprocess.run([sys.executable, "-c", HOG], capture_output=True, text=True, timeout=120)
    assert "allocated" in p.stdout


def test_daemons_die_with_the_agent(tmp_path: Path):
    root = world_root(tmp_path)
    make_task(root)
    out = root / "out"
    marker = f"clawkube-daemon-{uuid.uuid4().hex}"
    daemon = (f"setsid bash -c 'exec -a {marker} sleep 600' </dev/null >/dev/null 2>&1 & "
              f"(nohup sh -c 'sleep 600 # {marker}' </dev/null >/dev/null 2>&1 &) ; sleep 1; "
              f"ps ax | grep -c '[{marker[0]}]{marker[1:]}'")
    (r,) = run(root / "tasks", out, [daemon]).results
    started = int(outputs(out)[0].strip().splitlines()[-1])
    time.sleep(0.5)
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
    for pid in left:
        subprocess.run(["kill", "-9", pid])
    assert started == 2  # the daemons were running while the agent was
    assert left == [], "daemons outlived the agent's run"


def test_output_flood_is_capped_and_counted(tmp_path: Path):
    root = world_root(tmp_path)
    make_task(root)
    out = root / "out"
    flood = "head -c 200000000 /dev/zero | tr '\\0' 'x'; echo; echo 42 > answer.txt"
    (r,) = run(root / "tasks", out, [flood]).results
    d = out / "trials" / "answer" / "0"
    assert r.error_kind in (None, ErrorKind.AGENT_ERROR) and r.score is not None
    kept = (d / "agent.stdout").stat().st_size
    info = json.loads((d / "agent.exec.json").read_text())
    assert kept < 100_000_000 and info["stdout_truncated"] and info["stdout_bytes"] > 200_000_000
