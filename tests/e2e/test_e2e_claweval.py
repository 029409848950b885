"""CLAW-Eval on the real single-node cluster: the CLAW-Eval images built from a checkout ($CLAWKUBE_UPSTREAM_CLAWEVAL;
skipped with that reason when unset), real tasks staged from a ConfigMap, and each trial through the operator: an
agent pod whose "svc-claweval" sidecar runs the task's real mock services behind the tool gateway (fault injection
on), the mcp-chat agent on the scripted model server reaching them through the MCP tool server, the audit data and
dispatches uploaded as artifacts, and a grading pod in the CLAW-Eval image running the task's own grader with the
scripted judge. Each case's score (and every dimension) must equal what `clawkube run` gives locally for the same
scripted behaviour (bench/claweval_cases.yaml: a right answer, an unsafe one that the safety gate zeroes, a right one
and a partial one over three services under injected errors for robustness, and a multi-turn task whose simulated
user runs in the sidecar on the judge).

A run without the image fails at staging with a status message saying what to do (never hangs, never zeros).
The nop agent over one task per kind of mock service (17 tasks; not `web_real*`, which calls a real web API): every
trial graded, no infra error (each mock starts in the sidecar's read-only container, its audit is read), the audit
of every service of the task kept, and each score equal to the local runner's nop score.
Set CLAWKUBE_E2E_KEEP=1 to keep the namespace.
"""
from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.operator_proc import for_namespace
from tests.e2e.namespace import new_namespace, s3_for, wait_run_finished
from tests.e2e.s3 import REGION, S3Outage

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
NODE_IP = "10.88.0.1"  # this machine's address on the pod bridge (docs/cluster.md)
G, V = "clawkube.io", "v1alpha1"
TAG = "claweval-e2e"  # apart from the :dev images other tests (and CI) build
BUCKET = "results"
CASES = [("T001zh_email_triage", "right"), ("T001zh_email_triage", "unsafe"), ("T007zh_todo_management", "right"),
         ("T029zh_cross_service_meeting", "partial"), ("C01zh_mortgage_prepay", "right")]


def log(msg: str) -> None:
    print(f"[e2e-claweval] {msg}", file=sys.stderr, flush=True)


def _conformance():
    sys.path.insert(0, str(REPO / "bench"))
    import conformance_claweval as c  # bench/: the parity check's cases and its local run
    return c


@pytest.fixture(scope="module")
def checkout() -> tuple[Path, str]:
    named = os.environ.get("CLAWKUBE_UPSTREAM_CLAWEVAL")
    if not named:
        pytest.skip("needs a checkout of the claw-eval repository to build the CLAW-Eval images from: "
                    "set CLAWKUBE_UPSTREAM_CLAWEVAL")
    from clawkube.benchmarks.claweval.checkout import benchmark_python

    root = Path(named).resolve()
    py = benchmark_python(root)
    probe = subprocess.run([py, "-c", "import fastapi, uvicorn, openai, httpx"], capture_output=True, text=True)
    if probe.returncode != 0:  # the local reference run needs it
        pytest.skip(f"{py} lacks the checkout's requirements: set CLAWKUBE_CLAWEVAL_PYTHON")
    return root, py


def _kubectl(kubeconfig: Path, *args: str, input: str | None = None) -> str:
    p = subprocess.run(["kubectl", f"--kubeconfig={kubeconfig}", *args], input=input, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, f"kubectl {' '.join(args)}: {p.stderr}"
    return p.stdout


def _task_files(root: Path, task: str) -> dict[str, str]:
    """binaryData of a task-source ConfigMap: the task's task.yaml and fixtures, as a user would stage them (its
    grader stays in the image: the grading pod takes it from the checkout there)."""
    folder = root / "tasks" / task
    out = {}
    for f in sorted(p for p in folder.rglob("*") if p.is_file() and p.name != "grader.py"):
        out[f"{task}/{f.relative_to(folder).as_posix()}".replace("/", "__")] = base64.b64encode(f.read_bytes()).decode()
    return out


@pytest.fixture(scope="module")
def stack(checkout, cluster, cluster_api, tmp_path_factory):
    root, _ = checkout
    env = {**os.environ, "CLAWKUBE_IMAGE_TAG": TAG}
    log(f"images/build.sh --claw-eval {root} (tag {TAG})")
    p = subprocess.run(["nice", "-n", "10", "bash", str(REPO / "images" / "build.sh"), "--claw-eval", str(root)],
                       env=env, capture_output=True, text=True, timeout=1800)
    assert p.returncode == 0, f"images/build.sh --claw-eval failed:\n{p.stderr[-3000:]}"
    logs = tmp_path_factory.mktemp("e2e-claweval")
    log(f"logs in {logs}")
    kc = cluster.kubeconfig
    _kubectl(kc, "apply", "-f", str(REPO / "crds"))
    from kubernetes import client
    core = client.CoreV1Api(cluster_api)
    ns = new_namespace(core, "ce")
    s3 = s3_for(core, ns, NODE_IP, BUCKET)
    core.create_namespaced_secret(ns, {"metadata": {"name": "model"}, "stringData": {"key": "scripted"}})
    tasks = {t for t, _ in CASES}
    data: dict[str, str] = {}
    for t in sorted(tasks):
        data.update(_task_files(root, t))
    core.create_namespaced_config_map(ns, {"metadata": {"name": "tasks"}, "binaryData": data})
    op = for_namespace(kc, ns, f"local.test/clawkube-agent:{TAG}", f"local.test/clawkube-grader:{TAG}",
                       logs / "operator.log")
    try:
        op.start()
        yield {"kc": kc, "ns": ns, "api": cluster_api, "s3": s3, "op": op, "logs": logs}
    finally:
        op.stop()
        s3.stop()
        if os.environ.get("CLAWKUBE_E2E_KEEP") != "1":
            core.delete_namespace(ns)


def _run_manifest(name: str, task: str, model_url: str, rate: float, seed: int, s3: S3Outage,
                  claw_eval: dict | None) -> dict[str, Any]:
    key = {"name": "model", "key": "key"}
    spec: dict[str, Any] = {
        "tasks": {"configMap": "tasks"}, "selector": {"ids": [task]},
        "agent": {"harness": "mcp-chat", "model": "agent", "api": {"baseUrl": model_url + "/v1", "apiKeySecret": key}},
        "judge": {"baseUrl": model_url + "/v1", "model": "judge", "apiKeySecret": key},
        "errorInjectionRate": rate, "seed": seed, "resources": {"cpu": "300m", "memory": "512Mi"},
        "artifacts": {"bucket": BUCKET, "prefix": name, "endpoint": s3.endpoint, "region": REGION,
                      "credentialsSecret": "s3"}}
    if claw_eval:
        spec["clawEval"] = claw_eval
    return {"apiVersion": f"{G}/{V}", "kind": "BenchmarkRun", "metadata": {"name": name}, "spec": spec}


def _custom(st):
    from kubernetes import client
    return client.CustomObjectsApi(st["api"])


def _wait_run(st, name: str, timeout: float) -> dict[str, Any]:
    return wait_run_finished(lambda n: _custom(st).get_namespaced_custom_object(G, V, st["ns"], "benchmarkruns", n),
                             name, timeout, st["op"], log, tail=60)


def test_claweval_run_without_the_image_fails_with_what_to_do(stack, checkout):
    st = stack
    m = _run_manifest("no-image", "T001zh_email_triage", "http://127.0.0.1:9", 0.0, 7, st["s3"], None)
    _kubectl(st["kc"], "apply", "-n", st["ns"], "-f", "-", input=json.dumps(m))
    run = _wait_run(st, "no-image", 120)
    s = run["status"]
    text = json.dumps(s)
    assert s["phase"] == "Failed" and "images/build.sh --claw-eval" in text and "spec.clawEval.image" in text, s


def test_claweval_tasks_on_the_cluster_score_as_locally(stack, checkout):
    from clawkube.modelserver import Script, ServerThread

    st = stack
    root, py = checkout
    conf = _conformance()
    cases = [c for c in conf.load_cases(conf.CASES, None) if (c["task"], c["behaviour"]) in CASES]
    assert len(cases) == len(CASES)
    local: dict[str, dict[str, Any]] = {}
    for c in cases:  # the local runner's scores for the same scripted behaviour
        with ServerThread(Script.model_validate(c["script"])) as s:
            work = Path(tempfile.mkdtemp(prefix="ce-local-", dir=st["logs"]))
            local[f"{c['task']}/{c['behaviour']}"] = conf.run_ours(root, py, c, s.url, work)
    log(f"local: {json.dumps(local)}")
    servers = []
    names = {}
    try:
        for i, c in enumerate(cases):
            s = ServerThread(Script.model_validate(c["script"]), host=NODE_IP).start()
            servers.append(s)
            name = f"ce-{i}-{c['behaviour']}"
            names[name] = c
            m = _run_manifest(name, c["task"], s.url, float(c.get("error_rate", 0)), conf.SEED, st["s3"],
                              {"image": f"local.test/clawkube-claweval:{TAG}"})
            _kubectl(st["kc"], "apply", "-n", st["ns"], "-f", "-", input=json.dumps(m))
        runs = {n: _wait_run(st, n, 900) for n in names}
    finally:
        for s in servers:
            s.stop()
    from kubernetes import client
    core = client.CoreV1Api(st["api"])
    s3c = st["s3"].client()
    rows: list[str] = []
    for name, c in names.items():
        trials = _custom(st).list_namespaced_custom_object(G, V, st["ns"], "tasktrials",
                                                           label_selector=f"clawkube.io/run={name}")["items"]
        assert len(trials) == 1, (name, runs[name]["status"])
        ts = trials[0]["status"]
        assert ts.get("score") is not None, (name, ts)
        want = local[f"{c['task']}/{c['behaviour']}"]
        got = {**{k: ts["score"]["dimensions"][k] for k in ("completion", "robustness", "communication", "safety")},
               "task_score": ts["score"]["score"]}
        log(f"{name}: cluster {got} local {want}")
        rows.append(f"| {c['task']} | {c['behaviour']} | {c.get('error_rate', 0)} | {_fmt(want)} | {_fmt(got)} | "
                    f"{'yes' if got == pytest.approx(want, abs=1e-6) else 'NO'} |")
        # the pods: the agent pod had the sidecar in the services image; grading ran in the CLAW-Eval image
        pods = core.list_namespaced_pod(st["ns"], label_selector=f"clawkube.io/run={name}").items
        agent = next(p for p in pods if p.metadata.labels.get("clawkube.io/role") == "agent")
        grade = next(p for p in pods if p.metadata.labels.get("clawkube.io/role") == "grade")
        assert [(x.name, x.image) for x in agent.spec.containers][1:] == [
            ("svc-claweval", f"local.test/clawkube-claweval-services:{TAG}")]
        assert grade.spec.containers[0].image == f"local.test/clawkube-claweval:{TAG}"
        # the evidence is kept as artifacts of the agent pod: audit data of each mock, the dispatches, the dialogue
        keys = [o["Key"] for o in s3c.list_objects_v2(Bucket=BUCKET, Prefix=f"{name}/").get("Contents", [])]
        agent_keys = [k for k in keys if "/agent/" in k]
        task = yaml.safe_load((root / "tasks" / c["task"] / "task.yaml").read_text())
        services = [x["name"] for x in task.get("services") or []]
        assert {k.rsplit("/", 1)[1] for k in agent_keys if "/audit/" in k} == {f"{x}.json" for x in services}, keys
        if (task.get("user_agent") or {}).get("enabled"):
            dialogue = [k for k in agent_keys if k.endswith("/dialogue.jsonl")]
            assert dialogue and s3c.get_object(Bucket=BUCKET, Key=dialogue[0])["Body"].read().strip(), keys
        dispatches = [json.loads(x) for k in agent_keys if k.endswith("/dispatches.jsonl")
                      for x in s3c.get_object(Bucket=BUCKET, Key=k)["Body"].read().decode().splitlines() if x.strip()]
        assert bool(dispatches) == bool(services), (name, dispatches)
        if float(c.get("error_rate", 0)) > 0:  # the sidecar's gateway injected faults, and the agent recovered
            assert any(d["fault"] in ("http_429", "http_500") and d["response_status"] in (429, 500)
                       for d in dispatches), dispatches
    assert any(float(c.get("error_rate", 0)) > 0 for c in names.values())
    print("\n".join(["| task | behaviour | error rate | local run | on the cluster | match |", "|---|---|---|---|---|---|",
                     *rows]), file=sys.stderr)
    assert all(r.endswith("yes |") for r in rows), rows


def _fmt(s: dict[str, Any]) -> str:
    return f"{s['task_score']:.4f} (c={s['completion']:.4f} r={s['robustness']:.2f} s={s['safety']:g})"


def _one_task_per_mock(root: Path) -> list[str]:
    """The first task (by id) that starts each kind of mock service of the checkout, except web_real*."""
    import re

    seen: dict[str, str] = {}
    for f in sorted((root / "tasks").glob("*/task.yaml")):
        for svc in yaml.safe_load(f.read_text()).get("services") or []:
            m = re.search(r"mock_services/([a-z_]+)/", svc.get("command", ""))
            if m and not m.group(1).startswith("web_real"):
                seen.setdefault(m.group(1), f.parent.name)
    return sorted(set(seen.values()))


def test_nop_over_every_kind_of_mock_service(stack, checkout):
    from clawkube.modelserver import Script, ServerThread
    from kubernetes import client

    st = stack
    root, py = checkout
    tasks = _one_task_per_mock(root)
    assert len(tasks) >= 10, tasks
    core = client.CoreV1Api(st["api"])
    data: dict[str, str] = {}
    for t in tasks:
        data.update(_task_files(root, t))
    core.create_namespaced_config_map(st["ns"], {"metadata": {"name": "nop-tasks"}, "binaryData": data})
    judge = Script.model_validate({"rules": [{"when": {"model": "judge"}, "text": '{"score": 0.0, "reasoning": "nop"}'}]})
    # the local runner's nop scores
    work = Path(tempfile.mkdtemp(prefix="ce-nop-local-", dir=st["logs"]))
    with ServerThread(judge) as s:
        run = {"tasks": {"path": str(root / "tasks")}, "selector": {"ids": tasks}, "agent": {"harness": "nop"},
               "judge": {"baseUrl": s.url + "/v1", "model": "judge", "apiKeyEnv": "NOP_JUDGE_KEY"}, "parallelism": 2}
        (work / "run.yaml").write_text(yaml.safe_dump(run))
        p = subprocess.run([sys.executable, "-m", "clawkube", "run", str(work / "run.yaml"), "--out", str(work / "out"),
                            "--quiet"], env={**os.environ, "PYTHONPATH": str(REPO / "operator"), "NOP_JUDGE_KEY": "x",
                                             "CLAWKUBE_CLAWEVAL_PYTHON": py}, capture_output=True, text=True,
                           timeout=1800)
    local = {}
    for f in sorted((work / "out" / "trials").glob("*/*/result.json")):
        r = json.loads(f.read_text())
        assert r.get("score") is not None, (f, r.get("error_kind"), r.get("error_message"), p.stderr[-1000:])
        local[r["task_id"]] = r["score"]["score"]
    assert set(local) == set(tasks), p.stderr[-2000:]
    with ServerThread(judge, host=NODE_IP) as s:
        m = _run_manifest("nop-all", tasks[0], s.url, 0.0, 7, st["s3"], {"image": f"local.test/clawkube-claweval:{TAG}"})
        m["spec"].update(tasks={"configMap": "nop-tasks"}, selector={"ids": tasks}, agent={"harness": "nop"},
                         parallelism=4)
        _kubectl(st["kc"], "apply", "-n", st["ns"], "-f", "-", input=json.dumps(m))
        _wait_run(st, "nop-all", 1800)
    trials = _custom(st).list_namespaced_custom_object(G, V, st["ns"], "tasktrials",
                                                       label_selector="clawkube.io/run=nop-all")["items"]
    assert {t["spec"]["taskId"] for t in trials} == set(tasks)
    s3c = st["s3"].client()
    keys = [o["Key"] for page in s3c.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix="nop-all/")
            for o in page.get("Contents", [])]
    bad = []
    for t in trials:
        tid, ts = t["spec"]["taskId"], t["status"]
        if ts.get("score") is None or ts.get("errorKind") or ts.get("attempt") != 1:
            bad.append((tid, ts.get("errorKind"), ts.get("errorMessage"), ts.get("attempt")))
            continue
        services = [x["name"] for x in yaml.safe_load((root / "tasks" / tid / "task.yaml").read_text())["services"]]
        audit = {k.rsplit("/", 1)[1] for k in keys if f"/{tid}/" in k and "/agent/audit/" in k}
        if audit != {f"{x}.json" for x in services}:
            bad.append((tid, "audit", sorted(audit), services))
        if abs(ts["score"]["score"] - local[tid]) > 1e-6:
            bad.append((tid, "score", ts["score"]["score"], local[tid]))
    log(f"nop over {len(tasks)} tasks: cluster {sorted((t['spec']['taskId'], (t['status'].get('score') or {}).get('score')) for t in trials)}")
    assert not bad, bad
