"""EvoClawBench modes on the operator, against the real kube-apiserver, with the pods' containers really run
(tests/k8s/process_kubelet.py): one BenchmarkRun of baseline, PreSkill and PostSkill, a scripted agent that
writes a skill when asked to and uses it when it finds it; every stage's pod, the S3 hand-offs between them,
the scores, usage split and the run's ratios against baseline."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.k8s.conftest import wait_for
from tests.k8s.sample import run_manifest
from tests.test_skill_modes import EXECUTE, PARTIAL, TASK, WRITE_SKILL

pytestmark = [pytest.mark.apiserver, pytest.mark.s3, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]


def test_baseline_preskill_postskill_in_one_run(cluster, bucket, s3, s3_server, operator_factory):
    from tests.k8s.process_kubelet import ProcessKubelet

    operator_factory(tasks_root=str(REPO))
    cluster.create_secret("s3-creds", {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"})
    manifest = run_manifest("modes", [], bucket, s3_server, secret="s3-creds", trials=1, parallelism=3,
                            modes=["baseline", "preskill", "postskill"],
                            selector={"ids": [TASK.id]},
                            agent={"harness": "script", "args": {"commands": EXECUTE, "authoring_commands": WRITE_SKILL}})
    manifest["spec"]["tasks"] = {"path": "tasks/evoclaw"}
    with ProcessKubelet(cluster, timeout=180) as kubelet:
        cluster.create_run(manifest)
        run = wait_for("the run finished", lambda: (r := cluster.run("modes")).get("status", {}).get("phase")
                       in ("Succeeded", "Failed") and r, timeout=240)
    logs = "\n".join(f"--- {k}\n{v}" for k, v in kubelet.logs.items())
    assert not kubelet.errors, kubelet.errors
    status = run["status"]
    assert status["phase"] == "Succeeded", (status, logs)
    trials = {t["spec"]["mode"]: t for t in cluster.trials()}
    assert set(trials) == {"baseline", "preskill", "postskill"}
    assert {t["metadata"]["name"] for t in trials.values()} == {f"modes-{TASK.id}-{m}-0" for m in trials}

    # every stage ran in its own pod, in order
    pods = {p["metadata"]["name"]: p for p in cluster.pods()}
    for mode, suffixes in {"baseline": ["agent", "grade"], "preskill": ["author", "agent", "grade"],
                           "postskill": ["first", "first-grade", "summary", "agent", "grade"]}.items():
        name = trials[mode]["metadata"]["name"]
        mine = sorted((p for p in pods if p.startswith(name + "-a1-")),
                      key=lambda p: pods[p]["metadata"]["creationTimestamp"] + p)
        assert {p[len(name) + 4:] for p in mine} == set(suffixes), (mode, mine, trials[mode]["status"].get("errorMessage"))
    for p in pods.values():  # every trial pod: presigned grants instead of the store's credentials
        env = {e["name"]: e.get("value") for e in p["spec"]["containers"][0]["env"]}
        assert "AWS_SECRET_ACCESS_KEY" not in env and "AWS_ACCESS_KEY_ID" not in env, p["metadata"]["name"]
        assert "CLAWKUBE_UPLOAD_GRANT" in env, p["metadata"]["name"]
        if p["metadata"]["labels"]["clawkube.io/role"] == "grade":  # reads exactly the graded attempt's artifacts
            agent_uri = next(a for a in p["spec"]["containers"][0]["command"] if a.startswith("s3://"))
            assert list(json.loads(env["CLAWKUBE_READ_GRANTS"])) == [agent_uri], p["metadata"]["name"]
    summary_pod = pods[f"{trials['postskill']['metadata']['name']}-a1-summary"]
    assert "grading" not in json.dumps(summary_pod["spec"]["volumes"])  # never a grading bundle
    env = {e["name"]: e.get("value") for e in summary_pod["spec"]["containers"][0]["env"]}
    assert env["CLAWKUBE_FIRST_RUN_URI"].endswith("/postskill-0/a1/first_run/")
    reads = json.loads(env["CLAWKUBE_READ_GRANTS"])  # exactly the first run's agent artifacts, nothing graded
    assert list(reads) == [env["CLAWKUBE_FIRST_RUN_URI"]] and "transcript.jsonl" in reads[env["CLAWKUBE_FIRST_RUN_URI"]]
    grant = json.loads(env["CLAWKUBE_UPLOAD_GRANT"])
    assert grant["prefix"].endswith("/postskill-0/a1/summary/")

    base, pre, post = (trials[m]["status"] for m in ("baseline", "preskill", "postskill"))
    assert base["score"]["score"] == pytest.approx(PARTIAL), logs  # no skills: the partial answer
    assert pre["score"]["score"] == 1.0 and post["score"]["score"] == 1.0, logs  # with the authored skill
    assert pre["score"]["details"]["skills"]["source"] == "authored"
    assert set(pre["score"]["details"]["skills"]["files"]) == {f"word-stats/{n}" for n in
                                                                ("solve.sh", "SKILL.md", "workspace_entries.txt")}
    first = post["score"]["details"]["first_run"]
    assert first["score"]["score"] == pytest.approx(PARTIAL) and [s["name"] for s in post["stages"]] == [
        "first_run", "first_run_grade", "summary"]
    assert set(post["score"]["details"]["phase_usage"]) == {"first_run", "summary", "execution"}
    assert post["usage"]["toolCalls"] == 2 * len(EXECUTE) + len(WRITE_SKILL)
    assert post["score"]["details"]["execution_usage"]["tool_calls"] == len(EXECUTE)
    assert base["score"]["details"]["mode"] == "baseline" and "first_run" not in base["score"]["details"]

    # run level: the ratios against baseline, as on the local runner
    by_mode = status["summary"]["by_mode"]
    assert by_mode["preskill"]["vs_baseline"]["score"] == pytest.approx(1.0 / PARTIAL)
    assert by_mode["postskill"]["vs_baseline"]["score"] == pytest.approx(1.0 / PARTIAL)
    assert status["counts"]["succeeded"] == 3 and status["progress"] == "3/3"

    # the artifacts: each stage's folder; the summary's context from the first run, the skills it wrote
    keys = {o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix="bench/modes/")["Contents"]}
    post_base = f"bench/modes/{TASK.id}/postskill-0/"
    for folder in ("a1/first_run/transcript.jsonl", "a1/first_run_grade/score.json", "a1/summary/first_run_context.json",
                   "a1/summary/skills/word-stats/solve.sh", "a1/agent/skills.json", "result.json"):
        assert post_base + folder in keys, (folder, sorted(keys))
    # EvoClawBench's first_run_context.json, as the summary phase found it in its workspace
    context = json.loads(s3.get_object(Bucket=bucket, Key=post_base + "a1/summary/first_run_context.json")["Body"].read())
    assert context["task_id"] == TASK.id and context["grade"]["score"] == pytest.approx(PARTIAL)
    assert any("stats.json" in c for c in context["grading_criteria"])
    result = json.loads(s3.get_object(Bucket=bucket, Key=post_base + "result.json")["Body"].read())
    assert result["mode"] == "postskill" and result["score"]["details"]["first_run"]["score"]["score"] == PARTIAL
