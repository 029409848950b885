"""tests/cluster/cluster.py's decisions, without starting anything: which components count as alive, why no
cluster can be started, which pod log file is read."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cluster import cluster as cl


@pytest.fixture
def sleeper(tmp_path):
    """A live process whose command line names tmp_path (as up.sh's restart loops name their STATE_DIR)."""
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", str(tmp_path)])
    deadline = time.monotonic() + 10  # under load the new command line can show up late in /proc
    while str(tmp_path).encode() not in Path(f"/proc/{p.pid}/cmdline").read_bytes() and time.monotonic() < deadline:
        time.sleep(0.05)
    yield p.pid
    p.kill()
    p.wait()


def test_components_alive_needs_a_live_pid_naming_the_state_dir(tmp_path, sleeper):
    (tmp_path / "etcd.pid").write_text(f"{sleeper}\n")          # alive, names tmp_path
    (tmp_path / "apiserver.pid").write_text(f"{os.getpid()}\n")  # alive, but pytest's command line lacks tmp_path
    (tmp_path / "kubelet.pid").write_text("not-a-pid\n")
    alive = cl.components_alive(tmp_path)
    assert alive == {"etcd": True, "apiserver": False, "controller-manager": False, "scheduler": False,
                     "containerd": False, "kubelet": False}


def test_running_state_dir_only_when_every_component_is_alive(tmp_path, sleeper, monkeypatch):
    owner = tmp_path / "owner"
    owner.write_text(str(tmp_path))
    monkeypatch.setattr(cl, "OWNER_FILE", owner)
    for name in cl.COMPONENTS[:-1]:
        (tmp_path / f"{name}.pid").write_text(str(sleeper))
    assert cl.running_state_dir() is None  # kubelet has no pid file
    (tmp_path / "kubelet.pid").write_text(str(sleeper))
    assert cl.running_state_dir() == tmp_path
    monkeypatch.setattr(cl, "OWNER_FILE", tmp_path / "absent")
    assert cl.running_state_dir() is None


def test_unavailable_reason_names_the_missing_binaries(tmp_path, monkeypatch):
    """Without ../shared (a fresh clone elsewhere) up.sh builds the binaries: only a machine that cannot build
    them (no apt-get) has no cluster."""
    monkeypatch.delenv("CLAWKUBE_CLUSTER_KUBECONFIG", raising=False)
    monkeypatch.setattr(cl, "running_state_dir", lambda: None)
    monkeypatch.setattr(cl, "fixed_apiserver_dir", lambda: None)
    monkeypatch.setenv("CLAWKUBE_K8S_BIN", str(tmp_path))
    assert cl.missing_binaries() == ["kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet"]
    monkeypatch.setattr(cl.shutil, "which", lambda name: None if name == "apt-get" else f"/usr/bin/{name}")
    reason = cl.unavailable_reason()
    if os.geteuid() != 0:
        assert reason.startswith("not root")
    else:
        assert reason.startswith(f"no Kubernetes binaries ['kube-apiserver', 'kube-controller-manager', "
                                 f"'kube-scheduler', 'kubelet'] in {tmp_path}") and "no apt-get" in reason
        monkeypatch.setattr(cl.shutil, "which", lambda name: f"/usr/bin/{name}")
        assert cl.unavailable_reason() is None  # up.sh builds them
    fixed = tmp_path / "fixed"
    fixed.mkdir()
    for b in ("kube-apiserver", "kubelet"):
        (fixed / b).write_bytes(b"\x7fELF")
    (tmp_path / "kube-scheduler.xz").write_bytes(b"")
    monkeypatch.setattr(cl, "fixed_apiserver_dir", lambda: fixed)
    assert cl.missing_binaries() == ["kube-controller-manager"]
    monkeypatch.setenv("CLAWKUBE_CLUSTER_KUBECONFIG", str(tmp_path / "kc"))
    assert cl.unavailable_reason() is None  # a given cluster needs nothing on this machine


def test_read_pod_log_picks_the_pods_folder_and_restart(tmp_path, monkeypatch):
    monkeypatch.setattr(cl, "POD_LOGS", tmp_path)
    d = tmp_path / "ns_web_uid-1" / "main"
    d.mkdir(parents=True)
    (d / "0.log").write_text("2026-01-01T00:00:00Z stdout F first\n")
    (d / "1.log").write_text("2026-01-01T00:00:01Z stderr F second\n")
    assert cl.read_pod_log("ns", "web", "main") == {"stdout": "first\n", "stderr": ""}
    assert cl.read_pod_log("ns", "web", "main", uid="uid-1", restart=1)["stderr"] == "second\n"
    with pytest.raises(FileNotFoundError, match="ns_other_"):
        cl.read_pod_log("ns", "other", "main")
