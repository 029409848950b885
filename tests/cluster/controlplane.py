"""Start a real kube-apiserver + etcd (the envtest approach: no kubelet) on free loopback ports.

Used by the pytest fixtures, the Helm checks and the bench scripts:

    with ControlPlane.start() as cp:
        cp.kubeconfig  # path to an admin kubeconfig

Binaries: Kubernetes 1.20.2 server binaries (xz) from $CLAWKUBE_K8S_BIN or ../shared/k8s/bin, unpacked once
into ~/.cache/clawkube/k8s-1.20.2. etcd and openssl come from Debian's packages (etcd-server, openssl).
kube-apiserver: the reflect2-fixed build of build-apiserver.sh whenever it is in
~/.cache/clawkube/k8s-1.20.2-fixed/<script hash>/ ($CLAWKUBE_K8S_BIN does not change that: the shared one crashes
on custom-resource writes, docs/cluster.md); the shared one only when there is no fixed build.
`ControlPlane.unavailable_reason()` says why one cannot be started here (tests skip with that reason).
"""
from __future__ import annotations

import hashlib
import lzma
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("CLAWKUBE_K8S_CACHE", Path.home() / ".cache" / "clawkube" / "k8s-1.20.2"))
BINARIES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet")
BUILD_SCRIPT = Path(__file__).with_name("build-apiserver.sh")
FIXED_CACHE = Path(os.environ.get("CLAWKUBE_K8S_FIXED_CACHE",
                                  Path.home() / ".cache" / "clawkube" / "k8s-1.20.2-fixed"))


def k8s_bin_source() -> Path:
    env = os.environ.get("CLAWKUBE_K8S_BIN")
    return Path(env) if env else REPO.parent / "shared" / "k8s" / "bin"


def ensure_binary(name: str) -> Path:
    """Unpack bin/<name>.xz into the cache (once) and return the executable's path."""
    out = CACHE / name
    if out.exists() and os.access(out, os.X_OK):
        return out
    src = k8s_bin_source() / f"{name}.xz"
    if not src.exists():
        raise FileNotFoundError(f"{src} not found (set CLAWKUBE_K8S_BIN to the folder holding {name}.xz)")
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    with lzma.open(src) as fin, open(tmp, "wb") as fout:
        shutil.copyfileobj(fin, fout, 1 << 20)
    tmp.chmod(0o755)
    tmp.rename(out)
    return out


def build_key(script: Path | None = None) -> str:
    """The cache key of build-apiserver.sh's output: the first 12 hex digits of the script's sha256."""
    return hashlib.sha256((script or BUILD_SCRIPT).read_bytes()).hexdigest()[:12]


def fixed_apiserver_dir(cache: Path | None = None, script: Path | None = None) -> Path | None:
    """The folder holding the reflect2-fixed kube-apiserver built by this very build-apiserver.sh, or None."""
    key = build_key(script)
    d = (cache or FIXED_CACHE) / key
    stamp = d / "build-key"
    if (d / "kube-apiserver").is_file() and stamp.is_file() and stamp.read_text().strip() == key:
        return d
    return None


def apiserver_binary() -> Path:
    """The reflect2-fixed build when present (whatever $CLAWKUBE_K8S_BIN says), else the shared one."""
    fixed = fixed_apiserver_dir()
    if fixed is not None:
        return fixed / "kube-apiserver"
    return ensure_binary("kube-apiserver")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(*args: str, cwd: Path) -> None:
    subprocess.run(args, cwd=cwd, check=True, capture_output=True)


def make_pki(d: Path) -> None:
    """CA, apiserver serving cert (127.0.0.1/localhost), admin client cert, SA key pair."""
    d.mkdir(parents=True, exist_ok=True)
    if (d / "admin.crt").exists():
        return
    _run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
         "-subj", "/CN=clawkube-test-ca", "-days", "3650", cwd=d)
    (d / "server.cnf").write_text(
        "[ext]\nsubjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n")
    (d / "client.cnf").write_text("[ext]\nextendedKeyUsage=clientAuth\n")
    for name, subj, cnf in (("apiserver", "/CN=kube-apiserver", "server.cnf"),
                            ("admin", "/O=system:masters/CN=admin", "client.cnf"),
                            ("node", "/O=system:nodes/CN=system:node:node-1", "client.cnf")):
        _run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
             "-subj", subj, cwd=d)
        _run("openssl", "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", f"{name}.crt", "-days", "3650", "-extfile", cnf, "-extensions", "ext", cwd=d)
    _run("openssl", "genrsa", "-out", "sa.key", "2048", cwd=d)
    _run("openssl", "rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=d)


def write_kubeconfig(path: Path, server: str, pki: Path, user: str = "admin") -> None:
    path.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: local, cluster: {{server: "{server}", certificate-authority: {pki}/ca.crt}}}}]
users: [{{name: {user}, user: {{client-certificate: {pki}/{user}.crt, client-key: {pki}/{user}.key}}}}]
contexts: [{{name: local, context: {{cluster: local, user: {user}}}}}]
current-context: local
""")


@dataclass
class ControlPlane:
    state: Path
    port: int
    kubeconfig: Path
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)
    owns_state: bool = False

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @staticmethod
    def unavailable_reason() -> str | None:
        if shutil.which("etcd") is None:
            return "etcd not installed (apt-get install etcd-server)"
        if shutil.which("openssl") is None:
            return "openssl not installed"
        if fixed_apiserver_dir() is not None:
            return None
        for b in ("kube-apiserver",):
            if not (CACHE / b).exists() and not (k8s_bin_source() / f"{b}.xz").exists():
                return f"no {b} binary: neither {CACHE / b} nor {k8s_bin_source() / (b + '.xz')} exists"
        return None

    @classmethod
    def start(cls, state: Path | None = None, timeout: float = 90.0,
              extra_apiserver_args: list[str] | None = None, apiserver: Path | None = None) -> "ControlPlane":
        """`apiserver`: the kube-apiserver executable to run (default: apiserver_binary())."""
        reason = cls.unavailable_reason()
        if reason:
            raise RuntimeError(f"cannot start a control plane: {reason}")
        owns = state is None
        state = Path(state or tempfile.mkdtemp(prefix="clawkube-cp-"))
        (state / "logs").mkdir(parents=True, exist_ok=True)
        make_pki(state / "pki")
        apiserver = apiserver or apiserver_binary()
        port, etcd_port, peer_port = free_port(), free_port(), free_port()
        cp = cls(state=state, port=port, kubeconfig=state / "admin.kubeconfig", owns_state=owns)
        write_kubeconfig(cp.kubeconfig, cp.server, state / "pki")
        etcd_url = f"http://127.0.0.1:{etcd_port}"
        cp._spawn("etcd", ["etcd", "--data-dir", str(state / "etcd"), "--listen-client-urls", etcd_url,
                           "--advertise-client-urls", etcd_url,
                           "--listen-peer-urls", f"http://127.0.0.1:{peer_port}",
                           "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer_port}",
                           "--initial-cluster", f"default=http://127.0.0.1:{peer_port}",
                           "--quota-backend-bytes", str(4 << 30)])
        pki = state / "pki"
        cp._spawn("apiserver", [str(apiserver), f"--etcd-servers={etcd_url}", "--bind-address=127.0.0.1",
                                "--advertise-address=127.0.0.1", f"--secure-port={port}",
                                f"--tls-cert-file={pki}/apiserver.crt", f"--tls-private-key-file={pki}/apiserver.key",
                                f"--client-ca-file={pki}/ca.crt", f"--service-account-key-file={pki}/sa.pub",
                                f"--service-account-signing-key-file={pki}/sa.key",
                                "--service-account-issuer=https://kubernetes.default.svc",
                                "--service-cluster-ip-range=10.96.0.0/16", "--authorization-mode=Node,RBAC",
                                "--allow-privileged=true", f"--kubelet-client-certificate={pki}/admin.crt",
                                f"--kubelet-client-key={pki}/admin.key", "--endpoint-reconciler-type=none",
                                *(extra_apiserver_args or [])])
        try:
            cp.wait_ready(timeout)
        except Exception:
            cp.stop()
            raise
        return cp

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = open(self.state / "logs" / f"{name}.log", "wb")
        self.procs[name] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def ssl_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.state / "pki" / "ca.crt"))
        ctx.load_cert_chain(self.state / "pki" / "admin.crt", self.state / "pki" / "admin.key")
        return ctx

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            for name, p in self.procs.items():
                if p.poll() is not None:
                    tail = (self.state / "logs" / f"{name}.log").read_text(errors="replace")[-2000:]
                    raise RuntimeError(f"{name} exited with {p.returncode}:\n{tail}")
            try:
                with urllib.request.urlopen(f"{self.server}/readyz", context=self.ssl_context(), timeout=2) as r:
                    if r.status == 200:
                        return
            except Exception as e:  # not up yet
                last = str(e)
            time.sleep(0.3)
        raise TimeoutError(f"apiserver not ready after {timeout}s: {last}")

    def stop(self) -> None:
        for name in ("apiserver", "etcd"):
            p = self.procs.get(name)
            if p and p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
        self.procs.clear()
        if self.owns_state:
            shutil.rmtree(self.state, ignore_errors=True)

    def __enter__(self) -> "ControlPlane":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


class ApiserverWatchdog:
    """Restart a crashed kube-apiserver on the same port and etcd (its state survives); counts restarts.

    A fallback for the shared Kubernetes 1.20.2 binary (Go 1.19 with the vendored reflect2 1.0.1, which is not
    Go-1.18-safe and dies with `fatal error: fault` on custom-resource writes); the reflect2-fixed build
    (build-apiserver.sh) does not crash, so `restarts` stays 0 there. To clients a crash looks like a short outage.
    """

    def __init__(self, cp: "ControlPlane"):
        import threading

        self.cp = cp
        pid = cp.procs["apiserver"].pid
        self.argv = [a.decode() for a in Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")]
        self.restarts = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="apiserver-watchdog", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(0.3):
            p = self.cp.procs.get("apiserver")
            if p is None or p.poll() is None:
                continue
            log = self.cp.state / "logs" / "apiserver.log"
            if log.exists():
                log.rename(log.with_name(f"apiserver.crash{self.restarts}.log"))
            self.restarts += 1
            self.cp._spawn("apiserver", self.argv)
            try:
                self.cp.wait_ready(60)
            except Exception:  # the next round retries
                pass

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


if __name__ == "__main__":  # manual use: python -m tests.cluster.controlplane
    with ControlPlane.start(Path(tempfile.mkdtemp(prefix="clawkube-cp-"))) as cp:
        print(f"KUBECONFIG={cp.kubeconfig}  (Ctrl-C to stop)")
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
