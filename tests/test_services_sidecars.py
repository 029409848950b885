"""Services on the cluster: the sidecar containers added to the agent pod (pure), and `clawkube pod agent`
driving sidecar processes through the token handshake, reset, audit collection and shutdown."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
import sys
from pathlib import Path

import pytest

from clawkube import pod
from clawkube.contracts import termination
from clawkube.k8s.model import TaskTrialSpec
from clawkube.k8s.podspec import PodParams, agent_pod
from clawkube.lifecycle import bundle as bundles
from clawkube.runspec import BenchmarkRunSpec
from clawkube.services import sidecars
from clawkube.benchmarks.evoclaw import protocol
from clawkube.services.local import free_port
from clawkube.tasks.model import GraderSpec, ServiceSpec, TaskSpec

REPO = Path(__file__).resolve().parents[1]
_TODOS = {"todos": [{"id": "t1", "title": "Renew the TLS certificate", "tags": ["ops"], "due": "2025-06-10"},
                    {"id": "t2", "title": "Update the on-call rota", "tags": ["ops"], "due": "2025-06-20"}]}


def _todo_task() -> TaskSpec:
    """A task with one of this project's own mock services (no benchmark format declares them any more: the
    generic sidecar machinery is tested with a TaskSpec built here)."""
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="todo-task-"))
    (folder / "todo.json").write_text(json.dumps(_TODOS))
    return TaskSpec(id="claw-todo-close", name="todo", format="evoclawbench", source_path=folder,
                    prompt="close t1 via $TODO_API_URL", grader=GraderSpec(inline_code="def grade():\n    return {}\n"),
                    fixtures=[folder / "todo.json"],
                    services=[ServiceSpec(name="todo", port=9103, health_check="/health", reset_endpoint="/_admin/reset",
                                          command=["python", "-m", "clawkube.services", "todo", "--port", "9103",
                                                   "--fixtures", "fixtures"])])


TODO_TASK = _todo_task()


def params(**kw) -> PodParams:
    run_spec = BenchmarkRunSpec.model_validate({"tasks": {"inline": []}, "agent": {"harness": "script"},
                                                "errorInjectionRate": 0.25, "seed": 9})
    spec = TaskTrialSpec(run="r", task_id="claw-todo-close", trial_index=3, content_hash="h", agent_bundle="ab",
                         grading_bundle="gb", timeout_seconds=60, grader_timeout_seconds=30)
    base = dict(name="tr-a1-agent", namespace="ns", trial="tr", trial_uid="u1", spec=spec, run_spec=run_spec,
                image="img:1", deadline_seconds=99, attempt=1, artifact_uri=None)
    return PodParams(**{**base, **kw})


def test_agent_pod_without_services_is_unchanged():
    p = agent_pod(params())
    assert [c["name"] for c in p["spec"]["containers"]] == ["agent"]
    assert sidecars.VOLUME_NAME not in {v["name"] for v in p["spec"]["volumes"]}


def test_agent_pod_gets_one_sidecar_per_service():
    p = agent_pod(params(services=tuple(TODO_TASK.services)))
    agent, svc = p["spec"]["containers"]
    assert svc["name"] == "svc-todo" and svc["image"] == "img:1"
    assert svc["command"] == ["python", "-m", "clawkube.services", "todo", "--port", "9103",
                              "--fixtures", "/clawkube/bundle/services/fixtures"]
    assert svc["ports"][0]["containerPort"] == 9103 and svc["workingDir"] == "/clawkube/bundle/services/fixtures"
    env = {e["name"]: e["value"] for e in svc["env"]}
    assert env == {"CLAWKUBE_SERVICE_NAME": "todo", "CLAWKUBE_SERVICE_ADMIN_TOKEN_FILE": sidecars.TOKEN_FILE,
                   "CLAWKUBE_ERROR_INJECTION_RATE": "0.25", "CLAWKUBE_SEED": "9",
                   "CLAWKUBE_TRIAL_KEY": "claw-todo-close/3"}  # the same key the local runner uses
    mounts = {m["name"]: m for m in svc["volumeMounts"]}
    assert mounts["bundle"]["readOnly"] and mounts[sidecars.VOLUME_NAME]["readOnly"]
    assert svc["securityContext"]["capabilities"] == {"drop": ["ALL"]} and svc["resources"]["limits"]
    assert sidecars.MOUNT in agent["volumeMounts"]
    assert {"name": sidecars.TOKEN_ENV, "value": sidecars.TOKEN_FILE} in agent["env"]
    assert sidecars.VOLUME in p["spec"]["volumes"]
    assert p["spec"]["automountServiceAccountToken"] is False


def _start_sidecar(container: dict, token_file: Path, cwd: Path) -> subprocess.Popen:
    """Run a sidecar container's command as the kubelet would (its env, its working dir)."""
    env = {e["name"]: e["value"] for e in container["env"]}
    env.update(CLAWKUBE_SERVICE_ADMIN_TOKEN_FILE=str(token_file), PATH=os.environ["PATH"],
               PYTHONPATH=str(REPO / "operator"))
    argv = [sys.executable, *container["command"][1:]]
    return subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


@pytest.fixture
def pod_layout(tmp_path: Path):
    port = free_port()
    task = TODO_TASK.model_copy(update={"services": [TODO_TASK.services[0].model_copy(update={"port": port})]})
    bdir = tmp_path / "bundle"
    bundles.extract(bundles.agent_bundle(task, "script"), bdir)
    fixtures = bdir / bundles.SERVICE_FIXTURES
    assert (fixtures / "todo.json").is_file()
    token_file = tmp_path / "svc" / "admin-token"
    token_file.parent.mkdir()
    (container,) = sidecars.sidecar_containers(task.services, image="i", image_pull_policy="Never",
                                               bundle_mount={"name": "bundle", "mountPath": str(bdir)},
                                               fixtures_dir=str(fixtures), trial_key="claw-todo-close/0",
                                               error_injection_rate=0.0, seed=0)
    proc = _start_sidecar(container, token_file, fixtures)
    yield bdir, token_file, proc
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def _pod_args(tmp_path: Path, bdir: Path) -> argparse.Namespace:
    return argparse.Namespace(bundle=str(bdir), workspace=str(tmp_path / "work" / "workspace"), out=str(tmp_path / "out"),
                              harness="script", model=None, args_json="{}", timeout=60,
                              termination_log=str(tmp_path / "termination-log"))


def test_pod_agent_drives_the_sidecars(tmp_path: Path, pod_layout, monkeypatch):
    bdir, token_file, proc = pod_layout
    commands = ["env | grep -ci token; true",
                f"test -e {bdir / bundles.SERVICES_DIR} && echo present || echo gone",
                "curl -s -X PATCH $TODO_API_URL/todos/t1 -H 'Content-Type: application/json' -d '{\"done\": true}'; echo"]
    monkeypatch.setenv("CLAWKUBE_AGENT_ARGS", json.dumps({"commands": commands}))
    monkeypatch.setenv(sidecars.TOKEN_ENV, str(token_file))
    monkeypatch.delenv("CLAWKUBE_ARTIFACT_URI", raising=False)
    monkeypatch.delenv("CLAWKUBE_MODE", raising=False)
    assert pod.main_agent(_pod_args(tmp_path, bdir)) == 0
    summary = termination.parse(json.loads((tmp_path / "termination-log").read_text()))
    assert summary.error_kind is None and summary.exit_code == 0, summary
    log = json.loads((tmp_path / "out" / "audit" / "todo.json").read_text())
    assert [(c["method"], c["path"], c["response"]["status"]) for c in log["calls"]] == [("PATCH", "/todos/t1", 200)]
    events = [json.loads(x) for x in (tmp_path / "out" / "transcript.jsonl").read_text().splitlines()]
    outputs = [e["content"].strip() for e in events if e["type"] == "tool_result"]
    assert outputs[0] == "0"  # no token in the agent's env ...
    assert outputs[1] == "gone"  # ... and the fixtures were removed before it started
    assert not token_file.exists()
    proc.wait(timeout=10)  # shut down by pod agent, so the pod can complete
    assert proc.returncode == 0


def test_pod_agent_authoring_stage_starts_no_service_and_uploads_only_skills(tmp_path: Path, pod_layout, monkeypatch):
    """A skill-writing stage pod (PreSkill authoring): the task's services are not used, the workspace is a scratch
    copy of the task's workspace (this task has no files), and --out holds the transcript and the skills it wrote."""
    bdir, token_file, proc = pod_layout
    commands = ['ls -A | wc -l',
                'mkdir -p "$CLAWKUBE_SKILLS_DIR/todo" && echo "close t1" > "$CLAWKUBE_SKILLS_DIR/todo/SKILL.md"',
                'env | grep -c _API_URL; true']
    monkeypatch.setenv("CLAWKUBE_AGENT_ARGS", json.dumps({"authoring_commands": commands}))
    monkeypatch.setenv(sidecars.TOKEN_ENV, str(token_file))
    monkeypatch.delenv("CLAWKUBE_ARTIFACT_URI", raising=False)
    args = _pod_args(tmp_path, bdir)
    args.stage = "authoring"
    assert pod.main_agent(args) == 0
    summary = termination.parse(json.loads((tmp_path / "termination-log").read_text()))
    assert summary.stage == "authoring" and summary.error_kind is None, summary
    out = tmp_path / "out"
    assert (out / "skills" / "todo" / "SKILL.md").read_text() == "close t1\n"
    assert not (out / "workspace.tar.gz").exists() and not (out / "audit").exists()
    events = [json.loads(x) for x in (out / "transcript.jsonl").read_text().splitlines()]
    assert events[0]["content"].startswith(protocol.PRESKILL_AUTHOR_PREFIX)
    assert [e["content"].strip() for e in events if e["type"] == "tool_result"] == ["1", "", "0"]  # standup.txt
    time.sleep(0.5)
    assert proc.poll() is None  # the sidecar was left alone: never handed a token, reset or shut down
