"""The agent pod's supervisor: an agent cannot outlive its phase, so what is captured after it (transcript,
workspace snapshot, termination message) is final.

`clawkube pod agent` runs agent-side processes with the `pod` backend (execution/pod.py): each process tree in
pid/user/mount namespaces of its own. Here locally (no cluster needed: the same supervisor code, and the pods run
it unchanged); cgroups are switched off in the in-process tests, as they are in a pod, so only the namespaces
stand in the way. The control turns the namespaces off and the same daemon survives."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from clawkube import execution as ex
from clawkube.execution import host, pod
from clawkube.lifecycle import bundle
from clawkube.benchmarks.loader import load_task
from tests.lifecycle_helpers import make_task

REPO = Path(__file__).resolve().parents[2]
NO_NS = pod.namespaces_available()

# the agent's last move: a daemon that leaves its session and rewrites the answer after the agent "finished"
# (the exec ends only once the daemon has left the session: a process still in it dies with the process group)
DAEMON = ("setsid sh -c 'echo $$ > ready; sleep 2; echo forged > {marker}' </dev/null >/dev/null 2>&1 & "
          "while [ ! -s ready ]; do sleep 0.05; done; echo started")


def _daemon_survives(tmp_path: Path, monkeypatch) -> bool:
    monkeypatch.setattr(host, "runner_group", lambda: None)  # as in a pod: no cgroup to kill the tree with
    marker = tmp_path / "marker"
    r = ex.run_once("pod", ex.SandboxSpec(name="t"), ex.ExecSpec(argv=["sh", "-c", DAEMON.format(marker=marker)],
                                                                cwd=str(tmp_path), limits=ex.Limits(timeout=30)))
    assert r.ok and "started" in r.stdout, r
    deadline = time.monotonic() + 8  # the daemon writes after 2 s (later on a busy machine)
    while time.monotonic() < deadline and not marker.exists():
        time.sleep(0.2)
    return marker.exists()


@pytest.mark.skipif(NO_NS is not None, reason=f"no user+pid namespaces here: {NO_NS}")
def test_a_setsid_daemon_dies_with_its_exec(tmp_path: Path, monkeypatch):
    assert not _daemon_survives(tmp_path, monkeypatch)


def test_control_without_namespaces_the_daemon_outlives_its_exec(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(pod, "_probe", "switched off for the control")
    assert os.getpid() != 1  # (as pid 1 the supervisor would sweep instead)
    assert _daemon_survives(tmp_path, monkeypatch)


@pytest.mark.skipif(NO_NS is not None, reason=f"no user+pid namespaces here: {NO_NS}")
def test_the_agent_cannot_see_or_signal_the_supervisor(tmp_path: Path):
    r = ex.run_once("pod", ex.SandboxSpec(name="t"),
                    ex.ExecSpec(argv=["sh", "-c", f"ls /proc | grep -c '^[0-9]'; kill -0 {os.getpid()} 2>&1 || "
                                                   "echo cannot-signal"], cwd=str(tmp_path),
                                limits=ex.Limits(timeout=30)))
    lines = r.stdout.split()
    assert int(lines[0]) <= 3 and "cannot-signal" in r.stdout, r.stdout  # sh, ls, grep: nothing of the pod


@pytest.mark.skipif(NO_NS is not None, reason=f"no user+pid namespaces here: {NO_NS}")
def test_pod_agent_captures_after_every_agent_process_is_gone(tmp_path: Path):
    """Through `clawkube pod agent`: the oracle's solution leaves a daemon that would rewrite answer.txt (and the
    marker) after capture; nothing of it survives the pod's agent phase."""
    marker = tmp_path / "marker"
    md = make_task(tmp_path, solution="echo 42 > answer.txt; " + DAEMON.format(marker=marker).replace(
        "echo forged > ", "echo forged > answer.txt; echo x > "))
    (tmp_path / "agent.tgz").write_bytes(bundle.agent_bundle(load_task(md), "oracle"))
    p = subprocess.run([sys.executable, "-m", "clawkube", "pod", "agent", "--bundle", str(tmp_path / "agent.tgz"),
                        "--workspace", str(tmp_path / "w/workspace"), "--out", str(tmp_path / "aout"),
                        "--harness", "oracle", "--termination-log", str(tmp_path / "ta")],
                       env=dict(os.environ, PYTHONPATH=str(REPO / "operator")), capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    execd = json.loads((tmp_path / "aout" / "agent.exec.json").read_text())
    assert execd["backend"] == "pod" and "pid-namespace" in execd["limits_enforced"], execd
    time.sleep(6)
    assert not marker.exists()
    with tarfile.open(tmp_path / "aout" / "workspace.tar.gz") as t:
        member = next(m for m in t.getmembers() if Path(m.name).name == "answer.txt")
        assert t.extractfile(member).read().decode().strip() == "42"


# a grader (or agent code it imports) looking for the supervisor's environment, where the store's keys would be
SNOOP = ("import glob\n"
         "hits = 0\n"
         "for p in glob.glob('/proc/[0-9]*/environ'):\n"
         "    try:\n"
         "        hits += b'STORE-SECRET-' in open(p, 'rb').read()\n"
         "    except OSError:\n"
         "        pass\n")


def _snoop(backend: str, tmp_path: Path) -> str:
    # a process of the supervisor's uid holding the key in its environment (as the pod's supervisor does)
    holder = subprocess.Popen(["sleep", "60"], env={"CLAWKUBE_TEST_STORE_KEY": "STORE-SECRET-" + os.urandom(8).hex()})
    try:
        r = ex.run_once(backend, ex.SandboxSpec(name="t"),
                        ex.ExecSpec(argv=[sys.executable, "-c", SNOOP + "print(hits)"], cwd=str(tmp_path),
                                    env={}, limits=ex.Limits(timeout=30)))
    finally:
        holder.kill()
        holder.wait()
    assert r.ok, r
    return r.stdout.strip()


@pytest.mark.skipif(NO_NS is not None, reason=f"no user+pid namespaces here: {NO_NS}")
def test_a_process_cannot_read_the_supervisors_environment(tmp_path: Path):
    if not pod._own_proc:
        pytest.skip("no /proc of its own here: the old /proc still shows the supervisor")
    assert _snoop("pod", tmp_path) == "0"
    assert int(_snoop("none", tmp_path)) >= 1  # control: the same probe on the host finds it


@pytest.mark.skipif(NO_NS is not None, reason=f"no user+pid namespaces here: {NO_NS}")
def test_pod_grade_runs_the_grader_where_it_cannot_see_the_supervisor(tmp_path: Path):
    """`clawkube pod grade` with the store's key in its environment: the grader finds it nowhere."""
    grader = "def grade(transcript, workspace_path):\n" + "\n".join(
        "    " + line for line in SNOOP.splitlines()) + "\n    return {'overall_score': 1.0 if hits else 0.0}\n"
    md = make_task(tmp_path, grader=grader)
    task = load_task(md)
    (tmp_path / "agent.tgz").write_bytes(bundle.agent_bundle(task, "oracle"))
    (tmp_path / "grading.tgz").write_bytes(bundle.grading_bundle(task))
    env = dict(os.environ, PYTHONPATH=str(REPO / "operator"), CLAWKUBE_TEST_STORE_KEY="STORE-SECRET-x")

    def clawkube(*args: str) -> None:
        p = subprocess.run([sys.executable, "-m", "clawkube", "pod", *args], env=env, capture_output=True, text=True,
                           timeout=300)
        assert p.returncode == 0, p.stderr[-2000:]

    clawkube("agent", "--bundle", str(tmp_path / "agent.tgz"), "--workspace", str(tmp_path / "w/workspace"),
             "--out", str(tmp_path / "aout"), "--harness", "oracle", "--termination-log", str(tmp_path / "ta"))
    clawkube("grade", "--grading", str(tmp_path / "grading.tgz"), "--agent-artifacts", str(tmp_path / "aout"),
             "--out", str(tmp_path / "gout"), "--termination-log", str(tmp_path / "tg"))
    score = json.loads((tmp_path / "gout" / "score.json").read_text())
    assert score["score"] == 0.0, score
