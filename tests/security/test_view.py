"""What an agent can read: nothing but its own workspace, home, skills, /tmp and the system folders.

The agent knows where the material is (the paths are in its commands) but not what it holds."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from .attack import CONTROL, ENV_SECRET, IS_ROOT, NEEDS_ROOT, SANDBOXED, SECRET, make_task, outputs, run, world_root

pytestmark = pytest.mark.skipif(not IS_ROOT, reason=NEEDS_ROOT)


def _probes(root: Path, out: Path) -> list[str]:
    return [
        # the task's ground truth and sources, the run's private bundles and results, wherever they are
        f"cat {root}/fixtures/answer/gt/answer.txt {root}/tasks/answer.md 2>&1",
        f"grep -rl 'GT-SECRET' {root} {out} /tmp /var/tmp /opt /home /srv /mnt /root /work 2>/dev/null | head",
        f"ls -A {out}/.private/tasks/answer/grading/files/gt {out}/.grading {out}/trials 2>&1",
        # the runner's environment, through every process the agent can see
        "cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c '[E]NV-SECRET-'; env | grep -c '[E]NV-SECRET-'",
        "echo 42 > answer.txt",
    ]


def _attack(tmp_path: Path, mode: str, monkeypatch) -> tuple[list[str], object]:
    monkeypatch.setenv("CLAWKUBE_TEST_RUNNER_SECRET", ENV_SECRET)  # in the runner's env, not a task's
    root = world_root(tmp_path)
    make_task(root)
    out = root / "out"
    # A runner-side process that holds the secret in its start-up environment (/proc/PID/environ) for the whole
    # run: the probe has something to find whatever else runs at that moment (a later setenv is not in the
    # pytest process's own /proc environ).
    holder = subprocess.Popen(["sleep", "600"], env=dict(os.environ), stdin=subprocess.DEVNULL)
    try:
        (r,) = run(root / "tasks", out, _probes(root, out), mode=mode).results
    finally:
        holder.kill()
        holder.wait()
    return outputs(out), r


def test_agent_sees_no_ground_truth_task_source_results_or_runner_env(tmp_path: Path, monkeypatch):
    seen, r = _attack(tmp_path, SANDBOXED, monkeypatch)
    assert r.firewall != "none"
    assert SECRET not in seen[0] and "No such file" in seen[0]
    assert seen[1].strip() == ""
    assert all("No such file" in line for line in seen[2].splitlines()), seen[2]
    assert seen[3].split() == ["0", "0"], seen[3]


def test_control_without_the_sandbox_the_same_probes_find_it_all(tmp_path: Path, monkeypatch):
    seen, r = _attack(tmp_path, CONTROL, monkeypatch)
    assert r.firewall == "none"
    assert SECRET in seen[0] and seen[1].strip()
    assert "answer.txt" in seen[2]
    assert int(seen[3].split()[0]) > 0


def test_trials_cannot_see_each_others_scratch(tmp_path: Path):
    """Two trials at once: each looks for the other's workspace next to its own (and anywhere under /tmp)."""
    root = world_root(tmp_path)
    make_task(root)
    out = root / "out"
    mark = "t=$RANDOM$RANDOM; touch mine-$t; sleep 3; "
    look = ("ls -d \"$(dirname \"$PWD\")\"/../*/workspace/mine-* /tmp/clawkube-work-*/*/workspace/mine-* 2>/dev/null "
            "| grep -v \"mine-$t$\" | head")
    o = run(root / "tasks", out, [mark + look], trials=2, parallel=2)
    seen = [outputs(out, trial=str(i))[0] for i in range(2)]
    assert all(r.firewall != "none" for r in o.results)
    assert seen == ["", ""], seen
    # control: the same probe outside the sandbox does see the other trial's workspace
    c = run(root / "tasks", root / "out-control", [mark + look], trials=2, parallel=2, mode=CONTROL)
    assert all(r.firewall == "none" for r in c.results)
    assert any(outputs(root / "out-control", trial=str(i))[0].strip() for i in range(2))


def test_the_agent_runs_as_its_own_uid_without_capabilities(tmp_path: Path):
    root = world_root(tmp_path)
    make_task(root)
    out = root / "out"
    run(root / "tasks", out, ["id -u; grep CapEff /proc/self/status; id -u > uid"], trials=2, parallel=2)
    a, b = (outputs(out, trial=str(i))[0].split() for i in range(2))
    assert a[0] != "0" and b[0] != "0" and a[0] != b[0], (a, b)  # not root, and a uid per trial
    assert a[2] == b[2] == "0000000000000000"
    assert os.geteuid() == 0


def test_a_harness_install_is_seen_read_only_and_nothing_beside_it(tmp_path: Path):
    """A harness's install (`Invocation.read_paths`) is visible to the agent, executable and read-only; a folder
    next to it is not visible at all."""
    from clawkube.lifecycle.sandbox import AgentBox, Isolation, base_env

    root = world_root(tmp_path)
    tool = root / "install" / "bin" / "harness"
    tool.parent.mkdir(parents=True)
    tool.write_text("#!/bin/sh\necho harness-ran\n")
    tool.chmod(0o755)
    (root / "beside").mkdir()
    (root / "beside" / "answer.txt").write_text(SECRET)
    trial = root / "trial"
    for d in ("workspace", "home", "skills", "scratch"):
        (trial / d).mkdir(parents=True)
    probe = (f"{tool}; touch {tool.parent}/planted 2>&1 | grep -c 'Read-only'; "
             f"cat {root}/beside/answer.txt 2>&1 | grep -c 'No such file'")
    with AgentBox(Isolation(mode="bwrap"), workspace=trial / "workspace", home=trial / "home",
                  skills=trial / "skills", scratch=trial / "scratch", read_paths=[root / "install"]) as box:
        r = box.run(["sh", "-c", probe], env=base_env(box.inside(trial / "home"), {}), timeout=30)
    assert r.stdout.split() == ["harness-ran", "1", "1"], (r.stdout, r.stderr)
    assert not (tool.parent / "planted").exists()
    # control: without the install in read_paths the harness is not there to run
    with AgentBox(Isolation(mode="bwrap"), workspace=trial / "workspace", home=trial / "home",
                  skills=trial / "skills", scratch=trial / "scratch") as box:
        r = box.run([str(tool)], env=base_env(box.inside(trial / "home"), {}), timeout=30)
    assert not r.ok and "harness-ran" not in r.stdout
