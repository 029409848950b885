"""Prometheus metrics of the operator (served on CLAWKUBE_METRICS_PORT, path /metrics).

Names (labels) - the Helm chart / Grafana dashboard rely on these. `model` and `harness` are the run's spec.agent
(model "" when unset): one value per run, so they add no series; k goes up to spec.trials.
    clawkube_trials{namespace,run,state}                 gauge     trials by state: queued|running|grading|succeeded|failed
    clawkube_trial_failures_total{namespace,run,error_kind}  counter  trials failed for good, by ErrorKind
    clawkube_trial_retries_total{namespace,run,error_kind}   counter  failed attempts that were retried
    clawkube_trial_phase_seconds{phase}                  histogram queue | agent | grade | total
                                                                   | authoring | first_run | first_run_grade | summary
    clawkube_trial_score{namespace,run,category}         histogram score of each graded trial (0..1)
    clawkube_run_mean_score{namespace,run,model,harness} gauge     mean score over graded trials
    clawkube_run_pass_rate{namespace,run,model,harness}  gauge     passed / finished
    clawkube_run_pass_at_k{namespace,run,model,harness,k}   gauge  pass@k (unbiased; k = 1..trials), from the summary
    clawkube_run_pass_hat_k{namespace,run,model,harness,k}  gauge  pass^k (all k pass), from the summary
    clawkube_run_mode_mean_score{namespace,run,model,harness,mode}  gauge  EvoClawBench runs of several modes: each mode's
                                                                           mean score (failed trials count 0)
    clawkube_run_mode_ratio{namespace,run,model,harness,mode,usage,what}  gauge  a mode vs baseline; usage: end_to_end |
                                                                           execution; what: score | tokens | cost | time
    clawkube_run_budget_exhausted{namespace,run}         gauge     1 while the BudgetExhausted condition is True, else 0
    clawkube_tokens_total{namespace,run,kind}            counter   tokens of finished agent attempts: input|output|total
    clawkube_cost_usd_total{namespace,run}               counter   cost of finished agent attempts
    clawkube_tool_calls_total{namespace,run,kind}        counter   tool calls of finished agent attempts by kind: exec,
                                                                   read, write, search, web, browser, plan, agent, mcp, other
    clawkube_queue_depth{namespace,run}                  gauge     trials waiting for a slot
    clawkube_pods_in_flight{namespace,run}               gauge     trials holding a slot (agent or grading pod)
    clawkube_reconcile_seconds{namespace}                histogram one reconcile pass over a namespace
    clawkube_reconcile_errors_total{namespace,stage}     counter   failed reconcile steps (gather|act|stage)
    clawkube_s3_upload_failures_total{namespace,run}     counter   result uploads that failed (retried later)
    clawkube_pods_created_total{namespace,run,role}      counter   agent | grade pods created
"""
from __future__ import annotations

import threading
from socketserver import ThreadingMixIn
from typing import Callable, Optional
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram, make_wsgi_app

_DURATION_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, float("inf"))
# a pass over thousands of trials takes minutes (bench/RESULTS.md): the default buckets stop at 10s
_PASS_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, float("inf"))
_SCORE_BUCKETS = (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0, float("inf"))


class Metrics:
    def __init__(self, registry: CollectorRegistry = REGISTRY):
        self.registry = registry
        r = {"registry": registry}
        self.trials = Gauge("clawkube_trials", "Trials by state", ["namespace", "run", "state"], **r)
        self.failures = Counter("clawkube_trial_failures", "Trials failed for good",
                                ["namespace", "run", "error_kind"], **r)
        self.retries = Counter("clawkube_trial_retries", "Failed attempts that were retried",
                               ["namespace", "run", "error_kind"], **r)
        self.phase_seconds = Histogram("clawkube_trial_phase_seconds", "Trial phase durations", ["phase"],
                                       buckets=_DURATION_BUCKETS, **r)
        self.score = Histogram("clawkube_trial_score", "Scores of graded trials", ["namespace", "run", "category"],
                               buckets=_SCORE_BUCKETS, **r)
        run_score = ["namespace", "run", "model", "harness"]
        self.mean_score = Gauge("clawkube_run_mean_score", "Mean score over graded trials", run_score, **r)
        self.category_mean = Gauge("clawkube_category_mean_score", "Mean score per category (failed count 0)",
                                   ["namespace", "run", "category"], **r)
        self.pass_rate = Gauge("clawkube_run_pass_rate", "Passed / finished trials", run_score, **r)
        self.pass_at_k = Gauge("clawkube_run_pass_at_k", "pass@k over the run's tasks", [*run_score, "k"], **r)
        self.pass_hat_k = Gauge("clawkube_run_pass_hat_k", "pass^k over the run's tasks", [*run_score, "k"], **r)
        self.mode_mean = Gauge("clawkube_run_mode_mean_score", "Mean score of one evaluation mode of the run",
                               [*run_score, "mode"], **r)
        self.mode_ratio = Gauge("clawkube_run_mode_ratio", "An evaluation mode's score/usage over baseline's",
                                [*run_score, "mode", "usage", "what"], **r)
        self.budget_exhausted = Gauge("clawkube_run_budget_exhausted", "1 while the run's budget is spent",
                                      ["namespace", "run"], **r)
        self.tokens = Counter("clawkube_tokens", "Tokens of finished agent attempts", ["namespace", "run", "kind"], **r)
        self.cost = Counter("clawkube_cost_usd", "Cost of finished agent attempts", ["namespace", "run"], **r)
        self.tool_calls = Counter("clawkube_tool_calls", "Tool calls of finished agent attempts by kind",
                                  ["namespace", "run", "kind"], **r)
        self.queue_depth = Gauge("clawkube_queue_depth", "Trials waiting for a slot", ["namespace", "run"], **r)
        self.in_flight = Gauge("clawkube_pods_in_flight", "Trials holding a slot", ["namespace", "run"], **r)
        self.reconcile_seconds = Histogram("clawkube_reconcile_seconds", "One reconcile pass", ["namespace"],
                                           buckets=_PASS_BUCKETS, **r)
        self.reconcile_errors = Counter("clawkube_reconcile_errors", "Failed reconcile steps",
                                        ["namespace", "stage"], **r)
        self.upload_failures = Counter("clawkube_s3_upload_failures", "Failed result uploads",
                                       ["namespace", "run"], **r)
        self.pods_created = Counter("clawkube_pods_created", "Pods created", ["namespace", "run", "role"], **r)


_default: Metrics | None = None


def default_metrics() -> Metrics:
    """The process-wide metrics on prometheus_client's default registry (created once)."""
    global _default
    if _default is None:
        _default = Metrics()
    return _default


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _Quiet(WSGIRequestHandler):
    def log_message(self, *args: object) -> None:  # scrapes and probes are not worth a log line each
        pass


def serve(port: int, registry: CollectorRegistry = REGISTRY, address: str = "0.0.0.0",
          ready: Optional[Callable[[], Optional[str]]] = None) -> Optional[WSGIServer]:
    """Serve /metrics (any other path too, as prometheus_client does) and /readyz: 200 "ready", or 503 with
    what `ready()` says is missing (the readiness probe: e.g. the operator has not reached the API server)."""
    if not port:
        return None
    metrics_app = make_wsgi_app(registry)

    def app(environ, start_response):
        if environ.get("PATH_INFO") == "/readyz":
            problem = ready() if ready is not None else None
            start_response("200 OK" if problem is None else "503 Service Unavailable",
                           [("Content-Type", "text/plain; charset=utf-8")])
            return [f"{problem or 'ready'}\n".encode()]
        return metrics_app(environ, start_response)

    httpd = make_server(address, port, app, _Server, handler_class=_Quiet)
    threading.Thread(target=httpd.serve_forever, name="clawkube-metrics", daemon=True).start()
    return httpd
