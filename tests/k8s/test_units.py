"""Units around the decisions: CRD schema vs models, pod specs (firewall), parsing, names, settings, staging."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from clawkube.k8s import crdgen
from clawkube.k8s.model import RunStatus, TaskTrialSpec, TrialStatus
from clawkube.k8s.names import agent_pod_name, grade_pod_name, label_value, slug, trial_name
from clawkube.k8s.observe import parse_pod
from clawkube.k8s.podspec import PodParams, agent_pod, grade_pod
from clawkube.runspec import BenchmarkRunSpec
from clawkube.settings import Settings, SettingsError
from tests.k8s.builders import spec

REPO = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------- CRDs

@pytest.mark.parametrize("plural,make", [("benchmarkruns", crdgen.benchmarkrun_crd), ("tasktrials", crdgen.tasktrial_crd)])
def test_committed_crds_are_the_generated_ones(plural, make):
    assert (REPO / "crds" / f"{plural}.yaml").read_text() == crdgen.render(make()), \
        "crds/ is stale: run python -m clawkube.k8s.crdgen crds/"


def _fields(schema: dict, prefix: str = "") -> set[str]:
    out = set()
    for name, sub in (schema.get("properties") or {}).items():
        out.add(prefix + name)
        out |= _fields(sub.get("items", sub), prefix + name + ".")
    return out


def _model_fields(model, prefix: str = "") -> set[str]:
    from typing import get_args

    from pydantic import BaseModel
    out = set()
    for name, f in model.model_fields.items():
        alias = f.alias or name
        out.add(prefix + alias)
        for t in (f.annotation, *get_args(f.annotation), *[a for g in get_args(f.annotation) for a in get_args(g)]):
            if isinstance(t, type) and issubclass(t, BaseModel):
                out |= _model_fields(t, prefix + alias + ".")
    return out


@pytest.mark.parametrize("crd,part,model", [
    (crdgen.benchmarkrun_crd, "spec", BenchmarkRunSpec), (crdgen.benchmarkrun_crd, "status", RunStatus),
    (crdgen.tasktrial_crd, "spec", TaskTrialSpec), (crdgen.tasktrial_crd, "status", TrialStatus),
])
def test_crd_schema_and_pydantic_model_agree_on_field_names(crd, part, model):
    schema = crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"][part]
    assert _fields(schema) == _model_fields(model)


def test_crd_schema_is_structural_and_validates():
    schema = crdgen.benchmarkrun_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    spec_s = schema["properties"]["spec"]
    assert spec_s["required"] == ["tasks"]
    assert spec_s["properties"]["mode"]["enum"] == ["baseline", "preskill", "postskill"]
    assert spec_s["properties"]["trials"]["minimum"] == 1
    assert spec_s["properties"]["errorInjectionRate"]["maximum"] == 1.0
    assert spec_s["properties"]["artifacts"]["required"] == ["bucket"]

    def walk(node):  # every node has a type or preserves unknown fields (structural schema rule)
        assert "type" in node or node.get("x-kubernetes-preserve-unknown-fields"), node
        assert "$ref" not in node and "anyOf" not in node and "const" not in node
        for sub in (node.get("properties") or {}).values():
            walk(sub)
        if "items" in node:
            walk(node["items"])
        if isinstance(node.get("additionalProperties"), dict):
            walk(node["additionalProperties"])
    walk(schema)
    crd = yaml.safe_load((REPO / "crds" / "benchmarkruns.yaml").read_text())
    assert crd["spec"]["versions"][0]["subresources"] == {"status": {}}
    assert {c["name"] for c in crd["spec"]["versions"][0]["additionalPrinterColumns"]} >= {"Phase", "Done", "Mean", "Age"}


# ---------------------------------------------------------------- pod specs

def _params(**kw) -> PodParams:
    run_spec = BenchmarkRunSpec.model_validate({"tasks": {"inline": []}, "agent": {"harness": "codex", "model": "m1",
                                                                                  "args": {"x": 1}}})
    base = dict(name="tr-a1-agent", namespace="ns", trial="tr", trial_uid="u1", spec=spec(task="t1"), run_spec=run_spec,
                image="img:1", deadline_seconds=99, attempt=1, artifact_uri="s3://b/p/r/t1/0/a1/agent/",
                endpoint="http://s3:9000", credentials_secret="creds")
    return PodParams(**{**base, **kw})


def test_agent_pod_mounts_only_the_agent_bundle():
    p = agent_pod(_params())
    text = json.dumps(p)
    assert "grading" not in text and "grade" not in text
    cms = [v["configMap"]["name"] for v in p["spec"]["volumes"] if "configMap" in v]
    assert cms == ["r-t1-agent"]
    s = p["spec"]
    assert s["automountServiceAccountToken"] is False and s["restartPolicy"] == "Never"
    assert s["activeDeadlineSeconds"] == 99 and s["securityContext"]["runAsNonRoot"] is True
    c = s["containers"][0]
    assert c["command"][:3] == ["clawkube", "pod", "agent"] and c["command"][-4:] == ["--harness", "codex", "--model", "m1"]
    env = {e["name"]: e for e in c["env"]}
    assert env["CLAWKUBE_ARTIFACT_URI"]["value"] == "s3://b/p/r/t1/0/a1/agent/"
    assert env["AWS_SECRET_ACCESS_KEY"]["valueFrom"]["secretKeyRef"] == {"name": "creds", "key": "AWS_SECRET_ACCESS_KEY"}
    assert json.loads(env["CLAWKUBE_AGENT_ARGS"]["value"]) == {"x": 1}
    assert c["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert p["metadata"]["ownerReferences"][0]["kind"] == "TaskTrial"
    assert p["metadata"]["labels"]["clawkube.io/role"] == "agent"


def test_grading_pod_mounts_the_grading_bundle_and_fetches_agent_artifacts():
    p = grade_pod(_params(name="tr-a1-grade", artifact_uri="s3://b/p/r/t1/0/a1/grade1/"), "s3://b/p/r/t1/0/a1/agent/")
    cms = [v["configMap"]["name"] for v in p["spec"]["volumes"] if "configMap" in v]
    # + the agent bundle (agent material only) for WildClawBench's /app (tests/k8s/test_benchmark_mounts.py)
    assert cms == ["r-t1-grading", "r-t1-agent"]
    cmd = p["spec"]["containers"][0]["command"]
    assert cmd[:3] == ["clawkube", "pod", "grade"]
    assert cmd[cmd.index("--agent-artifacts") + 1] == "s3://b/p/r/t1/0/a1/agent/"


# ---------------------------------------------------------------- parsing and names

def test_parse_pod_reads_the_termination_message():
    obj = {"metadata": {"name": "p", "labels": {"clawkube.io/role": "agent"}, "creationTimestamp": "2025-01-01T00:00:00Z"},
           "spec": {"containers": [{"name": "agent"}]},
           "status": {"phase": "Succeeded", "startTime": "2025-01-01T00:00:05Z", "containerStatuses": [
               {"name": "agent", "state": {"terminated": {"exitCode": 0, "reason": "Completed",
                                                         "message": 'log line\n{"phase": "agent", "exit_code": 0}',
                                                         "finishedAt": "2025-01-01T00:01:00Z"}}}]}}
    p = parse_pod(obj)
    assert p.done and p.terminated.message == {"phase": "agent", "exit_code": 0}
    assert (p.terminated.finished_at - p.started_at).total_seconds() == 55


def test_parse_pod_unschedulable_and_waiting():
    obj = {"metadata": {"name": "p", "creationTimestamp": "2025-01-01T00:00:00Z", "deletionTimestamp": "2025-01-01T00:00:09Z"},
           "spec": {"containers": [{"name": "agent"}]},
           "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "message": "0/1 nodes"}],
                      "containerStatuses": [{"name": "agent", "state": {"waiting": {"reason": "ImagePullBackOff"}}}]}}
    p = parse_pod(obj)
    assert p.unschedulable == "0/1 nodes" and p.waiting_reason == "ImagePullBackOff" and p.deleting and not p.done


def test_names_are_deterministic_and_dns_safe():
    assert trial_name("run", "wild-csv", 2) == "run-wild-csv-2"
    assert slug("Task_A") != slug("task-a")  # distinct ids never collide
    assert slug("Task_A") == slug("Task_A") and len(slug("x" * 200)) <= 40
    assert agent_pod_name("tr", 3) == "tr-a3-agent"
    assert grade_pod_name("tr", 1, 1) == "tr-a1-grade" and grade_pod_name("tr", 1, 2) == "tr-a1-grade-2"
    v = label_value("a" * 100)
    assert len(v) <= 63 and v[-1].isalnum()


# ---------------------------------------------------------------- settings

def test_settings_from_env():
    s = Settings.from_env({"CLAWKUBE_NAMESPACES": "a, b", "CLAWKUBE_METRICS_PORT": "9100",
                           "CLAWKUBE_MAX_CONCURRENT_PODS": "8", "CLAWKUBE_ARTIFACT_BUCKET": "res", "OTHER": "x"})
    assert s.namespaces == ["a", "b"] and s.metrics_port == 9100 and s.max_concurrent_pods == 8
    assert s.artifact_bucket == "res" and s.requeue_seconds == 5.0


def test_settings_empty_values_mean_unset():
    s = Settings.from_env({"CLAWKUBE_MAX_CONCURRENT_PODS": "", "CLAWKUBE_ARTIFACT_BUCKET": "", "CLAWKUBE_ARTIFACT_PREFIX": ""})
    assert s.max_concurrent_pods == 0 and s.artifact_bucket is None and s.artifact_prefix == ""


def test_settings_errors_name_the_variable():
    with pytest.raises(SettingsError, match="CLAWKUBE_METRICS_PORT"):
        Settings.from_env({"CLAWKUBE_METRICS_PORT": "not-a-port"})


def test_agent_pod_gets_the_task_services_as_sidecars():
    from clawkube.tasks.model import ServiceSpec
    svc = ServiceSpec(name="mail", command=["python", "-m", "clawkube.services", "mail"], port=8025, health_check="/health")
    p = agent_pod(_params(spec=spec().model_copy(update={"services": [svc]}), services=(svc,)))
    names = [c["name"] for c in p["spec"]["containers"]]
    assert names[0] == "agent" and any(n.startswith("svc-mail") for n in names[1:])
    assert "grading" not in json.dumps(p)


def test_reconciler_drops_gauges_of_deleted_runs():
    from prometheus_client import CollectorRegistry

    from clawkube.k8s.metrics import Metrics
    from clawkube.k8s.reconcile import Reconciler

    class NoRuns:
        def list_runs(self, ns):
            return []

        def list_trials(self, ns):
            return []

        def list_pods(self, ns):
            return []

    reg = CollectorRegistry()
    m = Metrics(reg)
    rec = Reconciler(NoRuns(), Settings(namespaces=["ns"]), m)
    m.queue_depth.labels("ns", "gone").set(3)
    m.trials.labels("ns", "gone", "queued").set(3)
    rec._seen = {("ns", "gone")}
    report = rec.run_once()
    assert report.runs == 0
    assert reg.get_sample_value("clawkube_queue_depth", {"namespace": "ns", "run": "gone"}) is None
    assert reg.get_sample_value("clawkube_trials", {"namespace": "ns", "run": "gone", "state": "queued"}) is None


def test_a_pass_survives_an_unreachable_apiserver():
    from kubernetes.client import ApiClient, Configuration
    from prometheus_client import CollectorRegistry

    from clawkube.k8s.kube import Kube
    from clawkube.k8s.metrics import Metrics
    from clawkube.k8s.reconcile import Reconciler
    from tests.cluster.controlplane import free_port

    cfg = Configuration()
    cfg.host, cfg.retries = f"https://127.0.0.1:{free_port()}", 0
    reg = CollectorRegistry()
    report = Reconciler(Kube(ApiClient(cfg)), Settings(namespaces=["x"]), Metrics(reg)).run_once()
    assert report.runs == 0
    assert reg.get_sample_value("clawkube_reconcile_errors_total", {"namespace": "x", "stage": "gather"}) == 1


def test_api_calls_without_their_own_timeout_get_a_bounded_one(monkeypatch, tmp_path):
    """A hung API connection fails its call (HTTPError, a retried pass) instead of stalling the reconcile loop."""
    from kubernetes.client import rest

    from clawkube.k8s.kube import REQUEST_TIMEOUT, api_client
    from clawkube.settings import Settings

    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:1'}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {token: t}}]\n")
    seen = []

    def fake_request(self, method, url, **kw):
        seen.append(kw.get("_request_timeout"))
        raise rest.ApiException(status=418, reason="seen")
    monkeypatch.setattr(rest.RESTClientObject, "request", fake_request)
    from kubernetes.client import CoreV1Api
    core = CoreV1Api(api_client(Settings(kubeconfig=str(kubeconfig))))
    for call in (lambda: core.list_namespaced_pod("ns"), lambda: core.list_namespaced_pod("ns", _request_timeout=3)):
        with pytest.raises(rest.ApiException):
            call()
    assert seen == [REQUEST_TIMEOUT, 3]
