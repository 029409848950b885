"""Real harnesses on the real single-node cluster: Claude Code and Codex in their own agent images
(images/build.sh --harnesses), each in an agent pod the operator creates, talking to the scripted model server
running as a pod in the cluster, through the chart's NetworkPolicy that allows the model API.

    model server  `clawkube model-server` in a pod (the agent image has clawkube), its script from a ConfigMap;
                  reached by pod IP (the cluster has no Services/kube-proxy and no DNS: docs/cluster.md)
    NetworkPolicy the chart's agent/grader policies, rendered with networkPolicy.modelApi = the server's pod IP
                  and port, applied to the namespace. This cluster's CNI (bridge) does not enforce policies: the
                  test checks that the policy selects the agent pods and allows exactly the model API's address,
                  not that other traffic is dropped
    run           one BenchmarkRun per harness over examples/harness (the README's sample task), spec.agent.api =
                  the server, the key from a Secret; the script requires that key, so a request without it fails

Checks: score 1.0, the file written by the harness's own tool is in the workspace snapshot, the transcript has the
tool call, tokens in the trial status equal what the server reported, the agent pod ran the harness's image and
carried the model API only in the agent container; the grading pod got neither the base URL nor the key.
"""
from __future__ import annotations

import base64
import json
import os
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from tests.e2e.operator_proc import OperatorProcess
from tests.e2e.namespace import new_namespace, s3_for
from tests.e2e.s3 import ACCESS, REGION, free_port
from tests.e2e.test_e2e_cluster import G, NODE_IP, REPO, V, _kubectl, fixed_apiserver, log, wait_for  # noqa: F401
from tests.harnesses.scenario import EXPECTED_TOOL, PROMPT, SCRIPT

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

HARNESSES = ["claude-code", "codex"]
KEY = "sk-e2e-model"
PORT = 8765
BUCKET, PREFIX = "results", "e2e-harness"
EXAMPLE = REPO / "examples" / "harness"


def harness_image(name: str) -> str:
    return f"local.test/clawkube-agent-{name}:{os.environ.get('CLAWKUBE_IMAGE_TAG', 'dev')}"


@pytest.fixture(scope="module")
def harness_images(cluster):
    """The agent images of the two harnesses (and the base images), built and imported into the cluster."""
    if os.environ.get("CLAWKUBE_SKIP_IMAGE_BUILD") != "1":
        log(f"images/build.sh --harnesses {','.join(HARNESSES)}")
        p = subprocess.run(["bash", str(REPO / "images" / "build.sh"), "--harnesses", ",".join(HARNESSES)],
                           capture_output=True, text=True, timeout=3600)
        assert p.returncode == 0, p.stderr[-3000:]
    from tests.cluster.cluster import IMAGES

    return {**IMAGES, **{h: harness_image(h) for h in HARNESSES}}


def _configmap_files(root: Path, exclude: tuple[str, ...] = ()) -> dict[str, str]:
    return {f.relative_to(root).as_posix().replace("/", "__"): base64.b64encode(f.read_bytes()).decode()
            for f in sorted(root.rglob("*")) if f.is_file() and f.name not in exclude}


def _helm() -> str:
    helm = Path(os.environ.get("CLAWKUBE_HELM_DIR", Path.home() / ".cache" / "clawkube" / "helm")) / "helm"
    if not helm.exists():
        subprocess.run(["sh", str(REPO / "tools" / "get-helm.sh"), str(helm.parent)], capture_output=True, timeout=300)
    if not helm.exists():
        pytest.skip("helm is not available to render the chart's NetworkPolicy (tools/get-helm.sh failed)")
    return str(helm)


def _network_policies(ns: str, model_ip: str, s3_port: int) -> list[dict]:
    out = subprocess.run([_helm(), "template", "bench", str(REPO / "charts" / "clawkube"), "--namespace", ns,
                          "--show-only", "templates/networkpolicy.yaml",
                          "--set", f"networkPolicy.modelApi.cidrs[0]={model_ip}/32",
                          "--set", f"networkPolicy.modelApi.ports[0]={PORT}",
                          "--set", f"networkPolicy.artifactStore.cidrs[0]={NODE_IP}/32",
                          "--set", f"networkPolicy.artifactStore.ports[0]={s3_port}"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


@pytest.fixture(scope="module")
def env(fixed_apiserver, cluster, harness_images, cluster_api, tmp_path_factory):
    from kubernetes import client

    logs = tmp_path_factory.mktemp("e2e-harness")
    kc = cluster.kubeconfig
    _kubectl(kc, "apply", "-f", str(REPO / "crds"))
    _kubectl(kc, "wait", "--for=condition=Established", "--timeout=60s",
             "crd/benchmarkruns.clawkube.io", "crd/tasktrials.clawkube.io")
    core = client.CoreV1Api(cluster_api)
    ns = new_namespace(core, "e2e-h")
    s3 = s3_for(core, ns, NODE_IP, BUCKET)
    core.create_namespaced_secret(ns, {"metadata": {"name": "model-api"}, "stringData": {"token": KEY}})
    core.create_namespaced_config_map(ns, {"metadata": {"name": "tasks"},
                                           "binaryData": _configmap_files(EXAMPLE, exclude=("scripted-model.yaml",))})
    core.create_namespaced_config_map(ns, {"metadata": {"name": "model-script"},
                                           "data": {"model.yaml": yaml.safe_dump({**SCRIPT, "api_key": KEY})}})
    core.create_namespaced_pod(ns, {"metadata": {"name": "model-server", "labels": {"app": "model-server"}}, "spec": {
        "containers": [{"name": "server", "image": harness_images["agent"], "imagePullPolicy": "Never",
                        "command": ["clawkube", "model-server", "--script", "/script/model.yaml", "--host", "0.0.0.0",
                                    "--port", str(PORT)],
                        "volumeMounts": [{"name": "script", "mountPath": "/script"}],
                        "readinessProbe": {"httpGet": {"path": "/healthz", "port": PORT}, "periodSeconds": 1}}],
        "volumes": [{"name": "script", "configMap": {"name": "model-script"}}]}})

    def ready():
        pod = core.read_namespaced_pod("model-server", ns)
        ok = pod.status.pod_ip and any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])
        return pod.status.pod_ip if ok else None
    model_ip = wait_for("the model server pod", ready, 180)
    policies = _network_policies(ns, model_ip, s3.proxy.port)
    _kubectl(kc, "apply", "-n", ns, "-f", "-", input=yaml.safe_dump_all(policies))

    port = free_port("127.0.0.1")
    op = OperatorProcess({
        "KUBECONFIG": str(kc), "CLAWKUBE_NAMESPACES": ns, "CLAWKUBE_METRICS_PORT": str(port),
        "CLAWKUBE_LIVENESS_PORT": "0", "CLAWKUBE_LISTEN_ADDRESS": "127.0.0.1",
        "CLAWKUBE_AGENT_IMAGE": harness_images["agent"], "CLAWKUBE_GRADER_IMAGE": harness_images["grader"],
        "CLAWKUBE_HARNESS_IMAGES": ",".join(f"{h}={harness_images[h]}" for h in HARNESSES),
        "CLAWKUBE_IMAGE_PULL_POLICY": "Never", "CLAWKUBE_REQUEUE_SECONDS": "1", "CLAWKUBE_UPLOAD_RETRY_SECONDS": "2",
        "AWS_ACCESS_KEY_ID": ACCESS["aws_access_key_id"], "AWS_SECRET_ACCESS_KEY": ACCESS["aws_secret_access_key"],
        "PYTHONUNBUFFERED": "1",
    }, logs / "operator.log", port)
    try:
        op.start()
        yield {"ns": ns, "kc": kc, "api": cluster_api, "core": core, "s3": s3, "op": op, "model_ip": model_ip,
               "policies": policies}
    finally:
        op.stop()
        s3.stop()
        if os.environ.get("CLAWKUBE_E2E_KEEP") != "1":
            core.delete_namespace(ns)


def _server_log(model_ip: str) -> list[dict]:
    with urllib.request.urlopen(f"http://{model_ip}:{PORT}/_clawkube/requests", timeout=10) as r:
        return json.load(r)


def test_network_policy_allows_the_model_api_for_agent_pods_only(env):
    by_name = {p["metadata"]["name"]: p for p in env["policies"]}
    agent = next(p for n, p in by_name.items() if n.endswith("-agent"))
    grader = next(p for n, p in by_name.items() if n.endswith("-grader"))
    assert agent["spec"]["podSelector"]["matchLabels"] == {"clawkube.io/role": "agent"}
    peers = [(peer.get("ipBlock", {}).get("cidr"), [p.get("port") for p in rule.get("ports", [])])
             for rule in agent["spec"]["egress"] for peer in rule.get("to", [])]
    assert (f"{env['model_ip']}/32", [PORT]) in peers
    assert not any(f"{env['model_ip']}/32" in json.dumps(r) for r in grader["spec"]["egress"])


@pytest.mark.parametrize("harness", HARNESSES)
def test_real_harness_in_its_agent_pod_scores_against_the_in_cluster_model(env, harness):
    from kubernetes import client

    custom = client.CustomObjectsApi(env["api"])
    ns, name = env["ns"], f"h-{harness}"
    before = len(_server_log(env["model_ip"]))
    spec = {"tasks": {"configMap": "tasks"}, "trials": 1, "parallelism": 1,
            "agent": {"harness": harness, "model": "scripted",
                      "api": {"baseUrl": f"http://{env['model_ip']}:{PORT}",
                              "apiKeySecret": {"name": "model-api", "key": "token"}}},
            "resources": {"cpu": "1", "memory": "2Gi"}, "timeoutSeconds": 300,
            "artifacts": {"bucket": BUCKET, "prefix": PREFIX, "endpoint": env["s3"].endpoint, "region": REGION,
                          "credentialsSecret": "s3"}}
    _kubectl(env["kc"], "apply", "-n", ns, "-f", "-", input=json.dumps(
        {"apiVersion": f"{G}/{V}", "kind": "BenchmarkRun", "metadata": {"name": name}, "spec": spec}))

    def finished():
        r = custom.get_namespaced_custom_object(G, V, ns, "benchmarkruns", name)
        return r if (r.get("status") or {}).get("phase") in ("Succeeded", "Failed") else None
    try:
        run = wait_for(f"BenchmarkRun {name}", finished, 900, every=2)
    except AssertionError:
        log(env["op"].tail(80))
        raise
    trials = custom.list_namespaced_custom_object(G, V, ns, "tasktrials", label_selector=f"clawkube.io/run={name}")
    (trial,) = trials["items"]
    st = trial["status"]
    assert run["status"]["phase"] == "Succeeded" and st["score"]["score"] == 1.0, (st, env["op"].tail(40))

    # the harness talked to the in-cluster model, with the key from the Secret, and got its tool call
    served = _server_log(env["model_ip"])[before:]
    assert served and all(e["status"] == 200 for e in served), [(e["status"], e["path"]) for e in served]
    assert any(PROMPT in json.dumps(e["body"]) for e in served)
    u = st["usage"]
    fresh = sum(e["usage"]["input_tokens"] + e["usage"]["cache_creation_input_tokens"] for e in served if e["usage"])
    cached = sum(e["usage"]["cached_input_tokens"] for e in served if e["usage"])
    out = sum(e["usage"]["output_tokens"] for e in served if e["usage"])
    assert (u["inputTokens"], u["cacheReadTokens"], u["outputTokens"]) == (fresh, cached, out), (u, served)
    tool, kind = EXPECTED_TOOL[harness]
    assert u["toolCallsByKind"] == {kind: 1}

    # the pods: the harness's own image; the model API in the agent container only
    pods = env["core"].list_namespaced_pod(ns, label_selector=f"clawkube.io/run={name}").items
    agent = next(p for p in pods if p.metadata.labels.get("clawkube.io/role") == "agent")
    grade = next(p for p in pods if p.metadata.labels.get("clawkube.io/role") == "grade")
    assert agent.spec.containers[0].image == harness_image(harness)
    agent_env = {e.name: e for e in agent.spec.containers[0].env}
    assert agent_env["CLAWKUBE_MODEL_BASE_URL"].value == f"http://{env['model_ip']}:{PORT}"
    assert agent_env["CLAWKUBE_MODEL_API_KEY"].value_from.secret_key_ref.name == "model-api"
    grading = json.dumps(client.ApiClient().sanitize_for_serialization(grade))
    assert "CLAWKUBE_MODEL" not in grading and "model-api" not in grading

    # transcript and workspace snapshot from the artifact store
    s3 = env["s3"].client()
    keys = [k for k in env["s3"].keys(BUCKET, f"{PREFIX}/{name}/") if "agent" in k]
    transcript_key = next(k for k in keys if k.endswith("transcript.jsonl"))
    events = [json.loads(line) for line in s3.get_object(Bucket=BUCKET, Key=transcript_key)["Body"].read().decode()
              .splitlines()]
    assert [e["tool"] for e in events if e["type"] == "tool_call"] == [tool]
    assert any(k.endswith("workspace.tar.gz") for k in keys)
