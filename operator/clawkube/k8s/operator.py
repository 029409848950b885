"""Running the operator: `python -m clawkube.k8s` (or `clawkube operator`), or in a thread (tests, tools)."""
from __future__ import annotations

import asyncio
import logging
import threading
from typing import Optional

import kopf

from ..settings import Settings
from .handlers import register
from .kube import Kube, api_client
from .metrics import Metrics, default_metrics, serve
from .reconcile import Reconciler


def build(settings: Settings, metrics: Optional[Metrics] = None) -> tuple[kopf.OperatorRegistry, Reconciler]:
    reconciler = Reconciler(Kube(api_client(settings)), settings, metrics or default_metrics())
    registry = kopf.OperatorRegistry()
    register(registry, settings, reconciler)
    return registry, reconciler


async def operate(settings: Settings, metrics: Optional[Metrics] = None,
                  stop_flag: Optional[threading.Event] = None, ready_flag: Optional[threading.Event] = None,
                  built: Optional[tuple[kopf.OperatorRegistry, Reconciler]] = None) -> None:
    registry, _ = built or build(settings, metrics)
    liveness = f"http://{settings.listen_address}:{settings.liveness_port}/healthz" if settings.liveness_port else None
    # no namespaces listed: every namespace (kopf's cluster-wide watches; the RBAC must be cluster-wide too)
    await kopf.operator(registry=registry, standalone=True, clusterwide=not settings.namespaces,
                        namespaces=settings.namespaces,
                        liveness_endpoint=liveness, stop_flag=stop_flag, ready_flag=ready_flag)


def main(settings: Optional[Settings] = None) -> None:
    """Blocking entry for the CLI: metrics server + kopf until SIGINT/SIGTERM."""
    settings = settings or Settings.from_env()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # kopf logs every successful handler call at INFO: one line per watch event (bench/RESULTS.md)
    logging.getLogger("kopf.objects").setLevel(logging.WARNING)
    built = build(settings)
    # /readyz (the chart's readiness probe) on the metrics port: ready once a pass has read the API server
    serve(settings.metrics_port, address=settings.listen_address, ready=built[1].readiness)
    asyncio.run(operate(settings, built=built))


class OperatorThread:
    """The operator in a background thread with its own event loop: `start()`, `stop()` (tests, tools)."""

    def __init__(self, settings: Settings, metrics: Optional[Metrics] = None):
        self.settings, self.metrics = settings, metrics
        self.stop_flag, self.ready_flag = threading.Event(), threading.Event()
        self.error: Optional[BaseException] = None
        self.thread = threading.Thread(target=self._main, name="clawkube-operator", daemon=True)

    def _main(self) -> None:
        try:
            asyncio.run(operate(self.settings, self.metrics, self.stop_flag, self.ready_flag))
        except BaseException as e:  # surfaced by start()/stop()
            self.error = e

    def start(self, timeout: float = 30) -> "OperatorThread":
        self.thread.start()
        if not self.ready_flag.wait(timeout) or self.error:
            raise RuntimeError(f"operator did not start: {self.error!r}")
        return self

    def stop(self, timeout: float = 30) -> None:
        self.stop_flag.set()
        self.thread.join(timeout)
        if self.thread.is_alive():
            raise RuntimeError("operator thread did not stop")
