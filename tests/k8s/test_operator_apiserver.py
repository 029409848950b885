"""The operator in-process against a real kube-apiserver + etcd; the tests play the kubelet."""
from __future__ import annotations

import json

import pytest

from tests.k8s.conftest import wait_for
from tests.k8s.sample import run_manifest

pytestmark = [pytest.mark.apiserver, pytest.mark.s3, pytest.mark.slow]


def agent_msg(tokens: int = 100, cost: float = 0.01, **extra) -> dict:
    return {"phase": "agent", "exit_code": 0, "timed_out": False,
            "usage": {"input_tokens": tokens, "output_tokens": tokens // 2, "total_tokens": tokens + tokens // 2,
                      "cost_usd": cost, "turns": 2}, "error_kind": None, "error_message": None, **extra}


def grade_msg(score: float) -> dict:
    return {"phase": "grade", "score": {"score": score, "passed": score >= 0.75, "criteria": {"c": score}},
            "error_kind": None, "error_message": None}


def by_task(trials: list[dict]) -> dict[tuple[str, int], dict]:
    return {(t["spec"]["taskId"], t["spec"]["trialIndex"]): t for t in trials}


def test_run_end_to_end(cluster, bucket, s3, s3_server, operator_factory):
    from prometheus_client import CollectorRegistry

    from clawkube.k8s.metrics import Metrics

    registry = CollectorRegistry()
    operator_factory(metrics=Metrics(registry))
    cluster.create_secret("s3-creds", {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"})
    cluster.create_run(run_manifest("r1", ["alpha", "beta"], bucket, s3_server, secret="s3-creds",
                                    trials=2, parallelism=2))

    trials = wait_for("4 TaskTrials", lambda: len(cluster.trials()) == 4 and cluster.trials())
    cms = {c["metadata"]["name"]: c for c in cluster.configmaps()}
    assert set(cms) == {"r1-alpha-agent", "r1-alpha-grading", "r1-beta-agent", "r1-beta-grading"}
    agents = wait_for("2 agent pods (parallelism)", lambda: len(cluster.pods("agent")) == 2 and cluster.pods("agent"))

    # the firewall: agent pods reference their agent bundle and nothing of grading
    for pod in agents:
        text = json.dumps(pod)
        assert "grading" not in text, f"agent pod {pod['metadata']['name']} mentions grading material"
        cm_volumes = [v["configMap"]["name"] for v in pod["spec"]["volumes"] if v.get("configMap")]
        assert len(cm_volumes) == 1 and cm_volumes[0].endswith("-agent")
        assert pod["spec"]["automountServiceAccountToken"] is False
        env = {e["name"]: e for e in pod["spec"]["containers"][0]["env"]}
        assert env["CLAWKUBE_ARTIFACT_URI"]["value"].startswith(f"s3://{bucket}/bench/r1/")
        assert "AWS_ACCESS_KEY_ID" not in env and "AWS_SECRET_ACCESS_KEY" not in env  # presigned grants instead
        grant = json.loads(env["CLAWKUBE_UPLOAD_GRANT"]["value"])
        assert "s3://" + bucket + "/" + grant["prefix"] == env["CLAWKUBE_ARTIFACT_URI"]["value"]
    assert cluster.pods("grade") == []

    # a running agent pod: still no grading pod
    first = sorted(p["metadata"]["name"] for p in agents)
    cluster.set_running(first[0])
    wait_for("trial marked running", lambda: any(t.get("status", {}).get("phase") == "Agent" for t in cluster.trials()))
    assert cluster.pods("grade") == []

    scores = {}
    for round_ in range(2):
        # both of the round's agent pods: the operator may create the second a pass later (a loaded machine), and
        # driving only the first left the round one grading pod short (CI: "timed out ... waiting for grading pods")
        agents = wait_for("2 agent pods to drive", lambda: len(live := [
            p["metadata"]["name"] for p in cluster.pods("agent")
            if p.get("status", {}).get("phase") != "Succeeded"]) == 2 and live)
        for name in agents:
            cluster.terminate(name, agent_msg())
        grades = wait_for("grading pods", lambda: len(cluster.pods("grade")) == 2 * (round_ + 1)
                          and cluster.pods("grade"))
        for pod in grades:
            name = pod["metadata"]["name"]
            if pod.get("status", {}).get("phase") == "Succeeded":
                continue
            cm_volumes = [v["configMap"]["name"] for v in pod["spec"]["volumes"] if v.get("configMap")]
            # the grading bundle, + the agent bundle (agent material) for WildClawBench's read-only /app
            assert cm_volumes[0].endswith("-grading") and [c.endswith("-agent") for c in cm_volumes[1:]] == [True]
            args = pod["spec"]["containers"][0]["command"]
            assert args[args.index("--agent-artifacts") + 1].endswith("/a1/agent/")
            env = {e["name"]: e for e in pod["spec"]["containers"][0]["env"]}
            assert "AWS_ACCESS_KEY_ID" not in env and "AWS_SECRET_ACCESS_KEY" not in env  # grants, as agent pods
            assert json.loads(env["CLAWKUBE_UPLOAD_GRANT"]["value"])["prefix"].endswith("/a1/grade1/")
            assert list(json.loads(env["CLAWKUBE_READ_GRANTS"]["value"])) == [args[args.index("--agent-artifacts") + 1]]
            score = 0.5 if "alpha" in name else 1.0
            scores[name] = score
            cluster.terminate(name, grade_msg(score))

    run = wait_for("run Succeeded", lambda: (r := cluster.run("r1")).get("status", {}).get("phase") == "Succeeded"
                   and r, timeout=120)
    st = run["status"]
    assert st["counts"]["succeeded"] == 4 and st["counts"]["failed"] == 0
    assert st["progress"] == "4/4"
    assert st["meanScore"] == pytest.approx(0.75)
    assert st["usage"]["inputTokens"] == 400 and st["usage"]["costUsd"] == pytest.approx(0.04)
    assert st["summary"]["overall"]["trials_finished"] == 4
    assert {c["type"]: c["status"] for c in st["conditions"]}["Succeeded"] == "True"
    # the run's own files beside its trials: summary.json (= status.summary) and run.json
    assert st["summaryUri"] == f"s3://{bucket}/bench/r1/summary.json"
    assert json.loads(s3.get_object(Bucket=bucket, Key="bench/r1/summary.json")["Body"].read()) == st["summary"]
    record = json.loads(s3.get_object(Bucket=bucket, Key="bench/r1/run.json")["Body"].read())
    assert sorted(record["tasks"]) == sorted(t["id"] for t in st["tasks"]) and record["task_errors"] == []

    for (task, idx), t in by_task(cluster.trials()).items():
        s = t["status"]
        assert s["state"] == "succeeded" and s["attempt"] == 1
        assert s["score"]["score"] == (0.5 if task == "alpha" else 1.0)
        conds = {c["type"]: c["status"] for c in s["conditions"]}
        assert conds["Scheduled"] == conds["AgentFinished"] == conds["Graded"] == conds["ArtifactsUploaded"] == "True"
        key = f"bench/r1/{task}/{idx}/"
        result = json.loads(s3.get_object(Bucket=bucket, Key=key + "result.json")["Body"].read())
        assert result["state"] == "succeeded" and result["task_id"] == task and result["trial_index"] == idx
        score = json.loads(s3.get_object(Bucket=bucket, Key=key + "score.json")["Body"].read())
        assert score["score"] == s["score"]["score"]
        assert s["artifacts"]["result"] == f"s3://{bucket}/{key}result.json"

    assert "Completed" in cluster.events("r1")
    import subprocess
    table = subprocess.run(["kubectl", "--kubeconfig", str(cluster.kubeconfig), "-n", cluster.ns, "get",
                            "benchmarkruns,tasktrials"], capture_output=True, text=True, check=True).stdout
    assert "Succeeded" in table and "4/4" in table and "0.75" in table, table  # printer columns
    some_trial = next(iter(cluster.trials()))["metadata"]["name"]
    assert {"AgentStarted", "AgentFinished", "Graded", "ArtifactsUploaded"} <= set(cluster.events(some_trial))

    def sample(name, **labels):
        return registry.get_sample_value(name, {"namespace": cluster.ns, "run": "r1", **labels})
    wait_for("gauges updated", lambda: sample("clawkube_trials", state="succeeded") == 4)
    assert sample("clawkube_trial_score_count", category="demo") == 4
    assert sample("clawkube_category_mean_score", category="demo") == pytest.approx(0.75)
    assert sample("clawkube_tokens_total", kind="input") == 400
    assert registry.get_sample_value("clawkube_pods_created_total",
                                     {"namespace": cluster.ns, "run": "r1", "role": "grade"}) == 4


def test_restart_mid_run_duplicates_nothing(cluster, bucket, s3_server, operator_factory):
    op = operator_factory()
    cluster.create_run(run_manifest("r2", ["alpha", "beta", "gamma"], bucket, s3_server, trials=1, parallelism=2))
    wait_for("2 agent pods", lambda: len(cluster.pods("agent")) == 2)
    agent = sorted(cluster.pod_names("agent"))[0]
    cluster.terminate(agent, agent_msg())
    wait_for("grading pod", lambda: len(cluster.pods("grade")) == 1)
    op.stop()

    before = (len(cluster.trials()), cluster.pod_names(), {c["metadata"]["name"] for c in cluster.configmaps()})
    attempts = {t["metadata"]["name"]: t.get("status", {}).get("attempt", 0) for t in cluster.trials()}
    assert sorted(attempts.values()) == [0, 1, 1]  # the third trial waits for a slot
    operator_factory()
    # the new operator passes several times over the same state: nothing new may appear
    import time
    time.sleep(3)
    after = (len(cluster.trials()), cluster.pod_names(), {c["metadata"]["name"] for c in cluster.configmaps()})
    assert after == before
    assert {t["metadata"]["name"]: t.get("status", {}).get("attempt", 0) for t in cluster.trials()} == attempts

    # finish: exactly one agent and one grading pod per trial ever existed
    grade = next(iter(cluster.pod_names("grade")))
    cluster.terminate(grade, grade_msg(1.0))
    for _ in range(2):
        pending = wait_for("an agent pod to finish", lambda: [p["metadata"]["name"] for p in cluster.pods("agent")
                                                               if p.get("status", {}).get("phase") != "Succeeded"])
        for name in pending:
            cluster.terminate(name, agent_msg())
        wait_for("grading pods", lambda: [p for p in cluster.pods("grade") if p.get("status", {}).get("phase") != "Succeeded"])
        for p in cluster.pods("grade"):
            if p.get("status", {}).get("phase") != "Succeeded":
                cluster.terminate(p["metadata"]["name"], grade_msg(0.0))
        if len(cluster.pods("agent")) == 3 and all(p["status"].get("phase") == "Succeeded" for p in cluster.pods()):
            break
    wait_for("run done", lambda: cluster.run("r2").get("status", {}).get("phase") == "Succeeded")
    assert len(cluster.pods("agent")) == 3 and len(cluster.pods("grade")) == 3
    assert all(n.endswith("-a1-agent") or n.endswith("-a1-grade") for n in cluster.pod_names())


def _drive_agents(cluster, message=None):
    for p in cluster.pods("agent"):
        if p.get("status", {}).get("phase") not in ("Succeeded", "Failed"):
            cluster.terminate(p["metadata"]["name"], message or agent_msg())


def test_evicted_and_deleted_pods_are_retried_as_new_attempts(cluster, bucket, s3_server, operator_factory):
    operator_factory()
    cluster.create_run(run_manifest("r3", ["alpha"], bucket, s3_server, trials=1,
                                    retry={"infra": 2, "gradingError": 2}))
    wait_for("agent pod", lambda: cluster.pod_names("agent") == {"r3-alpha-0-a1-agent"})
    cluster.delete_pod("r3-alpha-0-a1-agent")  # node drain, someone's kubectl delete
    wait_for("attempt 2", lambda: "r3-alpha-0-a2-agent" in cluster.pod_names("agent"))
    t = cluster.trial("r3-alpha-0")["status"]
    assert t["attempt"] == 2 and t["failures"] == {"infra": 1} and t["history"][0]["reason"] == "PodDeleted"
    assert "Retrying" in cluster.events("r3-alpha-0")

    cluster.terminate("r3-alpha-0-a2-agent", agent_msg())
    wait_for("grading pod", lambda: "r3-alpha-0-a2-grade" in cluster.pod_names("grade"))
    cluster.terminate("r3-alpha-0-a2-grade", {"phase": "grade", "score": None, "error_kind": "grading_error",
                                              "error_message": "grader crashed"}, exit_code=1)
    wait_for("regrade pod", lambda: "r3-alpha-0-a2-grade-2" in cluster.pod_names("grade"))
    assert "r3-alpha-0-a3-agent" not in cluster.pod_names()  # the agent is not rerun for a grader error
    cluster.terminate("r3-alpha-0-a2-grade-2", grade_msg(0.9))
    t = wait_for("graded", lambda: (s := cluster.trial("r3-alpha-0")["status"])["state"] == "succeeded" and s)
    assert t["score"]["score"] == 0.9 and t["attempt"] == 2 and t["gradeAttempt"] == 2
    assert t["failures"] == {"infra": 1, "grading_error": 1}


def test_stuck_pending_pod_is_replaced(cluster, bucket, s3_server, operator_factory):
    operator_factory(pending_timeout_seconds=2)
    cluster.create_run(run_manifest("r4", ["alpha"], bucket, s3_server, trials=1))
    wait_for("a1", lambda: "r4-alpha-0-a1-agent" in cluster.pod_names("agent"))
    # nothing schedules it (no kubelet here): after 2s it is stuck
    wait_for("a2 after the stuck a1", lambda: "r4-alpha-0-a2-agent" in cluster.pod_names("agent"), timeout=20)
    wait_for("a1 deleted", lambda: "r4-alpha-0-a1-agent" not in cluster.pod_names("agent"), timeout=20)
    t = cluster.trial("r4-alpha-0")["status"]
    assert t["history"][0]["reason"] == "PodStuck"


def test_budget_stops_scheduling(cluster, bucket, s3_server, operator_factory):
    operator_factory()
    cluster.create_run(run_manifest("r5", ["alpha", "beta", "gamma"], bucket, s3_server, trials=1, parallelism=1,
                                    budgets={"maxTokens": 100}))
    wait_for("first agent pod", lambda: len(cluster.pods("agent")) == 1)
    _drive_agents(cluster, agent_msg(tokens=200))  # 300 tokens: over budget
    wait_for("grading pod", lambda: len(cluster.pods("grade")) == 1)
    cluster.terminate(next(iter(cluster.pod_names("grade"))), grade_msg(1.0))
    run = wait_for("run finished", lambda: (r := cluster.run("r5")).get("status", {}).get("phase") == "Succeeded" and r)
    conds = {c["type"]: c for c in run["status"]["conditions"]}
    assert conds["BudgetExhausted"]["status"] == "True" and conds["Succeeded"]["reason"] == "BudgetExhausted"
    assert run["status"]["counts"]["succeeded"] == 1 and run["status"]["counts"]["queued"] == 2
    assert len(cluster.pods("agent")) == 1
    assert "BudgetExhausted" in cluster.events("r5")


def test_global_pod_cap_is_shared_fairly_between_runs(cluster, bucket, s3_server, operator_factory):
    operator_factory(max_concurrent_pods=2)
    cluster.create_run(run_manifest("big", ["a", "b", "c", "d"], bucket, s3_server, trials=1, parallelism=4))
    wait_for("big takes both slots", lambda: len(cluster.pods("agent")) == 2)
    cluster.create_run(run_manifest("small", ["a"], bucket, s3_server, trials=1, parallelism=4))
    # finish one of big's trials: the freed slot goes to the run holding fewer (small), not to big
    first = sorted(cluster.pod_names("agent"))[0]
    cluster.terminate(first, agent_msg())
    wait_for("grading", lambda: len(cluster.pods("grade")) == 1)
    cluster.terminate(next(iter(cluster.pod_names("grade"))), grade_msg(1.0))
    wait_for("small's agent pod", lambda: "small-a-0-a1-agent" in cluster.pod_names("agent"))
    import time
    time.sleep(1.5)
    active = [p for p in cluster.pods() if p.get("status", {}).get("phase") not in ("Succeeded", "Failed")]
    assert len(active) == 2


def test_failed_upload_is_a_condition_and_is_retried(cluster, bucket, s3, s3_server, operator_factory):
    operator_factory(upload_retry_seconds=0.5, s3_attempts=1)
    cluster.create_run(run_manifest("r6", ["alpha"], "not-yet", s3_server, trials=1))
    wait_for("agent pod", lambda: len(cluster.pods("agent")) == 1)
    _drive_agents(cluster)

    def store_unavailable():  # the grading pod's presigned grants need the store: the trial says why it waits
        c = {c["type"]: c for c in cluster.trial("r6-alpha-0").get("status", {}).get("conditions", [])}.get("Scheduled")
        return c and c["status"] == "False" and c["reason"] == "ArtifactStoreUnavailable" and c["message"]
    assert "not-yet" in wait_for("ArtifactStoreUnavailable", store_unavailable)
    assert cluster.pods("grade") == []
    s3.create_bucket(Bucket="not-yet")
    wait_for("grading pod", lambda: len(cluster.pods("grade")) == 1)
    s3.delete_bucket(Bucket="not-yet")  # the store fails again when the operator uploads the result
    cluster.terminate(next(iter(cluster.pod_names("grade"))), grade_msg(0.7))

    def upload_failed():
        st = cluster.trial("r6-alpha-0").get("status", {})
        c = {c["type"]: c for c in st.get("conditions", [])}.get("ArtifactsUploaded")
        return c and c["status"] == "False" and c["reason"] == "UploadFailed" and st
    st = wait_for("UploadFailed", upload_failed)
    assert st["state"] == "succeeded" and st["score"]["score"] == 0.7  # the result is kept
    s3.create_bucket(Bucket="not-yet")
    wait_for("uploaded after retry", lambda: cluster.run("r6").get("status", {}).get("phase") == "Succeeded", timeout=120)
    body = s3.get_object(Bucket="not-yet", Key="bench/r6/alpha/0/result.json")["Body"].read()
    assert json.loads(body)["score"]["score"] == 0.7
    summary = json.loads(s3.get_object(Bucket="not-yet", Key="bench/r6/summary.json")["Body"].read())
    assert summary["overall"]["trials_finished"] == 1


def test_entry_point_process_serves_liveness_and_metrics(cluster, bucket, s3_server):
    import os
    import signal
    import subprocess
    import sys
    import urllib.request

    from tests.cluster.controlplane import free_port

    metrics, live = free_port(), free_port()
    env = {**os.environ, "CLAWKUBE_NAMESPACES": cluster.ns, "CLAWKUBE_KUBECONFIG": str(cluster.kubeconfig),
           "CLAWKUBE_METRICS_PORT": str(metrics), "CLAWKUBE_LIVENESS_PORT": str(live),
           "CLAWKUBE_REQUEUE_SECONDS": "0.5"}
    proc = subprocess.Popen([sys.executable, "-m", "clawkube.k8s"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        def get(url):
            with urllib.request.urlopen(url, timeout=2) as r:
                return r.status, r.read().decode()
        status, body = wait_for("liveness", lambda: get(f"http://127.0.0.1:{live}/healthz"), timeout=120)
        assert status == 200 and "reconcileAgeSeconds" in body
        cluster.create_run(run_manifest("proc", ["alpha"], bucket, s3_server, trials=2))
        wait_for("trials from the operator process", lambda: len(cluster.trials()) == 2)
        text = wait_for("metrics", lambda: (m := get(f"http://127.0.0.1:{metrics}/metrics")[1])
                        and 'clawkube_pods_created_total{' in m and m)
        for name in ("clawkube_trials{", "clawkube_queue_depth{", "clawkube_reconcile_seconds_bucket{"):
            assert name in text, name
        assert get(f"http://127.0.0.1:{metrics}/readyz") == (200, "ready\n")  # the chart's readiness probe
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        rc = proc.wait(20)
    assert rc in (0, -signal.SIGTERM), proc.stderr.read().decode()[-2000:]


def test_configmap_source_and_failed_staging(cluster, bucket, s3_server, operator_factory):
    from tests.k8s.sample import inline_files

    operator_factory()
    files = {f["name"].replace("/", "__"): f["content"] for f in inline_files(["cm-task"])}
    cluster.core.create_namespaced_config_map(cluster.ns, {"metadata": {"name": "my-tasks"}, "data": files})
    good = run_manifest("fromcm", [], bucket, s3_server, trials=1)
    good["spec"]["tasks"] = {"configMap": "my-tasks"}
    cluster.create_run(good)
    bad = run_manifest("nocm", [], bucket, s3_server, trials=1)
    bad["spec"]["tasks"] = {"configMap": "does-not-exist"}
    cluster.create_run(bad)

    wait_for("trial from the ConfigMap source", lambda: [t for t in cluster.trials() if t["spec"]["taskId"] == "cm-task"])
    st = wait_for("nocm failed", lambda: (r := cluster.run("nocm")).get("status", {}).get("phase") == "Failed" and r)
    cond = {c["type"]: c for c in st["status"]["conditions"]}["TasksLoaded"]
    assert cond["status"] == "False" and cond["reason"] == "BadSource" and "does-not-exist" in cond["message"]
    assert "TasksNotLoaded" in cluster.events("nocm")
    assert not [t for t in cluster.trials() if t["spec"]["run"] == "nocm"]


def test_rejected_pod_is_reported_on_the_trial(cluster, bucket, s3_server, operator_factory):
    # a missing RuntimeClass (bad resource quantities no longer get this far: the CRD refuses them)
    operator_factory(agent_runtime_class="no-such-class")
    cluster.create_run(run_manifest("bad", ["alpha"], bucket, s3_server, trials=1))

    def rejected():
        st = cluster.trial("bad-alpha-0").get("status", {})
        c = {c["type"]: c for c in st.get("conditions", [])}.get("Scheduled")
        return c and c["reason"] == "PodRejected" and c
    cond = wait_for("PodRejected", rejected)
    assert cond["status"] == "False" and "RuntimeClass" in cond["message"]
    assert "PodRejected" in cluster.events("bad-alpha-0")
    assert cluster.pods() == []
    assert cluster.trial("bad-alpha-0")["status"].get("attempt", 0) == 0  # no attempt was used up


def test_a_stale_status_write_cannot_overwrite_a_result(cluster):
    from kubernetes.client.exceptions import ApiException

    from clawkube.k8s.kube import Kube, api_client
    from clawkube.k8s.model import TRIALS
    from clawkube.settings import Settings

    kube = Kube(api_client(Settings(kubeconfig=str(cluster.kubeconfig))))
    spec = {"run": "r", "taskId": "t", "trialIndex": 0, "contentHash": "h", "agentBundle": "a", "gradingBundle": "g",
            "timeoutSeconds": 1, "graderTimeoutSeconds": 1}
    assert kube.create_trial(cluster.ns, {"apiVersion": "clawkube.io/v1alpha1", "kind": "TaskTrial",
                                          "metadata": {"name": "guarded"}, "spec": spec})
    assert not kube.create_trial(cluster.ns, {"apiVersion": "clawkube.io/v1alpha1", "kind": "TaskTrial",
                                              "metadata": {"name": "guarded"}, "spec": spec})  # exists: no-op
    rv0 = cluster.trial("guarded")["metadata"]["resourceVersion"]
    kube.patch_status(cluster.ns, TRIALS, "guarded", {"state": "succeeded", "score": {"score": 1.0, "passed": True}}, rv0)
    with pytest.raises(ApiException) as e:  # a pass that read the object before the result was written
        kube.patch_status(cluster.ns, TRIALS, "guarded", {"state": "failed", "score": None}, rv0)
    assert e.value.status == 409
    st = cluster.trial("guarded")["status"]
    assert st["state"] == "succeeded" and st["score"]["score"] == 1.0


def test_real_pod_commands_oracle_scores_one_nop_scores_zero(cluster, bucket, s3, s3_server, operator_factory):
    """The pods' containers really run (as local processes): bundles -> clawkube pod agent -> S3 -> pod grade."""
    from tests.k8s.process_kubelet import ProcessKubelet

    operator_factory()
    cluster.create_secret("s3-creds", {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"})
    with ProcessKubelet(cluster) as kubelet:
        cluster.create_run(run_manifest("oracle", ["alpha"], bucket, s3_server, secret="s3-creds", trials=1,
                                        agent={"harness": "oracle"}))
        cluster.create_run(run_manifest("nop", ["alpha"], bucket, s3_server, secret="s3-creds", trials=1,
                                        agent={"harness": "nop"}))

        def finished():
            runs = {r["metadata"]["name"]: r.get("status", {}) for r in cluster.runs()}
            return all(s.get("phase") in ("Succeeded", "Failed") for s in runs.values()) and len(runs) == 2 and runs
        runs = wait_for("both runs finished", finished, timeout=90)
    assert not kubelet.errors, kubelet.errors
    logs = "\n".join(f"--- {k}\n{v}" for k, v in kubelet.logs.items())
    trials = {t["spec"]["run"]: t["status"] for t in cluster.trials()}
    assert trials["oracle"]["state"] == "succeeded", (trials["oracle"], logs)
    assert trials["oracle"]["score"]["score"] == 1.0 and trials["oracle"]["score"]["passed"] is True
    assert trials["nop"]["state"] == "succeeded" and trials["nop"]["score"]["score"] == 0.0
    assert runs["oracle"]["meanScore"] == 1.0 and runs["nop"]["meanScore"] == 0.0

    keys = {o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix="bench/oracle/")["Contents"]}
    base = "bench/oracle/alpha/0/"
    assert {base + "result.json", base + "score.json"} <= keys
    assert any(k.startswith(base + "a1/agent/") and k.endswith("workspace.tar.gz") for k in keys), keys
    assert any(k.startswith(base + "a1/grade1/") for k in keys), keys


@pytest.mark.parametrize("bad", [{"trials": 0}, {"mode": "bogus"}, {"parallelism": -1}, {"errorInjectionRate": 2},
                                 {"artifacts": {"prefix": "no-bucket"}}, {"budgets": {"maxTokens": -5}}])
def test_the_crd_schema_rejects_invalid_specs(cluster, bad):
    from kubernetes.client.exceptions import ApiException

    manifest = run_manifest("invalid", ["alpha"], "b", "http://127.0.0.1:1")
    manifest["spec"].update(bad)
    with pytest.raises(ApiException) as e:
        cluster.custom.create_namespaced_custom_object("clawkube.io", "v1alpha1", cluster.ns, "benchmarkruns", manifest)
    assert e.value.status == 422


