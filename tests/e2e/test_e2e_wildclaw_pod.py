"""WildClawBench's container paths and Warmup on real pods (issue #14, its cluster side).

The test task tests/data/wildclaw_pod/wild-pod-ledger.md is in the benchmark's own format and asks what the published
tasks ask of a cluster: its prompt and grader name /tmp_workspace; its Warmup starts a small server from the workspace
in the background (as 03_Social_Interaction's do) and deletes the fixture it read; the grader queries that server's
audit endpoint on localhost, reads /app (the workspace as handed over), the agent's HOME and the ground truth at
/tmp_workspace/gt. Through the operator, on real agent and grading pods of the locally built images:
- the oracle scores 1.0 on every criterion and nop 0.0 (so /tmp_workspace, /app, HOME and the relayed server all
  work, and none of them gives credit by itself);
- the agent pod has the svc-warmup sidecar; the grading pod was told the agent pod's relay and created after the
  agent container terminated; once the trial is finished the agent pod is deleted (its servers with it);
- a hostile script agent looking everywhere finds no ground truth and runs as the pod's non-root uid; no container of
  a grading pod runs as root.
Set CLAWKUBE_E2E_KEEP=1 to keep the namespace.
"""
from __future__ import annotations

import base64
import io
import json
import os
import sys
import tarfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.namespace import new_namespace, s3_for, wait_run_finished
from tests.e2e.operator_proc import for_namespace
from tests.e2e.s3 import REGION
from tests.polling import wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "wildclaw_pod"
TASK = "wild-pod-ledger"
NODE_IP = "10.88.0.1"  # this machine's address on the pod bridge (docs/cluster.md)
G, V = "clawkube.io", "v1alpha1"
BUCKET, PREFIX = "results", "wildpod"
HOSTILE = ("{ find / -path /proc -prune -o -path /sys -prune -o \\( -name expected.json -o -name grading.json "
           "-o -name grader.py \\) -print 2>/dev/null; echo uid=$(id -u); } > /tmp_workspace/found.txt")


def log(msg: str) -> None:
    print(f"[e2e-wildpod {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _configmap_data() -> dict[str, str]:
    files = [DATA / f"{TASK}.md", *sorted(p for p in (DATA / "fixtures" / TASK).rglob("*") if p.is_file())]
    return {f.relative_to(DATA).as_posix().replace("/", "__"): base64.b64encode(f.read_bytes()).decode()
            for f in files}


@pytest.fixture(scope="module")
def stack(cluster, cluster_images, cluster_api, tmp_path_factory):
    from kubernetes import client

    logs = tmp_path_factory.mktemp("e2e-wildpod")
    log(f"logs in {logs}")
    kc = cluster.kubeconfig
    import subprocess
    subprocess.run(["kubectl", f"--kubeconfig={kc}", "apply", "-f", str(REPO / "crds")], check=True,
                   capture_output=True, timeout=120)
    core = client.CoreV1Api(cluster_api)
    ns = new_namespace(core, "wp")
    s3 = s3_for(core, ns, NODE_IP, BUCKET)
    core.create_namespaced_config_map(ns, {"metadata": {"name": "tasks"}, "binaryData": _configmap_data()})
    op = for_namespace(kc, ns, cluster_images["agent"], cluster_images["grader"], logs / "operator.log")
    try:
        op.start()
        yield {"ns": ns, "api": cluster_api, "s3": s3, "op": op, "core": core}
    finally:
        op.stop()
        s3.stop()
        if os.environ.get("CLAWKUBE_E2E_KEEP") != "1":
            core.delete_namespace(ns)


def _create_run(st, name: str, harness: str, args: dict | None = None) -> None:
    from kubernetes import client

    spec: dict[str, Any] = {
        "tasks": {"configMap": "tasks"}, "agent": {"harness": harness, **({"args": args} if args else {})},
        "resources": {"cpu": "200m", "memory": "256Mi"},
        "artifacts": {"bucket": BUCKET, "prefix": PREFIX, "endpoint": st["s3"].endpoint, "region": REGION,
                      "credentialsSecret": "s3"}}
    client.CustomObjectsApi(st["api"]).create_namespaced_custom_object(
        G, V, st["ns"], "benchmarkruns", {"apiVersion": f"{G}/{V}", "kind": "BenchmarkRun",
                                          "metadata": {"name": name}, "spec": spec})


def _wait_run(st, name: str, timeout: float = 420) -> dict[str, Any]:
    from kubernetes import client

    api = client.CustomObjectsApi(st["api"])
    return wait_run_finished(lambda n: api.get_namespaced_custom_object(G, V, st["ns"], "benchmarkruns", n),
                             name, timeout, st["op"], log)


def _trial(st, run: str) -> dict[str, Any]:
    from kubernetes import client

    items = client.CustomObjectsApi(st["api"]).list_namespaced_custom_object(
        G, V, st["ns"], "tasktrials", label_selector=f"clawkube.io/run={run}")["items"]
    assert len(items) == 1, items
    return items[0]


def _pods(st, run: str, role: str) -> list[Any]:
    return st["core"].list_namespaced_pod(st["ns"], label_selector=f"clawkube.io/run={run},clawkube.io/role={role}").items


def _s3_bytes(st, key: str) -> bytes:
    return st["s3"].client().get_object(Bucket=BUCKET, Key=key)["Body"].read()


def test_warmup_server_app_home_and_tmp_workspace_on_real_pods(stack):
    st = stack
    runs = {"oracle": ("oracle", None), "nop": ("nop", None),
            "hostile": ("script", {"commands": [HOSTILE]})}
    for name, (harness, args) in runs.items():
        _create_run(st, name, harness, args)
    agent_pods: dict[str, Any] = {}

    def seen():  # the agent pods with their address, while they exist (deleted once their trial is finished)
        for name in runs:
            for p in _pods(st, name, "agent"):
                if p.status.pod_ip:
                    agent_pods.setdefault(name, p)
        return len(agent_pods) == len(runs)
    wait_for("the agent pods", seen, 240, every=0.5)
    status = {name: _wait_run(st, name)["status"] for name in runs}
    for name in runs:
        assert status[name]["phase"] == "Succeeded", (name, status[name])

    oracle, nop = _trial(st, "oracle")["status"], _trial(st, "nop")["status"]
    log(f"oracle: {oracle.get('score')}  nop: {nop.get('score')}")
    assert oracle["state"] == "succeeded" and oracle["score"]["score"] == 1.0, oracle
    assert oracle["score"]["criteria"] == {"submitted": 1.0, "motto": 1.0, "receipt": 1.0}, oracle["score"]
    assert nop["state"] == "succeeded" and nop["score"]["score"] == 0.0, nop
    assert oracle["agent"]["warmupPorts"] == [18931] and oracle["attempt"] == 1

    for name, p in agent_pods.items():
        names = [c.name for c in p.spec.containers]
        assert names == ["agent", "svc-warmup"], names
        side = p.spec.containers[1]
        assert side.security_context.run_as_user == 0 and side.security_context.read_only_root_filesystem is False
        main = p.spec.containers[0]
        assert main.security_context.read_only_root_filesystem is True and p.spec.security_context.run_as_user == 65534
    for name in runs:  # grading: after the agent container ended, told the agent pod's relay, nothing as root
        trial = _trial(st, name)
        grades = _pods(st, name, "grade")
        assert len(grades) == 1, [g.metadata.name for g in grades]
        g = grades[0]
        env = {e.name: e.value for e in g.spec.containers[0].env}
        assert env["CLAWKUBE_WARMUP_PEER"] == f"{agent_pods[name].status.pod_ip}:47419"
        for c in [*g.spec.containers, *(g.spec.init_containers or [])]:
            assert (c.security_context.run_as_user or g.spec.security_context.run_as_user) != 0, c.name
        finished = datetime.fromisoformat(trial["status"]["agent"]["finishedAt"].replace("Z", "+00:00"))
        assert g.metadata.creation_timestamp >= finished, (g.metadata.creation_timestamp, finished)
    # released after grading: the agent pods (and the warmup's servers) are deleted
    wait_for("the agent pods to be deleted", lambda: all(
        not [p for p in _pods(st, name, "agent") if p.metadata.deletion_timestamp is None] for name in runs), 120, every=1)

    # the hostile agent: no ground truth anywhere it can look; it ran as the pod's non-root uid
    t = _trial(st, "hostile")
    base = f"{PREFIX}/hostile/{TASK}/{t['spec']['trialIndex']}/a1/agent/"
    with tarfile.open(fileobj=io.BytesIO(_s3_bytes(st, base + "workspace.tar.gz")), mode="r:gz") as tar:
        found = tar.extractfile("found.txt").read().decode()
    log(f"hostile agent found: {found!r}")
    assert found.strip().splitlines() == ["uid=65534"], found
    assert json.loads(_s3_bytes(st, f"{PREFIX}/hostile/{TASK}/{t['spec']['trialIndex']}/a1/grade1/score.json")
                      )["score"] == 0.0
