"""End to end on the real single-node cluster (tests/cluster/up.sh): CRDs, the operator as a host process, real agent
and grading pods of the locally built images, a moto S3 behind a proxy the test can take down, a real Prometheus
scraping the operator, and the chart's Grafana dashboard + alert rules evaluated against it.

    runs     oracle / nop / broken (script agent exiting 3) over WildClawBench and EvoClawBench sample tasks from a
             ConfigMap (the task files and their fixtures)
    chaos    an oracle run during which the test deletes a running agent pod, SIGKILLs the operator and restarts
             it, and makes S3 refuse connections for a while; every trial must be accounted for exactly once
    modes    baseline, PreSkill and PostSkill of an EvoClawBench task in one run: every stage a real pod, each
             started only after the one before it terminated; skills handed over through S3
    metrics  every PromQL query of charts/clawkube/dashboards/clawkube.json returns data; every alert rule of the
             chart's PrometheusRule loads and evaluates (ClawkubeOperatorDown fired while the operator was dead)

The module's fixtures share one namespace, S3, operator and Prometheus; the tests run in file order and the metrics
test reads what the runs left (its fixtures run them when it is selected alone).
Set CLAWKUBE_E2E_KEEP=1 to keep the namespace (logs: the folder printed at the start).
"""
from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Optional

import pytest

from tests.e2e import promql
from tests.e2e.operator_proc import OperatorProcess
from tests.e2e.prometheus import Prometheus, ensure_binary, render_config
from tests.e2e.namespace import wait_run_finished
from tests.e2e.recorder import Recorder
from tests.e2e.s3 import ACCESS, REGION, S3Outage, free_port
from tests.polling import wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
NODE_IP = "10.88.0.1"  # this machine's address on the pod bridge (docs/cluster.md)
G, V = "clawkube.io", "v1alpha1"
TASKS = ["wild-csv-totals", "wild-log-errors", "evo-word-stats", "evo-todo-pipeline"]
SERVICE_TASK = None  # no sample declares mock services (CLAW-Eval runs its own from a checkout)
BUCKET, PREFIX = "results", "e2e"
RELEASE, RELEASE_NS = "bench", "clawkube-system"  # how the chart would be installed (job / namespace of `up`)
SCRAPE = "1s"
DASHBOARD = REPO / "charts" / "clawkube" / "dashboards" / "clawkube.json"


# ---------------------------------------------------------------- small helpers

def log(msg: str) -> None:
    print(f"[e2e {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def ts(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def task_configmap_data(task_ids: list[str]) -> dict[str, str]:
    """binaryData of a task-source ConfigMap: each sample's task file and its fixtures folder (`tasks/<format>/
    fixtures/<task>/`, which the task names relative to its own folder), keys the paths relative to that folder with
    `/` as `__` (the staging convention)."""
    data = {}
    for t in task_ids:
        task_files = sorted((REPO / "tasks").glob(f"*/{t}.md"))
        assert len(task_files) == 1, f"sample task {t}: {task_files}"
        folder = task_files[0].parent
        fixtures = sorted(p for p in (folder / "fixtures" / t).rglob("*") if p.is_file())
        assert fixtures, f"sample task {t} has no fixtures under {folder / 'fixtures' / t}"
        for f in [task_files[0], *fixtures]:
            rel = f.relative_to(folder).as_posix()
            data[rel.replace("/", "__")] = base64.b64encode(f.read_bytes()).decode()
    return data


# ---------------------------------------------------------------- the stack

@dataclass
class Stack:
    kubeconfig: Path
    ns: str
    api: Any
    s3: S3Outage
    op: OperatorProcess
    prom: Prometheus
    recorder: Recorder
    logs: Path
    rules: list[promql.Query]
    up_job: str
    notes: dict[str, Any] = field(default_factory=dict)  # what the tests observed, for the metrics test

    @property
    def core(self):
        from kubernetes import client
        return client.CoreV1Api(self.api)

    @property
    def custom(self):
        from kubernetes import client
        return client.CustomObjectsApi(self.api)

    def run(self, name: str) -> dict[str, Any]:
        return self.custom.get_namespaced_custom_object(G, V, self.ns, "benchmarkruns", name)

    def trials(self, run: str) -> list[dict[str, Any]]:
        return self.custom.list_namespaced_custom_object(G, V, self.ns, "tasktrials",
                                                         label_selector=f"clawkube.io/run={run}")["items"]

    def pods(self, run: str, role: Optional[str] = None) -> list[Any]:
        sel = f"clawkube.io/run={run}" + (f",clawkube.io/role={role}" if role else "")
        return self.core.list_namespaced_pod(self.ns, label_selector=sel).items

    def create_run(self, name: str, harness: str, *, trials: int = 1, parallelism: int = 4,
                   args: Optional[dict] = None, retry: Optional[dict] = None, ids: Optional[list[str]] = None,
                   tasks: Optional[dict] = None, modes: Optional[list[str]] = None) -> None:
        spec: dict[str, Any] = {
            "tasks": tasks or {"configMap": "tasks"}, "agent": {"harness": harness, **({"args": args} if args else {})},
            "trials": trials, "parallelism": parallelism, "resources": {"cpu": "200m", "memory": "256Mi"},
            "artifacts": {"bucket": BUCKET, "prefix": PREFIX, "endpoint": self.s3.endpoint, "region": REGION,
                          "credentialsSecret": "s3"}}
        if retry:
            spec["retry"] = retry
        if ids:
            spec["selector"] = {"ids": ids}
        if modes:
            spec["modes"] = modes
        manifest = {"apiVersion": f"{G}/{V}", "kind": "BenchmarkRun", "metadata": {"name": name}, "spec": spec}
        _kubectl(self.kubeconfig, "apply", "-n", self.ns, "-f", "-", input=json.dumps(manifest))  # as a user would

    def wait_finished(self, name: str, timeout: float) -> dict[str, Any]:
        return wait_run_finished(self.run, name, timeout, self.op, log)

    def s3_json(self, key: str) -> Any:
        return json.loads(self.s3.client().get_object(Bucket=BUCKET, Key=key)["Body"].read())


def _kubectl(kubeconfig: Path, *args: str, input: Optional[str] = None) -> str:
    p = subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), *args], input=input, capture_output=True,
                       text=True, timeout=120)
    if p.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)}: {p.stderr}")
    return p.stdout


@pytest.fixture(scope="session")
def fixed_apiserver() -> Optional[Path]:
    """A reflect2-fixed kube-apiserver for the cluster (the shared build crashes on custom-resource writes).
    A running cluster that already runs one (of any build key) is used as it is; otherwise the fixed build of
    tests/cluster/build-apiserver.sh is built when missing (~6-9 min), so that up.sh starts it."""
    from tests.cluster.cluster import running_state_dir, unavailable_reason
    from tests.cluster.controlplane import FIXED_CACHE, fixed_apiserver_dir

    if os.environ.get("CLAWKUBE_CLUSTER_KUBECONFIG"):
        return None  # someone else's cluster: their choice
    if unavailable_reason():
        return None  # no cluster here at all: the `cluster` fixture skips (or fails) with the reason
    state = running_state_dir()
    if state is not None:
        running = Path(_running_apiserver(state))
        if running.is_relative_to(FIXED_CACHE):
            return running
        pytest.skip(f"the running cluster's kube-apiserver is {running}, not a reflect2-fixed build: restart it "
                    f"(tests/cluster/build-apiserver.sh; tests/cluster/down.sh {state}; tests/cluster/up.sh {state})")
    found = fixed_apiserver_dir()
    if found is None:
        if os.geteuid() != 0:
            pytest.skip("no reflect2-fixed kube-apiserver and not root to build it (tests/cluster/build-apiserver.sh)")
        log("building the reflect2-fixed kube-apiserver (tests/cluster/build-apiserver.sh, ~6-9 min)")
        p = subprocess.run(["sh", str(REPO / "tests" / "cluster" / "build-apiserver.sh")], capture_output=True,
                           text=True, timeout=1800)
        found = fixed_apiserver_dir()
        if p.returncode != 0 or found is None:
            pytest.skip(f"cannot build the reflect2-fixed kube-apiserver: {(p.stderr or p.stdout)[-800:]}")
    return found / "kube-apiserver"


def _running_apiserver(state: Path) -> str:
    """The binary the cluster's apiserver supervisor runs (its command line: bash -c LOOP supervise-apiserver BIN ...)."""
    pid = (state / "apiserver.pid").read_text().strip()
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    return next((a.decode() for a in argv if a.endswith(b"kube-apiserver")), "")


def _helm_rules() -> tuple[list[promql.Query], list[dict[str, Any]]]:
    helm_dir = Path(os.environ.get("CLAWKUBE_HELM_DIR", promql.HELM_DIR))
    if not (helm_dir / "helm").exists():
        subprocess.run(["sh", str(REPO / "tools" / "get-helm.sh"), str(helm_dir)], capture_output=True, timeout=300)
    try:
        return promql.rule_queries(promql.render_rules(REPO / "charts" / "clawkube", RELEASE, RELEASE_NS))
    except (FileNotFoundError, RuntimeError) as e:
        log(f"alert rules not checked: {e}")
        return [], []


@pytest.fixture(scope="module")
def stack(fixed_apiserver, cluster, cluster_images, cluster_api, tmp_path_factory):
    if fixed_apiserver is not None and cluster.state is not None:
        running = _running_apiserver(cluster.state)
        if running != str(fixed_apiserver):  # started before the fixed build existed
            pytest.skip(f"the running cluster's kube-apiserver is {running}, not the reflect2-fixed {fixed_apiserver}: "
                        f"restart it (tests/cluster/down.sh {cluster.state}; tests/cluster/up.sh {cluster.state})")
    prom_bin = ensure_binary()
    if prom_bin is None:
        pytest.skip("no prometheus binary and the Debian package `prometheus` cannot be installed")
    logs = tmp_path_factory.mktemp("e2e")
    log(f"logs in {logs}")
    kc = cluster.kubeconfig
    _kubectl(kc, "apply", "-f", str(REPO / "crds"))
    _kubectl(kc, "wait", "--for=condition=Established", "--timeout=60s",
             "crd/benchmarkruns.clawkube.io", "crd/tasktrials.clawkube.io")

    from kubernetes import client
    core = client.CoreV1Api(cluster_api)
    ns = f"e2e-{uuid.uuid4().hex[:6]}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
    wait_for("the namespace's default service account",
             lambda: core.list_namespaced_service_account(ns, field_selector="metadata.name=default").items, 60)
    s3 = S3Outage.start(NODE_IP)
    s3.client().create_bucket(Bucket=BUCKET)
    s3.client().put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    core.create_namespaced_secret(ns, {"metadata": {"name": "s3"}, "stringData": {
        "AWS_ACCESS_KEY_ID": ACCESS["aws_access_key_id"], "AWS_SECRET_ACCESS_KEY": ACCESS["aws_secret_access_key"]}})
    core.create_namespaced_config_map(ns, {"metadata": {"name": "tasks"}, "binaryData": task_configmap_data(TASKS)})

    rules, groups = _helm_rules()
    up_job = next((m.group(1) for q in rules for m in [re.search(r'up\{job="([^"]+)"', q.expr)] if m),
                  f"{RELEASE}-clawkube-metrics")
    port = free_port("127.0.0.1")
    op = OperatorProcess({
        "KUBECONFIG": str(kc), "CLAWKUBE_NAMESPACES": ns, "CLAWKUBE_METRICS_PORT": str(port),
        "CLAWKUBE_LIVENESS_PORT": "0", "CLAWKUBE_LISTEN_ADDRESS": "127.0.0.1",
        "CLAWKUBE_AGENT_IMAGE": cluster_images["agent"], "CLAWKUBE_GRADER_IMAGE": cluster_images["grader"],
        "CLAWKUBE_IMAGE_PULL_POLICY": "Never", "CLAWKUBE_REQUEUE_SECONDS": "1", "CLAWKUBE_UPLOAD_RETRY_SECONDS": "2",
        "CLAWKUBE_S3_ATTEMPTS": "2", "AWS_ACCESS_KEY_ID": ACCESS["aws_access_key_id"],
        "AWS_SECRET_ACCESS_KEY": ACCESS["aws_secret_access_key"], "PYTHONUNBUFFERED": "1",
    }, logs / "operator.log", port)
    prom = Prometheus(prom_bin, logs / "prometheus", free_port("127.0.0.1"))
    recorder = Recorder(cluster_api, ns).start()
    try:
        op.start()
        prom.start(render_config(interval=SCRAPE, job=up_job, namespace=RELEASE_NS, target=f"127.0.0.1:{port}",
                                 rules=logs / "prometheus" / "rules.yml"), groups)
        yield Stack(kc, ns, cluster_api, s3, op, prom, recorder, logs, rules, up_job)
    finally:
        recorder.stop()
        op.stop()
        prom.stop()
        s3.stop()
        if os.environ.get("CLAWKUBE_E2E_KEEP") != "1":
            core.delete_namespace(ns)


# ---------------------------------------------------------------- checks shared by the tests

def _volumes_configmaps(pod) -> set[str]:
    return {v.config_map.name for v in pod.spec.volumes or [] if v.config_map is not None}


def check_pods_and_firewall(st: Stack, run: str, trials: list[dict[str, Any]]) -> None:
    """Per trial and attempt: the agent pod mounts only the agent bundle, the grading pod only the grading
    bundle, and the grading pod was created after the agent pod's main container had terminated."""
    pods = {p.metadata.name: p for p in st.pods(run)}
    for t in trials:
        spec, status, name = t["spec"], t["status"], t["metadata"]["name"]
        attempt = status["attempt"]
        agent = pods.get(f"{name}-a{attempt}-agent")
        assert agent is not None, f"{name}: no agent pod of attempt {attempt} among {sorted(pods)}"
        assert _volumes_configmaps(agent) == {spec["agentBundle"]}, f"{agent.metadata.name} mounts {_volumes_configmaps(agent)}"
        assert agent.spec.automount_service_account_token is False
        main = agent.spec.containers[0]
        assert main.security_context.run_as_user is None and agent.spec.security_context.run_as_user == 65534
        assert {"HOME": "/tmp"}.items() <= {e.name: e.value for e in main.env}.items()
        if spec["taskId"] == SERVICE_TASK:
            assert [c.name for c in agent.spec.containers[1:]] == ["svc-mail"], "the mail service runs as a sidecar"
        grades = [p for n, p in pods.items() if n.startswith(f"{name}-a{attempt}-grade")]
        if status.get("agent") is None:  # the agent attempt failed for good: never graded
            assert not grades, f"{name}: grading pods {[g.metadata.name for g in grades]} for a failed agent"
            continue
        assert grades, f"{name}: no grading pod for attempt {attempt}"
        finished = next(cs.state.terminated.finished_at for cs in agent.status.container_statuses
                        if cs.name == main.name)
        for g in grades:
            # the grading bundle; WildClawBench tasks also the agent bundle (agent material), for /app
            assert spec["gradingBundle"] in _volumes_configmaps(g) <= {spec["gradingBundle"], spec["agentBundle"]}, \
                f"{g.metadata.name} mounts {_volumes_configmaps(g)}"
            assert g.metadata.creation_timestamp >= finished, (
                f"{g.metadata.name} created {g.metadata.creation_timestamp}, before the agent finished {finished}")
    bundles_in_agent_pods = {c for p in pods.values() if p.metadata.labels["clawkube.io/role"] == "agent"
                             for c in _volumes_configmaps(p)}
    assert not any(c.endswith("-grading") for c in bundles_in_agent_pods), bundles_in_agent_pods


def check_artifacts(st: Stack, run: str, trials: list[dict[str, Any]], several_modes: bool = False) -> None:
    """S3 holds each trial's result.json (= its status), its score, and the agent's and grader's outputs; every
    version of result.json says the same (a retried upload never rewrote a result)."""
    s3 = st.s3.client()
    for t in trials:
        spec, status = t["spec"], t["status"]
        folder = f"{spec['mode']}-{spec['trialIndex']}" if several_modes else str(spec["trialIndex"])
        base = f"{PREFIX}/{run}/{spec['taskId']}/{folder}/"
        keys = set(st.s3.keys(BUCKET, base))
        result = st.s3_json(base + "result.json")
        assert result["state"] == status["state"] and result["attempt"] == status["attempt"]
        assert result["error_kind"] == status.get("errorKind")
        versions = [v for v in s3.list_object_versions(Bucket=BUCKET, Prefix=base + "result.json").get("Versions", [])
                    if v["Key"] == base + "result.json"]
        bodies = {json.dumps({k: v for k, v in json.loads(
            s3.get_object(Bucket=BUCKET, Key=v["Key"], VersionId=v["VersionId"])["Body"].read()).items()
            if k in ("state", "score", "attempt", "error_kind")}, sort_keys=True) for v in versions}
        assert len(bodies) == 1, f"{base}result.json was rewritten with different results: {bodies}"
        a = status["attempt"]
        if status.get("agent") is not None:
            for f in ("transcript.jsonl", "usage.json", "workspace.tar.gz"):
                assert f"{base}a{a}/agent/{f}" in keys, f"{base}a{a}/agent/{f} missing: {sorted(keys)}"
            if not several_modes or f"{base}a{a}/agent/agent.exec.json" in keys:  # the agent ran under the pod's
                execd = st.s3_json(f"{base}a{a}/agent/agent.exec.json")  # supervisor backend: cannot outlive it
                assert execd["backend"] == "pod" and {"pid-namespace", "sweep"} & set(execd["limits_enforced"]), execd
        if status["state"] == "succeeded":
            assert result["score"]["score"] == pytest.approx(status["score"]["score"])
            assert st.s3_json(base + "score.json")["score"] == pytest.approx(status["score"]["score"])
            g = status["gradeAttempt"]
            assert f"{base}a{a}/grade{g}/score.json" in keys
        if spec["taskId"] == SERVICE_TASK and status.get("agent") is not None:
            audit = st.s3_json(f"{base}a{a}/agent/audit/mail.json")  # the sidecar's audit log reached S3
            if status["state"] == "succeeded" and status["score"]["passed"]:  # the reply really went through it
                assert any("/messages/send" in json.dumps(c) for c in audit["calls"]), audit


def check_accounted_once(st: Stack, run: str, trials: list[dict[str, Any]], expected: int) -> None:
    """Exactly `expected` TaskTrials; no object name ever had two uids; agent pods exist for attempts 1..N only
    (as the trial's history says); a finished trial's outcome never changed after it was first seen finished."""
    names = [t["metadata"]["name"] for t in trials]
    assert len(names) == len(set(names)) == expected, names
    for name, uids in list(st.recorder.trial_uids.items()):
        if name in names:
            assert len(uids) == 1, f"TaskTrial {name} was re-created: {uids}"
    for pod, uids in st.recorder.pod_uids.items():
        if pod.startswith(f"{run}-"):
            assert len(uids) == 1, f"pod {pod} was created twice: {uids}"
    seen_pods = [p for p in st.recorder.pod_uids if p.startswith(f"{run}-")]
    for t in trials:
        name, status = t["metadata"]["name"], t["status"]
        agent_attempts = sorted(int(m.group(1)) for p in seen_pods
                                for m in [re.fullmatch(re.escape(name) + r"-a(\d+)-agent", p)] if m)
        assert agent_attempts == list(range(1, status["attempt"] + 1)), (name, agent_attempts, status.get("history"))
        agent_failures = [h for h in status.get("history", []) if h.get("gradeAttempt", 0) == 0]
        failed_for_good = status["state"] == "failed" and status.get("agent") is None
        assert len(agent_failures) == status["attempt"] - 1 + failed_for_good, (name, status.get("history"))
        first = st.recorder.first_finished.get(name)
        assert first is not None, f"{name} was never seen finished"
        for k in ("state", "score", "attempt", "errorKind", "finishedAt"):
            assert first.get(k) == status.get(k), f"{name}: {k} changed after the trial finished: {first.get(k)} -> {status.get(k)}"
    c = st.run(run)["status"]["counts"]
    states = [t["status"]["state"] for t in trials]
    assert c["total"] == expected and c["succeeded"] == states.count("succeeded") and c["failed"] == states.count("failed")
    assert c["queued"] == c["running"] == c["grading"] == 0


# ---------------------------------------------------------------- the tests

def test_oracle_nop_and_broken_runs(stack: Stack):
    st = stack
    t0 = time.monotonic()
    st.create_run("oracle", "oracle", parallelism=4)
    st.create_run("nop", "nop", parallelism=4)
    st.create_run("broken", "script", args={"commands": ["echo giving up >&2; exit 3"]},
                  ids=["wild-csv-totals"])
    runs = {name: st.wait_finished(name, timeout=420) for name in ("oracle", "nop", "broken")}
    st.recorder.wait_quiet()
    log(f"oracle/nop/broken finished in {time.monotonic() - t0:.0f}s")
    st.notes["clean_seconds"] = time.monotonic() - t0

    oracle, nop, broken = (runs[n]["status"] for n in ("oracle", "nop", "broken"))
    assert oracle["phase"] == "Succeeded" and oracle["counts"]["succeeded"] == 4 and oracle["passRate"] == 1.0
    assert nop["phase"] == "Succeeded" and nop["counts"]["succeeded"] == 4 and nop["passRate"] == 0.0
    # an agent error with its evidence uploaded and no retry left is graded as the agent left it (plan.after_failure)
    assert broken["counts"]["succeeded"] == 1 and broken["failures"] == {} and broken["passRate"] == 0.0
    for name, run in runs.items():
        trials = st.trials(name)
        assert {t["spec"]["taskId"] for t in trials} == (set(TASKS) if name != "broken" else {"wild-csv-totals"})
        for t in trials:
            s = t["status"]
            if name == "oracle":
                assert s["state"] == "succeeded" and s["score"]["passed"] is True, (t["metadata"]["name"], s)
            elif name == "nop":
                assert s["state"] == "succeeded" and s["score"]["passed"] is False and s["score"]["score"] < 0.75, s
            else:
                assert s["state"] == "succeeded" and s["agent"]["errorKind"] == "agent_error", s
                assert s["score"]["passed"] is False, s
            assert s["attempt"] == 1, (t["metadata"]["name"], s.get("history"))
        check_pods_and_firewall(st, name, trials)
        check_artifacts(st, name, trials)
        check_accounted_once(st, name, trials, expected=len(trials))


def _delete_a_running_agent_pod(st: Stack, run: str) -> str:
    """Delete (grace 0) an agent pod whose main container is running; returns the trial whose attempt 1 it was.
    Retries with another pod when the deleted one had already finished (then the deletion changes nothing)."""
    for _ in range(6):
        def running_agent():
            for p in st.pods(run, "agent"):
                cs = {c.name: c for c in p.status.container_statuses or []}
                if p.metadata.name.endswith("-a1-agent") and cs.get("agent") and cs["agent"].state.running:
                    return p.metadata.name
            return None
        pod = wait_for("a running agent pod", running_agent, 120, every=0.2)
        st.core.delete_namespaced_pod(pod, st.ns, grace_period_seconds=0)
        trial = pod[: -len("-a1-agent")]
        log(f"chaos: deleted agent pod {pod}")

        def outcome():
            s = st.custom.get_namespaced_custom_object(G, V, st.ns, "tasktrials", trial).get("status") or {}
            if any(h["reason"] == "PodDeleted" and h["attempt"] == 1 for h in s.get("history", [])):
                return "retried"
            return "finished-before" if s.get("agent") is not None and s.get("attempt") == 1 else None
        if wait_for(f"{trial} to notice the deletion", outcome, 60) == "retried":
            return trial
    raise AssertionError("every deleted agent pod had already finished")


def test_chaos_run_accounts_for_every_trial_once(stack: Stack):
    st = stack
    t0 = time.monotonic()
    # 8 trials, 2 at a time: long enough for three faults; generous infra retries (each fault costs attempts)
    st.create_run("chaos", "oracle", trials=2, parallelism=2, retry={"infra": 6, "gradingError": 2})

    deleted = _delete_a_running_agent_pod(st, "chaos")
    # the operator notices the deleted pod and counts an infra retry: let Prometheus scrape that count before the
    # operator dies (a SIGKILLed process's counters die with it, and its successor does not count a retry the
    # predecessor already recorded on the trial; ci-6 killed it before the scrape and the dashboard test read 0)
    retries = f'clawkube_trial_retries_total{{namespace="{st.ns}",run="chaos",error_kind="infra"}} > 0'
    wait_for("the deleted pod's infra retry, scraped", lambda: st.prom.query(retries), 60, every=0.5)

    def in_flight():
        c = (st.run("chaos").get("status") or {}).get("counts") or {}
        return c.get("running", 0) + c.get("grading", 0) > 0
    wait_for("trials in flight", in_flight, 120, every=0.3)
    st.op.kill()
    log("chaos: operator killed (SIGKILL)")
    down_alert = next((q for q in st.rules if q.where == "alert ClawkubeOperatorDown"), None)
    if down_alert is not None:  # the alert's condition holds while the operator is dead (firing needs `for: 5m`)
        wait_for("ClawkubeOperatorDown's expression to hold", lambda: st.prom.query(down_alert.expr), 30)
        st.notes["operator_down_seen"] = True
    time.sleep(3)  # pods keep running and finishing meanwhile
    st.op.start()
    log("chaos: operator restarted")

    wait_for("trials in flight", in_flight, 120, every=0.3)
    st.s3.down()
    log("chaos: S3 down")
    time.sleep(12)
    st.s3.up()
    log("chaos: S3 up")

    run = st.wait_finished("chaos", timeout=600)["status"]
    st.recorder.wait_quiet()
    st.notes["chaos_seconds"] = time.monotonic() - t0
    log(f"chaos run finished in {time.monotonic() - t0:.0f}s")
    trials = st.trials("chaos")
    assert run["phase"] == "Succeeded"
    check_accounted_once(st, "chaos", trials, expected=8)
    check_pods_and_firewall(st, "chaos", trials)
    check_artifacts(st, "chaos", trials)
    by_name = {t["metadata"]["name"]: t["status"] for t in trials}
    assert by_name[deleted]["attempt"] >= 2 and by_name[deleted]["history"][0]["reason"] == "PodDeleted"
    failed = {n: (s.get("errorKind"), s.get("errorMessage")) for n, s in by_name.items() if s["state"] != "succeeded"}
    assert not failed, f"oracle trials failed despite the retry budget: {failed}"
    assert all(s["score"]["passed"] for s in by_name.values())
    assert run["counts"]["succeeded"] == 8 and run["passRate"] == 1.0
    st.notes["chaos_history"] = {n: [h["reason"] for h in s.get("history")] for n, s in by_name.items() if s.get("history")}
    log(f"chaos: retries by trial: {st.notes['chaos_history']}")


def _main_finished(pod) -> datetime:
    main = pod.spec.containers[0].name
    return next(cs.state.terminated.finished_at for cs in pod.status.container_statuses if cs.name == main)


def test_evoclaw_modes_run_stage_by_stage_on_real_pods(stack: Stack):
    """One BenchmarkRun of baseline, PreSkill and PostSkill (EvoClawBench) with a scripted agent that writes a
    skill when asked to and uses it when it finds it: every stage is a real pod, each starts only after the one
    before it terminated, and the skills reach the graded execution through S3."""
    from tests.test_skill_modes import EXECUTE, PARTIAL, TASK, WRITE_SKILL

    st = stack
    t0 = time.monotonic()
    essay = "fixtures/evo-word-stats/essay.txt"
    tasks = {"inline": [{"name": "evo-word-stats.md", "content": Path(TASK.source_path).read_text()},
                        {"name": essay, "content": (REPO / "tasks" / "evoclaw" / essay).read_text()}]}
    st.create_run("modes", "script", args={"commands": EXECUTE, "authoring_commands": WRITE_SKILL}, tasks=tasks,
                  modes=["baseline", "preskill", "postskill"], parallelism=3)
    run = st.wait_finished("modes", timeout=420)["status"]
    st.recorder.wait_quiet()
    log(f"modes run finished in {time.monotonic() - t0:.0f}s")
    assert run["phase"] == "Succeeded", run
    trials = st.trials("modes")
    by_mode = {t["spec"]["mode"]: t for t in trials}
    assert set(by_mode) == {"baseline", "preskill", "postskill"}
    base, pre, post = (by_mode[m]["status"] for m in ("baseline", "preskill", "postskill"))
    assert base["score"]["score"] == pytest.approx(PARTIAL) and pre["score"]["score"] == 1.0, (base, pre)
    assert post["score"]["score"] == 1.0 and post["score"]["details"]["first_run"]["score"]["score"] == PARTIAL, post
    assert run["summary"]["by_mode"]["postskill"]["vs_baseline"]["score"] == pytest.approx(1.0 / PARTIAL)

    pods = {p.metadata.name: p for p in st.pods("modes")}
    chains = {"preskill": ["author", "agent", "grade"], "postskill": ["first", "first-grade", "summary", "agent", "grade"]}
    for mode, chain in chains.items():
        name = by_mode[mode]["metadata"]["name"]
        order = [pods[f"{name}-a1-{suffix}"] for suffix in chain]
        for before, after in zip(order, order[1:]):  # each stage only after the one before it terminated
            assert after.metadata.creation_timestamp >= _main_finished(before), (
                f"{after.metadata.name} created {after.metadata.creation_timestamp}, before "
                f"{before.metadata.name} finished {_main_finished(before)}")
    summary = pods[f"{by_mode['postskill']['metadata']['name']}-a1-summary"]
    assert not any(c.endswith("-grading") for c in _volumes_configmaps(summary))
    check_pods_and_firewall(st, "modes", trials)
    check_artifacts(st, "modes", trials, several_modes=True)
    check_accounted_once(st, "modes", trials, expected=3)
    keys = set(st.s3.keys(BUCKET, f"{PREFIX}/modes/{TASK.id}/postskill-0/a1/"))
    for rel in ("first_run/workspace.tar.gz", "first_run_grade/score.json", "summary/first_run_context.json",
                "summary/skills/word-stats/solve.sh", "agent/skills.json"):
        assert f"{PREFIX}/modes/{TASK.id}/postskill-0/a1/{rel}" in keys, (rel, sorted(keys))


# A hostile agent on real pods: it reads every process environment and every mount it can find and lists the pod's
# /clawkube folders, and leaves what it found in its workspace (which the pod snapshots to S3). The first lines of
# each probe are its control: the same probe finds the agent's own environment and its own bundle.
HOSTILE = [
    "for p in /proc/[0-9]*; do tr '\\000' '\\n' < $p/environ 2>/dev/null; done > environs.txt; true",
    "for p in /proc/[0-9]*; do echo \"${p#/proc/}: $(tr '\\000' ' ' < $p/cmdline 2>/dev/null)\"; done > procs.txt; true",
    "(ls -laR /clawkube 2>&1 | head -2000; cat /proc/mounts) > paths.txt; true",
]


def test_hostile_agent_on_real_pods_finds_no_keys_no_supervisor_no_grading_files(stack: Stack):
    import io
    import tarfile

    st = stack
    st.create_run("hostile", "script", args={"commands": HOSTILE}, ids=["wild-csv-totals"])
    run = st.wait_finished("hostile", timeout=420)["status"]
    (trial,) = st.trials("hostile")
    status = trial["status"]
    assert run["phase"] == "Succeeded" and status["state"] == "succeeded", status  # graded: the agent's doing
    assert status["score"]["passed"] is False  # it did not do the task
    base = f"{PREFIX}/hostile/wild-csv-totals/0/a{status['attempt']}/agent/"
    body = st.s3.client().get_object(Bucket=BUCKET, Key=base + "workspace.tar.gz")["Body"].read()
    found = {}
    with tarfile.open(fileobj=io.BytesIO(body)) as tar:
        for m in tar.getmembers():
            name = m.name.split("/")[-1]
            if name in ("environs.txt", "procs.txt", "paths.txt") and m.isfile():
                found[name] = tar.extractfile(m).read().decode(errors="replace")
    assert set(found) == {"environs.txt", "procs.txt", "paths.txt"}, sorted(found)
    env_lines = found["environs.txt"].splitlines()
    # control: the probe reads the environments it may (its own processes': the HOME the supervisor gives agents)
    assert any(ln.startswith("HOME=/clawkube/") for ln in env_lines), found["environs.txt"][:2000]
    leaked = [ln.split("=", 1)[0] for ln in env_lines
              if ln.split("=", 1)[0] in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "CLAWKUBE_UPLOAD_GRANT",
                                         "CLAWKUBE_READ_GRANTS", "CLAWKUBE_JUDGE_API_KEY")]
    assert not leaked, f"the agent read {sorted(set(leaked))} from a process environment"
    procs = found["procs.txt"]
    assert any(ln.split(": ", 1)[-1].strip() for ln in procs.splitlines()), procs  # control: its own processes show
    # Where the container refuses namespaces (this cluster: the runtime's default seccomp profile, non-root pod), the
    # pod backend falls back to the sweep (docs/sandbox.md): the agent can list the supervisor (pid 1: its pid and
    # command line) but not read its environment (the supervisor is non-dumpable: the check above, its upload grant
    # never shows), signal it (pid 1 of the container) or outlive its exec (every other process of the uid is killed)
    execd = st.s3_json(base + "agent.exec.json")
    assert execd["backend"] == "pod" and {"pid-namespace", "sweep"} & set(execd["limits_enforced"]), execd
    log(f"hostile: pod backend on this cluster: {execd['limits_enforced']}")
    assert "pod grade" not in procs, procs[:3000]
    paths = found["paths.txt"]
    assert "/clawkube" in paths and "bundle" in paths, paths[:3000]  # control: the listing works
    assert "grading" not in paths and "grade_request" not in paths, f"grading material in the agent's view:\n{paths[:3000]}"


def test_dashboard_and_alert_queries_return_data(stack: Stack):
    st = stack
    for needed in ("oracle", "chaos", "modes"):  # selected alone: the runs this test reads must exist
        try:
            st.run(needed)
        except Exception:
            pytest.skip(f"needs the runs of the tests above (BenchmarkRun {needed} missing)")
    time.sleep(3)  # a few more scrapes after the last change
    # the dashboard's variables, as Grafana would fill them: All -> its allValue, the time range = this module's age
    ns_sel, ns_label = promql.label_values_query(promql.dashboard_variables(DASHBOARD)["namespace"])
    namespaces = st.prom.label_values(ns_label, ns_sel)
    assert st.ns in namespaces, f"label_values(namespace) = {namespaces}"
    run_sel, run_label = promql.label_values_query(
        promql.substitute(promql.dashboard_variables(DASHBOARD)["run"], {"namespace": st.ns}))
    assert {"oracle", "nop", "broken", "chaos"} <= set(st.prom.label_values(run_label, run_sel))
    values = {"namespace": st.ns, "run": ".*", "__range": "30m", "__rate_interval": "1m", "__interval": SCRAPE,
              "datasource": "prometheus"}
    empty, errors = [], []
    for q in promql.dashboard_queries(DASHBOARD):
        expr = promql.substitute(q.expr, values)
        try:
            if not st.prom.query(expr):
                empty.append(f"{q.where}: {expr}")
        except ValueError as e:
            errors.append(f"{q.where}: {e}")
    assert not errors, "dashboard queries Prometheus rejects:\n" + "\n".join(errors)
    assert not empty, "dashboard queries without data:\n" + "\n".join(empty)

    if not st.rules:
        pytest.skip("no helm to render the PrometheusRule: alert rules not checked")
    loaded = {r["name"]: r for r in st.prom.rules()}
    for q in st.rules:
        name = q.where.removeprefix("alert ")
        assert name in loaded, f"{name} not loaded by Prometheus: {sorted(loaded)}"
        assert loaded[name]["health"] == "ok", f"{name}: {loaded[name].get('lastError')}"
        st.prom.query(q.expr)  # evaluates (raises on a query error)
    assert st.notes.get("operator_down_seen"), "ClawkubeOperatorDown's expression never held while the operator was dead"
    assert not st.prom.query(next(q.expr for q in st.rules if q.where == "alert ClawkubeOperatorDown")), \
        "ClawkubeOperatorDown holds although the operator is up again"

    # counters that the faults of the chaos run must have moved
    # (the operator restarted during the chaos run and since the oracle run: its counters started again from
    # nothing, so each is read at its highest over the module's time, not as it is now)
    retried = st.prom.query(f'sum(max_over_time(clawkube_trial_retries_total{{namespace="{st.ns}",run="chaos",'
                            f'error_kind="infra"}}[30m]))')
    assert float(retried[0]["value"][1]) >= 1
    pods = st.prom.query(f'max_over_time(clawkube_pods_created_total{{namespace="{st.ns}",run="oracle",role="agent"}}[30m])')
    assert float(pods[0]["value"][1]) == 4
    graded = st.prom.query(f'max_over_time(clawkube_trials{{namespace="{st.ns}",run="broken",state="succeeded"}}[30m])')
    assert float(graded[0]["value"][1]) == 1  # the agent's error was graded as it left the workspace
    assert [t for t in st.prom.targets() if t["labels"]["job"] == st.up_job][0]["health"] == "up"
