"""The CLAW-Eval environment sidecar (benchmarks/claweval/sidecar.py) and its agent-pod client (podside.py), run as
processes here exactly as the agent pod runs them: the sidecar reads the task from the staged agent bundle's
manifest, takes its token from the shared file, starts the real mocks behind the gateway on the task's own ports;
the client hands over the token, gets the URLs / MCP tools / prompt, fetches the evidence and stops it. Needs a
checkout ($CLAWKUBE_UPSTREAM_CLAWEVAL) and a Python with its requirements; skipped with the reason otherwise."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from clawkube.benchmarks import registry
from clawkube.benchmarks.base import EnvironmentStartError
from clawkube.benchmarks.claweval.checkout import CHECKOUT_ENV, PYTHON_ENV
from clawkube.benchmarks.claweval.load import load
from clawkube.benchmarks.claweval.podside import SidecarEnvironment
from clawkube.benchmarks.claweval.sidecar import TOKEN_HEADER
from clawkube.lifecycle.bundle import AGENT_MANIFEST, agent_bundle, extract
from clawkube.runspec import BenchmarkRunSpec
from clawkube.services.sidecars import TOKEN_ENV
from tests.test_claweval_upstream import python, root  # noqa: F401  (fixtures: the checkout and its Python)

OPERATOR = Path(__file__).resolve().parents[1] / "operator"
SPEC = BenchmarkRunSpec.model_validate({"tasks": {"configMap": "t"}, "clawEval": {"image": "reg/ce:1"}})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _staged_manifest(root: Path, task_dir: str, dest: Path) -> Path:
    """The agent bundle's manifest as the operator stages the task for a cluster (cluster_task), unpacked."""
    task = load(root / "tasks" / task_dir)
    staged = registry.get(task.format).cluster_task(task, SPEC)
    extract(agent_bundle(staged, "nop"), dest)
    return dest / AGENT_MANIFEST


def _sidecar(root: Path, python: str, manifest: Path, token_file: Path, port: int, rate: float = 0.0):
    env = {**os.environ, CHECKOUT_ENV: str(root), PYTHON_ENV: python, TOKEN_ENV: str(token_file),
           "PYTHONPATH": str(OPERATOR), "CLAWKUBE_ERROR_INJECTION_RATE": str(rate), "CLAWKUBE_SEED": "7",
           "CLAWKUBE_TRIAL_KEY": "T/0"}
    return subprocess.Popen([sys.executable, "-m", "clawkube.benchmarks.claweval.sidecar", "--manifest", str(manifest),
                             "--admin-port", str(port), "--private", str(manifest.parent.parent / "private")],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _post(url: str, body: dict) -> int:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def test_cluster_task_needs_the_image_and_points_at_its_checkout(root):
    task = load(root / "tasks" / "T001zh_email_triage")
    plugin = registry.get(task.format)
    with pytest.raises(ValueError, match=r"images/build.sh --claw-eval.*spec.clawEval.image"):
        plugin.cluster_task(task, BenchmarkRunSpec.model_validate({"tasks": {"configMap": "t"}}))
    staged = plugin.cluster_task(task, SPEC)
    assert staged.setup_error is None and staged.extra["checkout"] == "/opt/claw-eval"
    assert staged.extra["grading_only_paths"] == []


def test_sidecar_runs_the_task_environment_for_the_pod(root, python, tmp_path):
    manifest = _staged_manifest(root, "T029zh_cross_service_meeting", tmp_path / "bundle")
    token_file, port = tmp_path / "services" / "admin-token", _free_port()
    token_file.parent.mkdir()
    proc = _sidecar(root, python, manifest, token_file, port)
    client = SidecarEnvironment(token_file, multi_turn=False, admin_port=port, ready_timeout=120)
    try:
        client.start()
        assert not token_file.exists()  # gone before the agent starts
        # the gateway on the task's own ports: the URLs its tools declare work as written
        assert client.urls == {"gmail": "http://127.0.0.1:9100", "contacts": "http://127.0.0.1:9103",
                               "calendar": "http://127.0.0.1:9101"}
        setup = client.agent_setup(tmp_path)
        tools = json.loads((tmp_path / "claweval-tools.json").read_text())
        assert {t["name"] for t in tools["tools"]} >= {"contacts_search"} and setup.mcp_servers
        url = next(t["url"] for t in tools["tools"] if t["name"] == "contacts_search")
        assert _post(url, {"query": "赵磊"}) == 200
        # the admin API wants the token
        req = urllib.request.Request(f"http://127.0.0.1:{port}/evidence", headers={TOKEN_HEADER: "guess"})
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=5)
        assert e.value.code == 403
        out = tmp_path / "out"
        client.collect(out)
        assert {p.name for p in (out / "audit").iterdir()} == {"gmail.json", "contacts.json", "calendar.json"}
        audit = json.loads((out / "audit" / "contacts.json").read_text())
        assert audit["calls"][-1]["endpoint"] == "/contacts/search"
        d = [json.loads(x) for x in (out / "dispatches.jsonl").read_text().splitlines()]
        assert [(x["tool_name"], x["response_status"]) for x in d] == [("contacts_search", 200)]
    finally:
        client.stop()
    assert proc.wait(timeout=30) == 0, proc.stdout.read()


def test_a_sidecar_that_cannot_start_the_task_says_why(root, python, tmp_path):
    manifest = _staged_manifest(root, "T001zh_email_triage", tmp_path / "bundle")
    m = json.loads(manifest.read_text())
    m["benchmark_data"]["task_dir"] = "no-such-task"
    manifest.write_text(json.dumps(m))
    token_file, port = tmp_path / "admin-token", _free_port()
    proc = _sidecar(root, python, manifest, token_file, port)
    client = SidecarEnvironment(token_file, multi_turn=False, admin_port=port, ready_timeout=60)
    try:
        with pytest.raises(EnvironmentStartError, match="no tasks/no-such-task/task.yaml"):
            client.start()
    finally:
        client.stop()
    assert proc.wait(timeout=30) == 0


def test_a_supervisor_that_fails_before_start_still_ends_the_sidecar(root, python, tmp_path):
    """Kubernetes 1.20 has no native sidecars: the pod completes only when svc-claweval ends, also when the agent
    container's supervisor failed before it handed over the token."""
    manifest = _staged_manifest(root, "T001zh_email_triage", tmp_path / "bundle")
    token_file, port = tmp_path / "admin-token", _free_port()
    proc = _sidecar(root, python, manifest, token_file, port)
    SidecarEnvironment(token_file, multi_turn=False, admin_port=port).stop()
    assert proc.wait(timeout=60) == 0
    assert not token_file.exists()
