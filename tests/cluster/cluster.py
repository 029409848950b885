"""The whole single-node cluster (tests/cluster/up.sh) from Python: start, reuse, stop, build images, read pod logs.

    cluster = Cluster.ensure(state_dir)    # reuses the machine's running cluster, else runs up.sh
    cluster.kubeconfig                     # admin kubeconfig (https://127.0.0.1:6443)
    build_images()                         # images/build.sh: local.test/clawkube-{operator,agent,grader}:dev
    read_pod_log(namespace, pod, container)   # from /var/log/pods, as the kubelet wrote it
    cluster.stop()                         # down.sh, only when this process started it

One cluster per machine (it binds 6443, 2379, the kubelet's ports and the pod bridge); /run/clawkube-cluster.state names
the STATE_DIR of the running one. `unavailable_reason()` says why none can be started here (tests skip with it).
"""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.cluster.controlplane import REPO, fixed_apiserver_dir, k8s_bin_source

HERE = Path(__file__).resolve().parent
OWNER_FILE = Path("/run/clawkube-cluster.state")
COMPONENTS = ("etcd", "apiserver", "controller-manager", "scheduler", "containerd", "kubelet")
POD_LOGS = Path("/var/log/pods")
IMAGES = {name: f"local.test/clawkube-{name}:dev" for name in ("operator", "agent", "grader")}


def default_state_dir() -> Path:
    return Path(os.environ.get("CLAWKUBE_CLUSTER_STATE", REPO / ".state" / "cluster"))


def components_alive(state: Path) -> dict[str, bool]:
    """Each component: does its pid file name a live process whose command line mentions `state` (as up.sh checks)?"""
    alive = {}
    for name in COMPONENTS:
        try:
            pid = int((state / f"{name}.pid").read_text().strip())
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            alive[name] = str(state) in cmdline
        except (OSError, ValueError):
            alive[name] = False
    return alive


def running_state_dir() -> Path | None:
    """The STATE_DIR of the cluster running on this machine, when all its components are alive."""
    try:
        state = Path(OWNER_FILE.read_text().strip())
    except OSError:
        return None
    return state if all(components_alive(state).values()) else None


def unavailable_reason() -> str | None:
    if not os.environ.get("CLAWKUBE_CLUSTER_KUBECONFIG") and running_state_dir() is None:
        if os.geteuid() != 0:
            return "not root: the kubelet and containerd need root"
        if shutil.which("bash") is None:
            return "no bash"
        missing = missing_binaries()
        if missing and shutil.which("apt-get") is None:
            return (f"no Kubernetes binaries {missing} in {k8s_bin_source()} (set CLAWKUBE_K8S_BIN) and no apt-get "
                    f"to build them from Debian's source (tests/cluster/build-apiserver.sh --all)")
    return None


def missing_binaries() -> list[str]:
    """The binaries up.sh needs that neither the fixed build nor $CLAWKUBE_K8S_BIN holds (up.sh builds those)."""
    fixed = fixed_apiserver_dir()
    return [b for b in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet")
            if not (fixed is not None and (fixed / b).is_file()) and not (k8s_bin_source() / f"{b}.xz").exists()]


def _run(argv: list[str], timeout: float, what: str) -> str:
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{what} failed with exit code {p.returncode}:\n{(p.stdout + p.stderr)[-4000:]}")
    return p.stderr


@dataclass
class Cluster:
    kubeconfig: Path
    state: Path | None  # None when given only a kubeconfig (CLAWKUBE_CLUSTER_KUBECONFIG)
    started_here: bool

    @classmethod
    def ensure(cls, state: Path | None = None, timeout: float = 2700) -> "Cluster":  # up.sh may build k8s once
        """Reuse $CLAWKUBE_CLUSTER_KUBECONFIG or the machine's running cluster; else run up.sh STATE_DIR."""
        env = os.environ.get("CLAWKUBE_CLUSTER_KUBECONFIG")
        if env:
            return cls(kubeconfig=Path(env), state=None, started_here=False)
        running = running_state_dir()
        if running is not None:
            return cls(kubeconfig=running / "admin.kubeconfig", state=running, started_here=False)
        state = Path(state or default_state_dir()).resolve()
        _run(["bash", str(HERE / "up.sh"), str(state)], timeout, f"{HERE / 'up.sh'} {state}")
        return cls(kubeconfig=state / "admin.kubeconfig", state=state, started_here=True)

    def stop(self) -> None:
        """down.sh, when this process started the cluster (a reused one keeps running)."""
        if self.started_here and self.state is not None:
            _run(["bash", str(HERE / "down.sh"), str(self.state)], 120, f"{HERE / 'down.sh'} {self.state}")
            self.started_here = False


def build_images(timeout: float = 900) -> str:
    """images/build.sh into the running cluster's containerd; returns its progress log."""
    return _run(["nice", "-n", "10", "bash", str(REPO / "images" / "build.sh")], timeout, "images/build.sh")


def parse_cri_log(text: str) -> dict[str, str]:
    """The kubelet's CRI log format (`<time> <stream> <P|F> <text>` per line) -> {"stdout": ..., "stderr": ...}.
    P marks a partial line continued by the next record of that stream."""
    out: dict[str, str] = {"stdout": "", "stderr": ""}
    for line in text.splitlines():
        parts = line.split(" ", 3)
        if len(parts) < 3 or parts[1] not in out:
            raise ValueError(f"not a CRI log line: {line!r}")
        body = parts[3] if len(parts) == 4 else ""
        out[parts[1]] += body if parts[2] == "P" else body + "\n"
    return out


def read_pod_log(namespace: str, pod: str, container: str, uid: str | None = None, restart: int = 0) -> dict[str, str]:
    """A container's log as the kubelet wrote it under /var/log/pods/<ns>_<pod>_<uid>/<container>/<restart>.log."""
    pattern = f"{namespace}_{pod}_{uid or '*'}"
    dirs = sorted(POD_LOGS.glob(pattern))
    if not dirs:
        raise FileNotFoundError(f"no pod log folder {POD_LOGS / pattern}")
    return parse_cri_log((dirs[-1] / container / f"{restart}.log").read_text())
