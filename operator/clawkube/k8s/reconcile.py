"""One reconcile pass over every watched namespace: gather -> fair shares -> decide -> act.

Watched namespaces: `Settings.namespaces`, or, when that is empty (cluster-wide), every namespace that holds a
BenchmarkRun at the start of the pass."""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable, Optional

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from ..results.model import TOOL_KINDS, ErrorKind
from ..settings import Settings
from . import conditions as C
from . import stores
from .act import Actuator
from .actions import PatchRun
from .decide_run import RunContext, decide_run, demand, key
from .gather import gather
from .kube import Kube
from .metrics import Metrics
from .observe import RunObs
from .schedule import fair_shares, in_flight

log = logging.getLogger("clawkube.operator")


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


@dataclass
class PassReport:
    runs: int = 0
    actions: int = 0
    failures: int = 0
    seconds: float = 0.0


class Reconciler:
    def __init__(self, kube: Kube, settings: Settings, metrics: Metrics, clock: Callable[[], datetime] = utcnow):
        self.kube, self.settings, self.metrics, self.clock = kube, settings, metrics, clock
        self.last_pass: float = 0.0  # time.monotonic() of the last completed pass (liveness)
        self.last_read_ok: float = 0.0  # ... of the last pass that read every served namespace (readiness)
        self.last_read_error: str = ""
        self._read_error = ""
        self._seen: set[tuple[str, str]] = set()  # (namespace, run) with gauges
        # per run: the (metric attribute, label values) of its score gauges, whose labels vary (model, k, category)
        self._series: dict[tuple[str, str], set[tuple[str, tuple[str, ...]]]] = {}

    def context(self, run: RunObs, now: datetime) -> RunContext:
        s = self.settings
        return RunContext(now=now, artifact_root=stores.root_uri(stores.resolve(run.spec, s)),
                          pending_timeout=s.pending_timeout_seconds, agent_grace=s.agent_grace_seconds,
                          grade_grace=s.grade_grace_seconds, slack=s.deadline_slack_seconds,
                          upload_retry_seconds=s.upload_retry_seconds)

    def run_once(self) -> PassReport:
        started = time.monotonic()
        now = self.clock()
        report = PassReport()
        runs: list[RunObs] = []
        unread: set[str] = set()
        self._read_error = ""
        for ns in self._namespaces(unread):
            try:
                runs += gather(self.kube, ns)
            except (ApiException, HTTPError) as e:  # API error, or the apiserver unreachable
                unread.add(ns)
                self._read_error = f"reading namespace {ns}: {getattr(e, 'reason', None) or e}"
                self.metrics.reconcile_errors.labels(ns, "gather").inc()
                log.warning("gather %s failed: %s", ns, getattr(e, "reason", None) or e)
        cap = self.settings.max_concurrent_pods
        free = None if cap == 0 else max(0, cap - sum(in_flight(r.trials) for r in runs))
        shares = fair_shares(free, [demand(r) for r in runs])
        for run in runs:
            t0 = time.monotonic()
            actions = decide_run(run, self.context(run, now), shares.get(key(run), 0))
            report.failures += Actuator(self.kube, self.settings, self.metrics, now).execute(run, actions)
            report.actions += len(actions)
            report.runs += 1
            self._gauges(run, actions)
            self.metrics.reconcile_seconds.labels(run.namespace).observe(time.monotonic() - t0)
        self._forget_gauges({(r.namespace, r.name) for r in runs} | {k for k in self._seen if k[0] in unread})
        report.seconds = time.monotonic() - started
        self.last_pass = time.monotonic()
        if self._read_error:
            self.last_read_error = self._read_error
        else:
            self.last_read_ok, self.last_read_error = self.last_pass, ""
        return report

    def readiness(self) -> Optional[str]:
        """None when ready (a recent pass read every served namespace), else what is wrong (the /readyz body)."""
        if not self.last_read_ok:
            return ("not ready: no pass has read the Kubernetes API yet" +
                    (f" ({self.last_read_error})" if self.last_read_error else " (starting)"))
        age = time.monotonic() - self.last_read_ok
        if age > 10 * self.settings.requeue_seconds + 60:
            return f"not ready: no successful read of the Kubernetes API for {age:.0f}s ({self.last_read_error})"
        return None

    def _namespaces(self, unread: set[str]) -> list[str]:
        if self.settings.namespaces:
            return list(self.settings.namespaces)
        try:
            return sorted(self.kube.run_namespaces())
        except (ApiException, HTTPError) as e:  # keep every gauge: nothing was read
            unread.update(ns for ns, _ in self._seen)
            self._read_error = f"listing BenchmarkRuns: {getattr(e, 'reason', None) or e}"
            self.metrics.reconcile_errors.labels("*", "gather").inc()
            log.warning("listing BenchmarkRuns cluster-wide failed: %s", getattr(e, "reason", None) or e)
            return []

    def _forget_gauges(self, present: set[tuple[str, str]]) -> None:
        """Drop the gauge series of runs that were deleted."""
        m = self.metrics
        for ns, name in self._seen - present:
            for state in ("queued", "running", "grading", "succeeded", "failed"):
                _remove(m.trials, ns, name, state)
            for g in (m.queue_depth, m.in_flight, m.budget_exhausted):
                _remove(g, ns, name)
            for attr, labels in self._series.pop((ns, name), set()):
                _remove(getattr(m, attr), *labels)
        self._seen = present

    def _gauges(self, run: RunObs, actions: list) -> None:
        status = next((a.status for a in reversed(actions) if isinstance(a, PatchRun)), run.status)
        m, ns, name = self.metrics, run.namespace, run.name
        c = status.counts
        for state in ("queued", "running", "grading", "succeeded", "failed"):
            m.trials.labels(ns, name, state).set(getattr(c, state))
        m.queue_depth.labels(ns, name).set(c.queued)
        m.in_flight.labels(ns, name).set(c.running + c.grading)
        m.budget_exhausted.labels(ns, name).set(1 if C.is_true(status.conditions, C.BUDGET_EXHAUSTED) else 0)
        series = score_series(ns, name, run.spec.agent.model or "", run.spec.agent.harness, status.mean_score,
                              status.pass_rate, status.summary or {})
        for attr, labels in self._series.get((ns, name), set()) - series.keys():  # e.g. the model changed
            _remove(getattr(m, attr), *labels)
        for (attr, labels), value in series.items():
            getattr(m, attr).labels(*labels).set(value)
        self._series[(ns, name)] = set(series)
        _zero_counters(m, ns, name, {t.category for t in status.tasks})


def score_series(ns: str, run: str, model: str, harness: str, mean_score: Optional[float],
                 pass_rate: Optional[float], summary: dict[str, Any]) -> dict[tuple[str, tuple[str, ...]], float]:
    """A run's score gauges as {(Metrics attribute, label values): value}; unknown values (None) are left out."""
    who = (ns, run, model, harness)
    out: dict[tuple[str, tuple[str, ...]], float] = {}
    if mean_score is not None:
        out[("mean_score", who)] = mean_score
    if pass_rate is not None:
        out[("pass_rate", who)] = pass_rate
    overall = summary.get("overall") or {}
    for attr in ("pass_at_k", "pass_hat_k"):  # the summary's field names are the Metrics attributes
        for k, value in (overall.get(attr) or {}).items():
            if value is not None:
                out[(attr, (*who, str(k)))] = value
    for cat, metrics in (summary.get("by_category") or {}).items():
        if metrics.get("mean_score") is not None:
            out[("category_mean", (ns, run, cat))] = metrics["mean_score"]
    for mode, ms in (summary.get("by_mode") or {}).items():  # EvoClawBench: several modes in one run
        if (ms.get("metrics") or {}).get("mean_score") is not None:
            out[("mode_mean", (*who, mode))] = ms["metrics"]["mean_score"]
        for usage, field in (("end_to_end", "vs_baseline"), ("execution", "vs_baseline_execution")):
            for what, value in (ms.get(field) or {}).items():
                if value is not None:
                    out[("mode_ratio", (*who, mode, usage, what))] = value
    return out


def _zero_counters(m: Metrics, ns: str, run: str, categories: set[str]) -> None:
    """Create every counter series of a run at 0 from its first pass (labels() without inc()), so that rates and
    ratios over runs without failures, tokens or upload errors read 0 instead of "no data", and a ratio such as
    failures / (failures + scores) has both sides for every run (Grafana dashboard, PrometheusRule)."""
    for kind in ErrorKind:
        m.failures.labels(ns, run, kind.value)
        m.retries.labels(ns, run, kind.value)
    for kind in ("input", "output", "total"):
        m.tokens.labels(ns, run, kind)
    for kind in TOOL_KINDS:
        m.tool_calls.labels(ns, run, kind)
    m.cost.labels(ns, run)
    m.upload_failures.labels(ns, run)
    for role in ("agent", "grade"):
        m.pods_created.labels(ns, run, role)
    for cat in categories:
        m.score.labels(ns, run, cat)
    for stage in ("gather", "act"):
        m.reconcile_errors.labels(ns, stage)


def _remove(gauge, *labels: str) -> None:
    try:
        gauge.remove(*labels)
    except KeyError:  # never set
        pass
