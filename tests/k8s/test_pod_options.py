"""Operator settings that reach the trial pods: runtime class, model API Secret, per-harness images."""
from __future__ import annotations

import json

import pytest

from clawkube.agents.registry import get_agent
from clawkube.k8s.podspec import PodParams, agent_pod, grade_pod
from clawkube.runspec import BenchmarkRunSpec
from clawkube.settings import Settings, SettingsError
from clawkube.tasks.model import ServiceSpec
from tests.k8s.builders import spec


def _params(harness: str = "codex", **kw) -> PodParams:
    run_spec = BenchmarkRunSpec.model_validate({"tasks": {"inline": []}, "agent": {"harness": harness}})
    base = dict(name="tr-a1-agent", namespace="ns", trial="tr", trial_uid="u1", spec=spec(task="t1"),
                run_spec=run_spec, image="img:1", deadline_seconds=99, attempt=1, artifact_uri="s3://b/p/",
                runtime_class="gvisor", model_api_secret="model-keys")
    return PodParams(**{**base, **kw})


def test_agent_pod_runs_in_the_runtime_class_grading_pod_does_not():
    assert agent_pod(_params())["spec"]["runtimeClassName"] == "gvisor"
    assert "runtimeClassName" not in grade_pod(_params(name="tr-a1-grade"), "s3://b/p/agent/")["spec"]
    assert "runtimeClassName" not in agent_pod(_params(runtime_class=None))["spec"]


@pytest.mark.parametrize("harness", ["codex", "claude-code", "openclaw", "hermes", "nanobot"])
def test_model_api_secret_reaches_only_the_agent_container(harness):
    svc = ServiceSpec(name="mail", command=["python", "-m", "clawkube.services", "mail"], port=8025)
    pod = agent_pod(_params(harness, services=(svc,)))
    agent, *sidecars = pod["spec"]["containers"]
    assert agent["name"] == "agent" and "envFrom" not in agent  # never the whole Secret
    names = get_agent(harness).credential_env
    assert names and _from_secret(agent, "model-keys") == {k: k for k in names}  # each key the harness reads
    assert all(e["valueFrom"]["secretKeyRef"]["optional"] is True for e in agent["env"]
               if e.get("valueFrom", {}).get("secretKeyRef", {}).get("name") == "model-keys")
    assert sidecars and all("model-keys" not in json.dumps(c) for c in sidecars)
    assert all("model-keys" not in json.dumps(c) for c in pod["spec"]["initContainers"])
    assert "model-keys" not in json.dumps(grade_pod(_params(harness, name="tr-a1-grade"), "s3://b/p/agent/"))


def _from_secret(container: dict, secret: str) -> dict[str, str]:
    """env name -> Secret key, for the container's variables taken from `secret`."""
    assert all(s.get("secretRef", {}).get("name") != secret for s in container.get("envFrom", []))
    return {e["name"]: e["valueFrom"]["secretKeyRef"]["key"] for e in container["env"]
            if e.get("valueFrom", {}).get("secretKeyRef", {}).get("name") == secret}


@pytest.mark.parametrize("harness", ["hermes", "codex", "claude-code"])
def test_the_judge_key_in_the_model_api_secret_never_reaches_the_agent(harness):
    """The judge's key kept in the same Secret as the model keys: the grading pod gets it, the agent pod does not,
    even when the harness would read a variable of that very name (hermes: OPENROUTER_API_KEY)."""
    judge_key = get_agent(harness).credential_env[0]
    run_spec = BenchmarkRunSpec.model_validate({
        "tasks": {"inline": []}, "agent": {"harness": harness},
        "judge": {"baseUrl": "http://judge.example/v1", "model": "j1",
                  "apiKeySecret": {"name": "model-keys", "key": judge_key}}})
    agent = agent_pod(_params(harness, run_spec=run_spec))["spec"]["containers"][0]
    got = _from_secret(agent, "model-keys")
    assert judge_key not in got.values() and set(got) == set(get_agent(harness).credential_env) - {judge_key}
    grading = grade_pod(_params(harness, name="tr-a1-grade", run_spec=run_spec), "s3://b/p/agent/")
    assert judge_key in _from_secret(grading["spec"]["containers"][0], "model-keys").values()
    # a judge key in a Secret of its own does not take anything from the agent
    other = BenchmarkRunSpec.model_validate({**run_spec.model_dump(by_alias=True, exclude_none=True),
                                             "judge": {"baseUrl": "http://judge.example/v1", "model": "j1",
                                                       "apiKeySecret": {"name": "judge-keys", "key": judge_key}}})
    assert set(_from_secret(agent_pod(_params(harness, run_spec=other))["spec"]["containers"][0],
                            "model-keys")) == set(get_agent(harness).credential_env)


@pytest.mark.parametrize("harness", ["oracle", "nop", "script"])
def test_harnesses_without_credentials_get_no_model_api_secret(harness):
    """They pass no API key to their process, and a namespace without the Secret must still run them."""
    assert "model-keys" not in json.dumps(agent_pod(_params(harness)))


def test_no_secret_configured_no_env_from():
    c = agent_pod(_params(model_api_secret=None))["spec"]["containers"][0]
    assert "envFrom" not in c and "model-keys" not in json.dumps(c)


def test_harness_images_from_env_and_image_choice():
    s = Settings.from_env({"CLAWKUBE_HARNESS_IMAGES": "codex=reg/codex:1, claude-code = reg/claude:2,",
                           "CLAWKUBE_AGENT_IMAGE": "reg/agent:3"})
    assert s.harness_images == {"codex": "reg/codex:1", "claude-code": "reg/claude:2"}
    assert s.agent_image_for("codex") == "reg/codex:1"
    assert s.agent_image_for("codex", "mine:9") == "mine:9"  # the run's spec.agent.image wins
    assert s.agent_image_for("oracle") == s.agent_image_for("oracle", "") == "reg/agent:3"
    assert Settings.from_env({"CLAWKUBE_HARNESS_IMAGES": ""}).harness_images == {}


@pytest.mark.parametrize("value", ["codex", "=img", "codex=", "a=b,c"])
def test_bad_harness_images_name_the_variable_and_item(value):
    with pytest.raises(SettingsError, match="CLAWKUBE_HARNESS_IMAGES: item"):
        Settings.from_env({"CLAWKUBE_HARNESS_IMAGES": value})


def test_runtime_class_and_secret_settings():
    s = Settings.from_env({"CLAWKUBE_AGENT_RUNTIME_CLASS": "gvisor", "CLAWKUBE_MODEL_API_SECRET": "keys"})
    assert s.agent_runtime_class == "gvisor" and s.model_api_secret == "keys"
    unset = Settings.from_env({"CLAWKUBE_AGENT_RUNTIME_CLASS": "", "CLAWKUBE_MODEL_API_SECRET": ""})
    assert unset.agent_runtime_class is None and unset.model_api_secret is None


class _RecordingKube:
    def __init__(self):
        self.pods: list[dict] = []

    def create_pod(self, ns, manifest):
        self.pods.append(manifest)
        return True


@pytest.mark.parametrize("run_image, harness, want", [
    (None, "codex", "reg/codex:1"), ("mine:9", "codex", "mine:9"), (None, "nop", "reg/agent:3")])
def test_actuator_creates_agent_pods_with_the_settings(run_image, harness, want):
    from prometheus_client import CollectorRegistry

    from clawkube.k8s.act import Actuator
    from clawkube.k8s.actions import CreatePod
    from clawkube.k8s.metrics import Metrics
    from tests.k8s.builders import T0, run_obs, trial

    settings = Settings(agent_image="reg/agent:3", grader_image="reg/grader:3", harness_images={"codex": "reg/codex:1"},
                        agent_runtime_class="gvisor", model_api_secret="model-keys")
    kube = _RecordingKube()
    run = run_obs(trial_objs=[trial()], agent={"harness": harness, "image": run_image})
    failed = Actuator(kube, settings, Metrics(CollectorRegistry()), T0).execute(run, [
        CreatePod(trial="r-t1-0", role="agent", name="r-t1-0-a1-agent", attempt=1, artifact_uri="s3://b/a/"),
        CreatePod(trial="r-t1-0", role="grade", name="r-t1-0-a1-grade", attempt=1, artifact_uri="s3://b/g/",
                  agent_artifacts_uri="s3://b/a/")])
    assert failed == 0
    agent, grade = kube.pods
    assert agent["spec"]["containers"][0]["image"] == want and agent["spec"]["runtimeClassName"] == "gvisor"
    assert bool(_from_secret(agent["spec"]["containers"][0], "model-keys")) == (harness == "codex")
    assert grade["spec"]["containers"][0]["image"] == "reg/grader:3"
    assert "runtimeClassName" not in grade["spec"] and "model-keys" not in json.dumps(grade)


def _writable_paths(pod: dict, container: dict) -> set[str]:
    """Mount paths of a container backed by an emptyDir (the only writable places with a read-only root)."""
    empty = {v["name"] for v in pod["spec"]["volumes"] if "emptyDir" in v}
    return {m["mountPath"] for m in container["volumeMounts"] if m["name"] in empty and not m.get("readOnly")}


def test_every_trial_container_has_a_read_only_root_and_writable_scratch():
    svc = ServiceSpec(name="mail", command=["python", "-m", "clawkube.services", "mail"], port=8025)
    pods = [agent_pod(_params(services=(svc,))), grade_pod(_params(name="tr-a1-grade"), "s3://b/p/agent/")]
    for pod in pods:
        containers = pod["spec"]["initContainers"] + pod["spec"]["containers"]
        for c in containers:
            sc = c["securityContext"]
            assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False, c["name"]
            assert "/tmp" in _writable_paths(pod, c), c["name"]
        main = pod["spec"]["containers"][0]
        home = {e["name"]: e.get("value") for e in main["env"]}["HOME"]  # uid 65534 needs a writable HOME
        assert {home, "/clawkube/work", "/clawkube/out"} <= _writable_paths(pod, main)
    agent = pods[0]
    tmp_of = {c["name"]: next(m["name"] for m in c["volumeMounts"] if m["mountPath"] == "/tmp")
              for c in agent["spec"]["containers"]}
    assert tmp_of["agent"] != tmp_of["svc-mail"]  # the agent cannot touch a service's scratch files


@pytest.mark.apiserver
@pytest.mark.parametrize("resources, ok", [({"cpu": "250m", "memory": "1Gi"}, True), ({"cpu": "500M"}, False),
                                           ({"memory": "512m"}, False), ({"memory": "lots"}, False)])
def test_the_apiserver_checks_resource_quantities(cluster, resources, ok):
    """The CRD's patterns (runspec.Resources) make the apiserver refuse what the pods' resources would refuse."""
    from kubernetes.client.exceptions import ApiException

    from tests.k8s.sample import run_manifest

    manifest = run_manifest(f"res-{len(resources)}-{ok}".lower(), ["alpha"], "b", "http://127.0.0.1:1")
    manifest["spec"]["resources"] = resources
    create = lambda: cluster.custom.create_namespaced_custom_object(  # noqa: E731
        "clawkube.io", "v1alpha1", cluster.ns, "benchmarkruns", manifest)
    if ok:
        create()
        assert cluster.run(manifest["metadata"]["name"])["spec"]["resources"] == resources
    else:
        with pytest.raises(ApiException) as e:
            create()
        assert e.value.status == 422 and "resources" in (e.value.body or "")


def test_spec_agent_api_reaches_the_agent_container_only():
    run_spec = BenchmarkRunSpec.model_validate({"tasks": {"inline": []}, "agent": {
        "harness": "codex", "model": "m", "api": {"baseUrl": "http://10.88.0.7:8765",
                                                   "apiKeySecret": {"name": "llm", "key": "token"}}}})
    svc = ServiceSpec(name="mail", command=["python", "-m", "clawkube.services", "mail"], port=8025)
    pod = agent_pod(_params(run_spec=run_spec, services=(svc,)))
    agent, *sidecars = pod["spec"]["containers"]
    env = {e["name"]: e for e in agent["env"]}
    assert env["CLAWKUBE_MODEL_BASE_URL"]["value"] == "http://10.88.0.7:8765"
    assert env["CLAWKUBE_MODEL_API_KEY"]["valueFrom"] == {"secretKeyRef": {"name": "llm", "key": "token"}}
    assert not any("CLAWKUBE_MODEL" in json.dumps(c) for c in sidecars)
    grading = json.dumps(grade_pod(_params(run_spec=run_spec, name="tr-a1-grade"), "s3://b/p/agent/"))
    assert "CLAWKUBE_MODEL_BASE_URL" not in grading and '"llm"' not in grading
