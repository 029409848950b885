"""The operator's readiness (/readyz on the metrics port, the chart's readinessProbe): not ready until a
reconcile pass has read the API server, and not ready while it cannot; liveness (/healthz) is another matter."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

from kubernetes.client.exceptions import ApiException

from clawkube.k8s.metrics import Metrics, serve
from clawkube.k8s.reconcile import Reconciler
from clawkube.settings import Settings
from tests.cluster.controlplane import free_port


class FlakyKube:
    """A Kube whose reads fail while `down` is set."""

    def __init__(self):
        self.down = True

    def list_runs(self, ns):
        if self.down:
            raise ApiException(status=0, reason="connection refused")
        return []

    def __getattr__(self, name):
        def call(*a, **kw):
            if self.down:
                raise ApiException(status=0, reason="connection refused")
            return []
        return call


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_ready_only_after_a_pass_has_read_the_api(monkeypatch):
    from prometheus_client import CollectorRegistry

    kube = FlakyKube()
    rec = Reconciler(kube, Settings(namespaces=["bench"], requeue_seconds=1), Metrics(CollectorRegistry()))
    monkeypatch.setattr("clawkube.k8s.reconcile.gather", lambda k, ns: k.list_runs(ns))
    port = free_port()
    httpd = serve(port, CollectorRegistry(), "127.0.0.1", ready=rec.readiness)
    try:
        status, body = _get(f"http://127.0.0.1:{port}/readyz")
        assert status == 503 and "no pass has read the Kubernetes API yet (starting)" in body
        rec.run_once()  # the API server is unreachable
        status, body = _get(f"http://127.0.0.1:{port}/readyz")
        assert status == 503 and "reading namespace bench: connection refused" in body
        kube.down = False
        rec.run_once()
        assert _get(f"http://127.0.0.1:{port}/readyz") == (200, "ready\n")
        assert _get(f"http://127.0.0.1:{port}/metrics")[0] == 200
        kube.down = True
        rec.run_once()
        rec.last_read_ok -= 100  # a while ago: 10 * requeue + 60 s is the limit
        status, body = _get(f"http://127.0.0.1:{port}/readyz")
        assert status == 503 and "no successful read of the Kubernetes API for" in body
    finally:
        httpd.shutdown()


def test_the_operator_process_is_not_ready_without_an_api_server(tmp_path):
    """`clawkube operator` against an address where nothing listens: /readyz says so (503) with the reason."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "https://127.0.0.1:{free_port()}", insecure-skip-tls-verify: true}}}}]
users: [{{name: u, user: {{token: x}}}}]
contexts: [{{name: c, context: {{cluster: c, user: u}}}}]
current-context: c
""")
    metrics = free_port()
    env = {**os.environ, "CLAWKUBE_KUBECONFIG": str(kubeconfig), "CLAWKUBE_NAMESPACES": "bench",
           "CLAWKUBE_METRICS_PORT": str(metrics), "CLAWKUBE_LIVENESS_PORT": "0",
           "CLAWKUBE_LISTEN_ADDRESS": "127.0.0.1", "CLAWKUBE_REQUEUE_SECONDS": "0.5"}
    proc = subprocess.Popen([sys.executable, "-m", "clawkube", "operator"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline, last = time.monotonic() + 60, None
        while time.monotonic() < deadline:
            try:
                last = _get(f"http://127.0.0.1:{metrics}/readyz")
                if last[0] == 503 and "(" in last[1] and "starting" not in last[1]:
                    break
            except OSError:
                pass
            time.sleep(0.5)
        assert last is not None and last[0] == 503 and last[1].startswith("not ready"), last
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(20)
