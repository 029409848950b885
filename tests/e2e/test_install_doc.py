"""docs/install.md's "On the project's test cluster" section, run verbatim on the single-node cluster: the chart
installed with helm, `rollout status` (readiness), `helm test`, the sample tasks staged from S3, the run to
Succeeded with its summary.json in S3; then its clean-up block, after which nothing of the release is left
(the helm test pod included).

Its ```sh blocks run, in order, in one bash session from the checkout (so `export`s carry over), with CLUSTER set to
the running cluster's state folder (the doc's `${CLUSTER:-...}` keeps it); the block holding `helm uninstall` is the
clean-up and always runs at the end.
"""
from __future__ import annotations

import json
import os
import re
import socket
import subprocess
from pathlib import Path

import pytest

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "install.md"
SECTION = "## On the project's test cluster"
NAMESPACES = ("clawkube-system", "bench")


def sample_task_count() -> int:
    """How many tasks `tasks/` holds (the doc's run stages all of them, one trial each): counted by the loader,
    not written down, so adding or removing a sample task does not break this test."""
    from clawkube.benchmarks.loader import load_tasks
    report = load_tasks(REPO / "tasks")
    assert report.tasks and not report.errors, report.errors
    return len(report.tasks)


def section_blocks(text: str) -> list[str]:
    """The ```sh blocks of the test-cluster section, in order."""
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    body = text[start:end if end >= 0 else len(text)]
    return re.findall(r"^```sh\n(.*?)^```$", body, flags=re.S | re.M)


def test_section_blocks_are_found():
    blocks = section_blocks(DOC.read_text())
    assert len(blocks) >= 3 and any("helm uninstall" in b for b in blocks)
    assert any("tests/cluster/up.sh" in b for b in blocks) and any("kubectl apply" in b for b in blocks)


def _port_free(host: str, port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((host, port))
            return True
        except OSError:
            return False


def _bash(script: str, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=timeout)


def _kubectl(env: dict[str, str], *args: str) -> str:
    p = subprocess.run(["kubectl", *args], env=env, capture_output=True, text=True, timeout=120)
    return p.stdout if p.returncode == 0 else ""


def test_install_doc_on_the_test_cluster(cluster, cluster_images):
    if cluster.state is None:
        pytest.skip("the cluster was given by CLAWKUBE_CLUSTER_KUBECONFIG: the doc's up.sh step needs its state folder")
    blocks = section_blocks(DOC.read_text())
    cleanup = next(b for b in blocks if "helm uninstall" in b)
    steps = [b for b in blocks if b is not cleanup]
    helm_dir = Path.home() / ".cache" / "clawkube" / "helm"
    env = {**os.environ, "CLUSTER": str(cluster.state), "KUBECONFIG": str(cluster.kubeconfig),
           "PATH": f"{helm_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    busy = [f"{h}:{p}" for h, p in (("10.88.0.1", 9000), ("0.0.0.0", 18080), ("0.0.0.0", 19090))
            if not _port_free(h, p)]
    if busy:
        pytest.fail(f"ports the doc uses are taken: {busy} (an earlier run's S3 server or operator? run the doc's "
                    f"clean-up block)")
    left = [ns for ns in NAMESPACES if _kubectl(env, "get", "namespace", ns, "-o", "name")]
    if left:
        pytest.fail(f"namespaces {left} exist already: an earlier run's leftovers (the doc's clean-up block)")

    script = "\n".join(steps)
    expected = sample_task_count()
    try:
        p = _bash(script, env, timeout=2400)
        out = p.stdout + p.stderr
        assert p.returncode == 0, f"docs/install.md's test-cluster steps failed ({p.returncode}):\n{out[-6000:]}"
        assert "ok: the operator on its node's address" in out, out[-3000:]  # helm test --logs
        run = json.loads(_kubectl(env, "-n", "bench", "get", "benchmarkrun", "samples", "-o", "json"))
        st = run["status"]
        assert st["phase"] == "Succeeded" and st["counts"]["succeeded"] == expected and st["meanScore"] == 1.0, st
        assert st["summaryUri"] == "s3://clawkube-results/clawkube/samples/summary.json"
        assert f"summary.json: {expected} trials finished, mean 1.0" in out
    finally:
        c = _bash(cleanup, env, timeout=600)
        cleanup_out = c.stdout + c.stderr
    assert c.returncode == 0, f"the doc's clean-up block failed:\n{cleanup_out[-3000:]}"
    assert not [ns for ns in NAMESPACES if _kubectl(env, "get", "namespace", ns, "-o", "name")]
    pods = _kubectl(env, "get", "pods", "-A", "-o", "name")
    assert "clawkube-test" not in pods, pods  # the helm test pod is not left behind


def test_helm_test_says_why_it_cannot_work_without_service_dns(cluster, cluster_images, cluster_namespace,
                                                                tmp_path):
    """The chart's test pod without operator.hostNetwork, on this cluster (no DNS add-on): it fails naming the
    reason, not with a bare connection error."""
    import time

    import yaml

    helm = Path.home() / ".cache" / "clawkube" / "helm" / "helm"
    if not helm.exists():
        p = subprocess.run(["sh", str(REPO / "tools" / "get-helm.sh"), str(helm.parent)], capture_output=True,
                           timeout=300)
        if p.returncode != 0:
            pytest.skip("no helm (tools/get-helm.sh failed)")
    image = cluster_images["operator"]
    repo, tag = image.rsplit(":", 1)
    out = subprocess.run([str(helm), "template", "t", str(REPO / "charts" / "clawkube"), "--namespace",
                          cluster_namespace, "--set", f"image.repository={repo}", "--set", f"image.tag={tag}",
                          "--set", "image.pullPolicy=Never", "--show-only", "templates/tests/test-connection.yaml"],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    pod = yaml.safe_load(out)
    pod["metadata"].pop("annotations")  # run it as a plain pod (the hook annotations matter only to helm)
    f = tmp_path / "test-pod.yaml"
    f.write_text(yaml.safe_dump(pod))
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig),
           "PATH": f"{helm.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    subprocess.run(["kubectl", "apply", "-f", str(f)], env=env, check=True, capture_output=True, timeout=120)
    name = pod["metadata"]["name"]
    deadline, phase = time.monotonic() + 180, ""
    while time.monotonic() < deadline:
        phase = _kubectl(env, "-n", cluster_namespace, "get", "pod", name, "-o", "jsonpath={.status.phase}")
        if phase in ("Succeeded", "Failed"):
            break
        time.sleep(2)
    log = subprocess.run(["kubectl", "-n", cluster_namespace, "logs", name], env=env, capture_output=True,
                         text=True, timeout=60).stdout
    assert phase == "Failed", (phase, log)
    assert "does not resolve here" in log and "no DNS for Services" in log and "operator.hostNetwork=true" in log, log
