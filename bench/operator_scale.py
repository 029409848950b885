"""How far the operator scales: BenchmarkRuns of N TaskTrials against a real kube-apiserver + etcd (no kubelet).

For each size N (fresh control plane, fresh operator process):
- the operator runs as its own process (`python -m clawkube.k8s`, CLAWKUBE_* settings) so its RSS is measurable;
- a moto S3 server (its own process) takes the result uploads;
- `fake_kubelet.FakeKubelet` patches each agent pod, then each grading pod, to Succeeded with a termination message;
- figures: seconds from apply to all agent pods created (= all trials scheduled) and to the run Succeeded;
  reconcile pass p50/p99 (the operator's `clawkube_reconcile_seconds`), the operator's reaction latency seen from
  outside (agent pod Succeeded -> its grading pod created), apiserver requests of the operator per trial (audit
  log, by user agent; writes = create/update/patch/delete), `apiserver_request_total` by verb (all clients), and
  the operator's RSS (sampled; VmHWM = peak).

    python bench/operator_scale.py --sizes 1000,5000 [--tasks 10] [--requeue 5] [--json OUT.json]

The test kube-apiserver 1.20.2 may crash now and then (reflect2 bug; see tests/k8s/build-apiserver.sh): a watchdog
restarts it on the same etcd and the restarts are reported. Pass --apiserver to run a specific binary.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_kubelet import FakeKubelet  # noqa: E402
from request_counts import (AUDIT_POLICY, audit_file_counts, histogram, histogram_quantile, parse_metrics,  # noqa: E402
                            request_totals_by_verb, writes_reads)
from tests.polling import retry  # noqa: E402
from tests.cluster.controlplane import ApiserverWatchdog as Watchdog, ControlPlane, apiserver_binary, free_port  # noqa: E402,E501

G, V = "clawkube.io", "v1alpha1"
NS = "bench"

_retry = functools.partial(retry, attempts=60)  # servers started under the bench's load: up to 30 s


def task_md(task_id: str) -> str:
    return f"""---
id: {task_id}
name: Task {task_id}
category: bench
timeout_seconds: 60
---

## Prompt

Write `out.txt` containing the word hello.

## Workspace Path

ws-{task_id}

## Automated Checks

```python
import os
def grade(transcript, workspace_path):
    ok = os.path.isfile(os.path.join(workspace_path, "out.txt"))
    return {{"file_created": float(ok), "overall_score": float(ok)}}
```
"""


def run_manifest(name: str, tasks: int, trials: int, bucket: str, endpoint: str) -> dict:
    files = []
    for i in range(tasks):
        files += [{"name": f"t{i:03d}.md", "content": task_md(f"t{i:03d}")},
                  {"name": f"ws-t{i:03d}/exec/README.txt", "content": "hello\n"}]
    return {"apiVersion": f"{G}/{V}", "kind": "BenchmarkRun", "metadata": {"name": name},
            "spec": {"tasks": {"inline": files}, "agent": {"harness": "nop"}, "trials": trials,
                     "parallelism": tasks * trials,
                     "artifacts": {"bucket": bucket, "prefix": "bench", "endpoint": endpoint}}}


def utc_stamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class RssSampler:
    def __init__(self, pid: int, every: float = 0.5):
        self.pid, self.every = pid, every
        self.samples: list[tuple[float, int]] = []  # (monotonic, kB)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def status(self, key: str) -> Optional[int]:
        try:
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith(key + ":"):
                    return int(line.split()[1])
        except OSError:
            return None
        return None

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            kb = self.status("VmRSS")
            if kb is not None:
                self.samples.append((time.monotonic(), kb))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


def _get(url: str, context=None, timeout: float = 30) -> str:
    with urllib.request.urlopen(url, context=context, timeout=timeout) as r:
        return r.read().decode()


class S3Server:
    """moto's S3 server as its own process (so it does not share the benchmark's GIL)."""

    def __init__(self, log: Path):
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                                     stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)
        _retry(lambda: _get(self.endpoint + "/", timeout=2))

    def bucket(self, name: str) -> str:
        import boto3

        boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1", aws_access_key_id="test",
                     aws_secret_access_key="test").create_bucket(Bucket=name)
        return name

    def stop(self) -> None:
        os.killpg(self.proc.pid, signal.SIGTERM)
        self.proc.wait(10)


def start_operator(kubeconfig: Path, metrics_port: int, requeue: float, log: Path) -> subprocess.Popen:
    env = {**os.environ, "CLAWKUBE_NAMESPACES": NS, "CLAWKUBE_KUBECONFIG": str(kubeconfig),
           "CLAWKUBE_METRICS_PORT": str(metrics_port), "CLAWKUBE_LIVENESS_PORT": "0",
           "CLAWKUBE_REQUEUE_SECONDS": str(requeue),
           "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1"}
    proc = subprocess.Popen([sys.executable, "-m", "clawkube.k8s"], env=env, stdout=log.open("wb"),
                            stderr=subprocess.STDOUT, start_new_session=True)
    _retry(lambda: _get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=2))
    return proc


def stop_process(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def setup_client(kubeconfig: Path):
    from kubernetes import client, config

    api = config.new_client_from_config(str(kubeconfig))
    api.user_agent = "clawkube-bench-setup"
    return api, client.CoreV1Api(api), client.CustomObjectsApi(api)


def apply_crds(kubeconfig: Path) -> None:
    kc = str(kubeconfig)
    _retry(lambda: subprocess.run(["kubectl", "--kubeconfig", kc, "apply", "-f", str(REPO / "crds")],
                                  check=True, capture_output=True), attempts=10)
    subprocess.run(["kubectl", "--kubeconfig", kc, "wait", "--for=condition=Established", "--timeout=60s",
                    "crd/benchmarkruns.clawkube.io", "crd/tasktrials.clawkube.io"], check=True, capture_output=True)


def measure(size: int, tasks: int, requeue: float, s3: S3Server, apiserver: Path, deadline: float,
            workdir: Path) -> dict:
    trials_per_task = max(1, size // tasks)
    tasks = max(1, size // trials_per_task)
    n = tasks * trials_per_task
    state = workdir / f"cp-{n}"
    (state / "logs").mkdir(parents=True, exist_ok=True)
    (state / "audit-policy.yaml").write_text(AUDIT_POLICY)
    audit_log = state / "logs" / "audit.log"
    cp = ControlPlane.start(state=state, apiserver=apiserver, extra_apiserver_args=[
        f"--audit-policy-file={state / 'audit-policy.yaml'}", f"--audit-log-path={audit_log}",
        "--audit-log-format=json", "--audit-log-maxsize=2000", "--audit-log-maxbackup=10"])
    dog = Watchdog(cp)
    op: Optional[subprocess.Popen] = None
    kubelet: Optional[FakeKubelet] = None
    rss: Optional[RssSampler] = None
    until = "~"
    fig: dict = {"trials": n, "tasks": tasks, "trials_per_task": trials_per_task, "requeue_seconds": requeue}
    try:
        apply_crds(cp.kubeconfig)
        _, core, custom = setup_client(cp.kubeconfig)
        _retry(lambda: core.create_namespace({"metadata": {"name": NS}}))
        _retry(lambda: core.create_namespaced_service_account(NS, {"metadata": {"name": "default"}}))
        bucket = s3.bucket(f"bench-{n}-{int(time.time())}")
        metrics_port = free_port()
        op = start_operator(cp.kubeconfig, metrics_port, requeue, state / "logs" / "operator.log")
        rss = RssSampler(op.pid)
        kubelet = FakeKubelet(str(cp.kubeconfig), NS).start()
        time.sleep(2)  # the operator's watches are up
        idle_rss = rss.status("VmRSS")
        metrics_before = request_totals_by_verb(parse_metrics(_get(f"{cp.server}/metrics", cp.ssl_context())))
        since = utc_stamp()
        t0 = time.monotonic()
        _retry(lambda: custom.create_namespaced_custom_object(G, V, NS, "benchmarkruns",
                                                              run_manifest("scale", tasks, trials_per_task, bucket,
                                                                           s3.endpoint)))
        t_sched = t_done = None
        rss_sched = None
        status: dict = {}
        last_poll = 0.0
        while time.monotonic() - t0 < deadline:
            if op.poll() is not None:
                raise RuntimeError(f"operator exited with {op.returncode}; see {state / 'logs' / 'operator.log'}")
            if t_sched is None and kubelet.count("agent") >= n:
                t_sched, rss_sched = time.monotonic() - t0, rss.status("VmRSS")
            if time.monotonic() - last_poll > 2:
                last_poll = time.monotonic()
                try:
                    status = custom.get_namespaced_custom_object(G, V, NS, "benchmarkruns", "scale").get("status", {})
                except Exception:  # apiserver restarting
                    pass
                if status.get("phase") in ("Succeeded", "Failed"):
                    t_done = time.monotonic() - t0
                    break
            time.sleep(0.25)
        fig.update({
            "finished": t_done is not None, "run_phase": status.get("phase"), "counts": status.get("counts"),
            "seconds_to_all_scheduled": round(t_sched, 1) if t_sched else None,
            "seconds_to_all_finished": round(t_done, 1) if t_done else None,
        })
        # the operator's own view
        om = parse_metrics(_get(f"http://127.0.0.1:{metrics_port}/metrics"))
        h = histogram(om, "clawkube_reconcile_seconds")
        fig["reconcile_passes"] = int(h["count"])
        fig["reconcile_seconds"] = {"p50": round(histogram_quantile(0.5, h["buckets"]), 3),
                                    "p99": round(histogram_quantile(0.99, h["buckets"]), 3),
                                    "mean": round(h["sum"] / h["count"], 3) if h["count"] else None,
                                    "top_finite_bucket": max((b for b, _ in h["buckets"] if b != float("inf")),
                                                             default=None),
                                    "passes_over_top_bucket": int(h["count"] - max(
                                        (c for b, c in h["buckets"] if b != float("inf")), default=0))}
        lat = sorted(kubelet.reaction_latencies())
        if lat:
            fig["reaction_seconds"] = {"p50": round(statistics.median(lat), 3),
                                       "p99": round(lat[min(len(lat) - 1, int(0.99 * len(lat)))], 3),
                                       "max": round(lat[-1], 3), "samples": len(lat)}
        fig["rss_mib"] = {"idle": round((idle_rss or 0) / 1024, 1),
                          "at_all_scheduled": round((rss_sched or 0) / 1024, 1),
                          "at_end": round((rss.status("VmRSS") or 0) / 1024, 1),
                          "peak_vmhwm": round((rss.status("VmHWM") or 0) / 1024, 1)}
        until = utc_stamp()  # the audit counts cover the same window as apiserver_request_total
        try:
            after = request_totals_by_verb(parse_metrics(_get(f"{cp.server}/metrics", cp.ssl_context())))
            fig["apiserver_request_total_delta"] = {v: after[v] - metrics_before.get(v, 0) for v in sorted(after)
                                                    if after[v] - metrics_before.get(v, 0)}
        except Exception as e:  # noqa: BLE001 (reported, not fatal)
            fig["apiserver_request_total_delta"] = f"unavailable: {e}"
        fig["loadavg_at_end"] = os.getloadavg()
        fig["fake_kubelet"] = {"pods_driven": len(kubelet.done), "patch_errors": kubelet.patch_errors,
                               "watch_restarts": kubelet.watch_restarts}
    finally:
        if kubelet is not None:
            kubelet.stop()
        if rss is not None:
            rss.stop()
        if op is not None:
            stop_process(op)
        dog.stop()
        fig["apiserver_restarts"] = dog.restarts
        cp.stop()
    counts = audit_file_counts(audit_log, since, until)
    op_counts = counts.get("operator")
    if op_counts:
        w, r = writes_reads(op_counts)
        fig["operator_requests"] = {"writes": w, "reads": r, "writes_per_trial": round(w / n, 2),
                                    "reads_per_trial": round(r / n, 3),
                                    "by_verb_resource": {k: v for k, v in sorted(op_counts.items()) if " " in k}}
    fig["other_clients_requests"] = {c: dict(zip(("writes", "reads"), writes_reads(v)))
                                     for c, v in counts.items() if c != "operator"}
    return fig


def growth(small: dict, large: dict) -> dict:
    """How each figure grows from the smaller to the larger size, against the growth in trials."""
    size = large["trials"] / small["trials"]

    def ratio(path: list[str]) -> Optional[float]:
        a, b = small, large
        for p in path:
            a, b = (a or {}).get(p), (b or {}).get(p)
        if not isinstance(a, (int, float)) or not isinstance(b, (int, float)) or not a:
            return None
        return round(b / a, 2)

    out = {"trials_x": round(size, 2)}
    for label, path in (("seconds_to_all_scheduled", ["seconds_to_all_scheduled"]),
                        ("seconds_to_all_finished", ["seconds_to_all_finished"]),
                        ("reconcile_p50", ["reconcile_seconds", "p50"]),
                        ("reconcile_p99", ["reconcile_seconds", "p99"]),
                        ("reconcile_mean", ["reconcile_seconds", "mean"]),
                        ("reaction_p50", ["reaction_seconds", "p50"]),
                        ("operator_writes", ["operator_requests", "writes"]),
                        ("operator_reads", ["operator_requests", "reads"]),
                        ("writes_per_trial", ["operator_requests", "writes_per_trial"]),
                        ("rss_peak", ["rss_mib", "peak_vmhwm"]),
                        ("rss_peak_over_idle", None)):
        if path is None:
            a = (small.get("rss_mib", {}).get("peak_vmhwm", 0) - small.get("rss_mib", {}).get("idle", 0))
            b = (large.get("rss_mib", {}).get("peak_vmhwm", 0) - large.get("rss_mib", {}).get("idle", 0))
            out[label] = round(b / a, 2) if a > 0 else None
        else:
            out[label] = ratio(path)
    return out


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,5000", help="comma-separated numbers of TaskTrials")
    ap.add_argument("--tasks", type=int, default=10, help="tasks per run (trials per task = size / tasks)")
    ap.add_argument("--requeue", type=float, default=5.0, help="CLAWKUBE_REQUEUE_SECONDS")
    ap.add_argument("--deadline", type=float, default=3600, help="give up on a size after this many seconds")
    ap.add_argument("--apiserver", help="kube-apiserver executable (default: as tests/cluster/controlplane.py picks)")
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument("--keep", action="store_true", help="keep the work folder (logs, audit log)")
    args = ap.parse_args(argv)

    reason = ControlPlane.unavailable_reason()
    if reason:
        print(f"cannot run: {reason}", file=sys.stderr)
        return 2
    apiserver = Path(args.apiserver) if args.apiserver else apiserver_binary()
    work = Path(tempfile.mkdtemp(prefix="clawkube-bench-operator-"))
    s3 = S3Server(work / "moto.log")
    results: list[dict] = []
    try:
        for size in [int(s) for s in args.sizes.split(",")]:
            fig = measure(size, args.tasks, args.requeue, s3, apiserver, args.deadline, work)
            results.append(fig)
            print(json.dumps(fig, indent=1), flush=True)
    finally:
        s3.stop()
        if not args.keep:
            import shutil

            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"work folder: {work}", file=sys.stderr)
    out: dict = {"apiserver": str(apiserver), "sizes": results}
    if len(results) >= 2:
        out["growth"] = growth(results[0], results[-1])
        print("growth " + json.dumps(out["growth"]))
    for f in results:
        opr = f.get("operator_requests", {})
        print(f"{f['trials']} trials: scheduled {f.get('seconds_to_all_scheduled')}s, finished "
              f"{f.get('seconds_to_all_finished')}s, reconcile p50/p99 {f['reconcile_seconds']['p50']}/"
              f"{f['reconcile_seconds']['p99']}s, writes/trial {opr.get('writes_per_trial')}, "
              f"reads/trial {opr.get('reads_per_trial')}, RSS peak {f['rss_mib']['peak_vmhwm']} MiB, "
              f"apiserver restarts {f['apiserver_restarts']}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
