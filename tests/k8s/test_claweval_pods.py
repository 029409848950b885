"""The pods of CLAW-Eval trials on a cluster (pure, no checkout needed): the agent pod gets the "svc-claweval"
sidecar in the run's CLAW-Eval services image (never the grading image, never the judge key in the agent
container), the grading pod runs in the run's CLAW-Eval image; other formats and stages are unchanged; staging
refuses CLAW-Eval tasks without the image with a message saying what to do."""
from __future__ import annotations

from pathlib import Path

import pytest

from clawkube.benchmarks.claweval import sidecar
from clawkube.k8s import staging
from clawkube.k8s.model import TaskTrialSpec
from clawkube.k8s.podspec import PodParams, agent_pod, claweval_services_image, grade_pod, grading_image
from clawkube.runspec import BenchmarkRunSpec, services_image_of
from clawkube.services import sidecars

REPO = Path(__file__).resolve().parents[2]
IMAGE = "reg.example/clawkube-claweval:1.2"
SERVICES = "reg.example/clawkube-claweval-services:1.2"
JUDGE = {"baseUrl": "http://judge:8000/v1", "model": "j-1", "apiKeySecret": {"name": "judge", "key": "k"}}


def run_spec(**kw) -> BenchmarkRunSpec:
    return BenchmarkRunSpec.model_validate({"tasks": {"configMap": "t"}, "agent": {"harness": "script"},
                                            "errorInjectionRate": 0.3, "seed": 5, "judge": JUDGE, **kw})


def params(fmt: str = "claw-eval", stage: str = "execution", services_image: str | None = SERVICES,
           **kw) -> PodParams:
    spec = TaskTrialSpec(run="r", task_id="T001zh_email_triage", task_format=fmt, trial_index=2, content_hash="h",
                         agent_bundle="ab", grading_bundle="gb", timeout_seconds=60, grader_timeout_seconds=30)
    return PodParams(name="tr-a1-agent", namespace="ns", trial="tr", trial_uid="u", spec=spec,
                     run_spec=run_spec(clawEval={"image": IMAGE}), image="agent:1", deadline_seconds=99, attempt=1,
                     artifact_uri=None, stage=stage, claweval_services_image=services_image, **kw)


def _names(pod) -> list[str]:
    return [c["name"] for c in pod["spec"]["containers"]]


def _env(c) -> dict:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in c["env"]}


@pytest.mark.parametrize("fmt,stage,services_image,sidecar_expected", [
    ("claw-eval", "execution", SERVICES, True),
    ("claw-eval", "execution", None, False),  # no image: no sidecar (staging refuses such runs first)
    ("wildclawbench", "execution", SERVICES, False),
    ("claw-eval", "authoring", SERVICES, False),  # skill-writing stages see no services
])
def test_sidecar_only_for_claweval_executions(fmt, stage, services_image, sidecar_expected):
    pod = agent_pod(params(fmt, stage, services_image))
    assert (sidecar.CONTAINER in _names(pod)) is sidecar_expected
    main = pod["spec"]["containers"][0]
    assert (sidecar.ADMIN_PORT_ENV in _env(main)) is sidecar_expected


def test_the_sidecar_container():
    pod = agent_pod(params())
    assert _names(pod) == ["agent", sidecar.CONTAINER]
    main, svc = pod["spec"]["containers"]
    assert svc["image"] == SERVICES and main["image"] == "agent:1"
    assert svc["command"] == ["python", "-m", "clawkube.benchmarks.claweval.sidecar", "--manifest",
                              "/clawkube/bundle/task.json"]
    env = _env(svc)
    assert env["CLAWKUBE_ERROR_INJECTION_RATE"] == "0.3" and env["CLAWKUBE_SEED"] == "5"
    assert env["CLAWKUBE_TRIAL_KEY"] == "T001zh_email_triage/2"  # as the local runner keys fault injection
    assert env[sidecars.TOKEN_ENV] == sidecars.TOKEN_FILE
    # the simulated user's model (the judge) reaches the sidecar only, never the agent container
    assert env["CLAWKUBE_JUDGE_MODEL"] == "j-1"
    assert env["CLAWKUBE_JUDGE_API_KEY"] == {"secretKeyRef": {"name": "judge", "key": "k"}}
    assert not any(k.startswith("CLAWKUBE_JUDGE") for k in _env(main))
    assert _env(main)[sidecar.ADMIN_PORT_ENV] == str(sidecar.ADMIN_PORT)
    mounts = {m["name"]: m for m in svc["volumeMounts"]}
    assert mounts["bundle"]["readOnly"] and mounts[sidecars.VOLUME_NAME]["readOnly"]
    assert mounts["claweval-tmp"]["mountPath"] == "/tmp"  # its own /tmp (dispatch log), apart from the agent's
    assert "claweval-tmp" not in {m["name"] for m in main["volumeMounts"]}
    assert svc["securityContext"]["readOnlyRootFilesystem"] and svc["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert svc["resources"]["limits"]["memory"] and svc["resources"]["requests"]["cpu"]
    # the grading bundle is never in the agent pod
    assert {v.get("configMap", {}).get("name") for v in pod["spec"]["volumes"]} - {None} == {"ab"}


@pytest.mark.parametrize("fmt,ce,grading,services", [
    ("claw-eval", {"image": IMAGE}, IMAGE, SERVICES),
    ("claw-eval", {"image": IMAGE, "servicesImage": "s:2"}, IMAGE, "s:2"),
    ("claw-eval", None, "grader:1", None),
    ("wildclawbench", {"image": IMAGE}, "grader:1", None),
])
def test_images_of_claweval_trials(fmt, ce, grading, services):
    rs = run_spec(**({"clawEval": ce} if ce else {}))
    assert grading_image(rs, fmt, "grader:1") == grading
    assert claweval_services_image(rs, fmt) == services


def test_grading_pod_holds_no_sidecar():
    pod = grade_pod(params(), "s3://b/agent/")
    assert _names(pod) == ["grade"]


@pytest.mark.parametrize("image,expected", [
    ("local.test/clawkube-claweval:dev", "local.test/clawkube-claweval-services:dev"),
    ("reg:5000/team/ce", "reg:5000/team/ce-services"),
    ("reg/ce@sha256:abc", "reg/ce-services@sha256:abc"),
])
def test_services_image_named_after_the_image(image, expected):
    assert services_image_of(image) == expected
    assert run_spec(clawEval={"image": image}).claw_eval.services_image_ref() == expected
    assert run_spec(clawEval={"image": image, "servicesImage": "x/y:1"}).claw_eval.services_image_ref() == "x/y:1"


def _claweval_task_files() -> dict[str, bytes]:
    """A minimal task in CLAW-Eval's format (no checkout: the operator never has one)."""
    yaml = ("task_id: T900_probe\ntask_name: probe\ncategory: probe\nprompt:\n  text: say hi\n"
            "environment:\n  timeout_seconds: 60\n")
    return {"T900_probe/task.yaml": yaml.encode()}


def test_staging_without_the_image_fails_the_run_with_what_to_do(tmp_path):
    spec = BenchmarkRunSpec.model_validate({"tasks": {"configMap": "t"}})
    with pytest.raises(staging.StagingError) as e:
        staging.stage("r", spec, lambda name: _claweval_task_files(), lambda uri: {}, workdir=tmp_path)
    assert e.value.reason == "NoTasks"
    assert "images/build.sh --claw-eval" in e.value.message and "spec.clawEval.image" in e.value.message


def test_staging_with_the_image_points_the_task_at_its_checkout(tmp_path):
    from clawkube.lifecycle.bundle import AGENT_MANIFEST, extract
    import json

    spec = BenchmarkRunSpec.model_validate({"tasks": {"configMap": "t"}, "clawEval": {"image": IMAGE}})
    result = staging.stage("r", spec, lambda name: _claweval_task_files(), lambda uri: {}, workdir=tmp_path)
    assert [t.ref.format for t in result.tasks] == ["claw-eval"] and not result.errors
    extract(result.tasks[0].agent_bundle, tmp_path / "b")
    m = json.loads((tmp_path / "b" / AGENT_MANIFEST).read_text())
    assert m["setup_error"] is None and m["benchmark_data"]["checkout"] == "/opt/claw-eval"


def test_services_secret_reaches_the_sidecar_only():
    p = params()
    p = PodParams(**{**p.__dict__, "run_spec": run_spec(clawEval={"image": IMAGE, "servicesSecret": "web-keys"})})
    pod = agent_pod(p)
    main, svc = pod["spec"]["containers"]
    assert svc["envFrom"] == [{"secretRef": {"name": "web-keys"}}]
    assert "envFrom" not in main and "web-keys" not in str(main)
    assert "web-keys" not in str(grade_pod(p, "s3://b/agent/"))
    assert "envFrom" not in agent_pod(params())["spec"]["containers"][1]
