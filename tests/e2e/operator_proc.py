"""The operator as a host process (`python -m clawkube.k8s`, what `clawkube operator` runs) for the e2e tests:
start it with CLAWKUBE_* settings, kill it hard (SIGKILL: no cleanup, as a crash or OOM kill), start it again.
Its metrics endpoint listens on 127.0.0.1 only (CLAWKUBE_LISTEN_ADDRESS)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Optional

from tests.e2e import procs
from tests.e2e.s3 import ACCESS, free_port


class OperatorProcess:
    def __init__(self, env: dict[str, str], log: Path, metrics_port: int):
        self.env, self.log, self.metrics_port = env, log, metrics_port
        self.proc: Optional[subprocess.Popen] = None
        self.starts = 0
        self.kills = 0

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.metrics_port}/metrics"

    def start(self, timeout: float = 60) -> None:
        assert self.proc is None or self.proc.poll() is not None, "operator already running"
        with self.log.open("a") as f:
            f.write(f"\n===== e2e: operator start #{self.starts + 1} =====\n")
        out = self.log.open("a")
        self.proc = subprocess.Popen([sys.executable, "-m", "clawkube.k8s"], env={**os.environ, **self.env},
                                     stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        out.close()
        self.starts += 1
        procs.wait_serving(self.proc, self.metrics_url, "operator", timeout, self.tail)

    def kill(self) -> None:
        """SIGKILL, as a crash: kopf gets no chance to clean up."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
            self.kills += 1

    def stop(self) -> None:
        procs.stop(self.proc)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def metrics_text(self) -> str:
        return urllib.request.urlopen(self.metrics_url, timeout=5).read().decode()

    def tail(self, n: int = 60) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"


def for_namespace(kubeconfig: Path, ns: str, agent_image: str, grader_image: str, log: Path) -> OperatorProcess:
    """The operator of an e2e test's namespace: the locally built images (never pulled), a 1 s requeue, the test S3's
    keys, metrics on a free loopback port."""
    port = free_port("127.0.0.1")
    return OperatorProcess({
        "KUBECONFIG": str(kubeconfig), "CLAWKUBE_NAMESPACES": ns, "CLAWKUBE_METRICS_PORT": str(port),
        "CLAWKUBE_LIVENESS_PORT": "0", "CLAWKUBE_LISTEN_ADDRESS": "127.0.0.1",
        "CLAWKUBE_AGENT_IMAGE": agent_image, "CLAWKUBE_GRADER_IMAGE": grader_image,
        "CLAWKUBE_IMAGE_PULL_POLICY": "Never", "CLAWKUBE_REQUEUE_SECONDS": "1",
        "AWS_ACCESS_KEY_ID": ACCESS["aws_access_key_id"], "AWS_SECRET_ACCESS_KEY": ACCESS["aws_secret_access_key"],
        "PYTHONUNBUFFERED": "1",
    }, log, port)
