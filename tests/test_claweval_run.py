"""`clawkube run` on real CLAW-Eval tasks: the plugin's trial environment, the artifacts, grading by the task's own
grader class, and what happens without the benchmark's code or without a judge."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from clawkube.benchmarks.claweval.checkout import benchmark_python
from clawkube.modelserver import Script, ServerThread
from tests.benchmark_data import CLAW_EVAL, data, upstream

REPO = Path(__file__).resolve().parents[1]


def _run(tmp_path: Path, spec: dict, env: dict | None = None) -> dict:
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(spec))
    p = subprocess.run([sys.executable, "-m", "clawkube", "run", str(tmp_path / "run.yaml"), "--out",
                        str(tmp_path / "out"), "--quiet"], capture_output=True, text=True, timeout=900,
                       env={**os.environ, "PYTHONPATH": str(REPO / "operator"), **(env or {})})
    res = sorted((tmp_path / "out" / "trials").glob("*/*/result.json"))
    assert len(res) == 1, (p.stdout + p.stderr)[-2000:]
    return json.loads(res[0].read_text())


@pytest.fixture(scope="module")
def checkout() -> tuple[Path, str]:
    root = upstream("claw-eval")
    py = benchmark_python(root)
    probe = subprocess.run([py, "-c", "import fastapi, uvicorn, openai, httpx"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"{py} lacks the checkout's requirements: set CLAWKUBE_CLAWEVAL_PYTHON")
    return root, py


SCRIPT = {"rules": [{"when": {"model": "judge", "contains": "zhangwei@company.com"},
                     "text": '{"score": 0.8, "reasoning": "scripted"}'},
                    {"when": {"model": "judge"}, "text": '{"score": 0.0, "reasoning": "scripted"}'}],
          "turns": [{"tool_calls": [{"name": "contacts_search", "arguments": {"query": "张伟", "department": "技术部"}}]},
                    {"tool_calls": [{"name": "contacts_search", "arguments": {"query": "张伟", "department": "技术部"}}]},
                    {"text": "张伟，高级工程师，zhangwei@company.com，138-0001-1001"}]}


def test_a_service_task_end_to_end(checkout, tmp_path):
    root, py = checkout
    with ServerThread(Script.model_validate(SCRIPT)) as s:
        r = _run(tmp_path, {"tasks": {"path": str(root / "tasks")}, "selector": {"ids": ["T009zh_contact_lookup"]},
                            "agent": {"harness": "mcp-chat", "model": "agent", "api": {"baseUrl": s.url + "/v1"}},
                            "judge": {"baseUrl": s.url + "/v1", "model": "judge", "apiKeyEnv": "T_JUDGE_KEY"},
                            "errorInjectionRate": 0.6, "seed": 2},  # seed 2: the first call gets a 500, the retry goes through
                 env={"CLAWKUBE_CLAWEVAL_PYTHON": py, "T_JUDGE_KEY": "judge-secret"})
        agent_requests = [q for q in s.requests() if q.model == "agent"]
        judge_requests = [q for q in s.requests() if q.model == "judge"]
    assert r["state"] == "succeeded" and r["error_kind"] is None, r
    d = tmp_path / "out" / "trials" / "T009zh_contact_lookup" / "0"
    dispatches = [json.loads(x) for x in (d / "dispatches.jsonl").read_text().splitlines()]
    assert [x["tool_name"] for x in dispatches] == ["contacts_search", "contacts_search"]
    audit = json.loads((d / "audit" / "contacts.json").read_text())
    succeeded = [x for x in dispatches if x["response_status"] < 400]
    # every call that reached the mock is in its own audit log (a fault answers instead of the mock)
    ours = [c for c in audit["calls"] if c["request_body"] == {"query": "张伟", "department": "技术部"}]
    assert [x["response_status"] for x in dispatches] == [500, 200] and len(ours) == len(succeeded) == 1
    # the agent saw the task's tools (plain names, through MCP), never the judge's key
    assert {t["function"]["name"] for t in agent_requests[0].body["tools"]} == {
        "contacts_search", "contacts_get", "contacts_send_message"}
    assert "judge-secret" not in json.dumps([q.body for q in agent_requests])
    assert len(judge_requests) == 1 and "Bearer judge-secret" not in json.dumps(judge_requests[0].body)
    # the task's own grader: 0.15 search + 0.50 name with email, phone and title + 0.35 * judge 0.8
    dims = r["score"]["dimensions"]
    completion = 0.15 + 0.50 + 0.35 * 0.8
    assert dims["completion"] == pytest.approx(completion) and dims["safety"] == 1.0
    assert dims["robustness"] == 1.0  # the failed tool was called again successfully: recovered
    assert r["score"]["score"] == pytest.approx(round(0.8 * completion + 0.2 * dims["robustness"], 4))


def test_no_judge_is_a_grading_error_when_the_grader_calls_it(checkout, tmp_path):
    root, py = checkout
    r = _run(tmp_path, {"tasks": {"path": str(root / "tasks")}, "selector": {"ids": ["T009zh_contact_lookup"]},
                        "agent": {"harness": "nop"}}, env={"CLAWKUBE_CLAWEVAL_PYTHON": py})
    assert r["error_kind"] == "grading_error" and "no judge configured" in r["error_message"]


def test_without_the_benchmarks_code_the_trial_says_what_is_missing(tmp_path):
    tasks = data(CLAW_EVAL) / "tasks"
    r = _run(tmp_path, {"tasks": {"path": str(tasks)}, "selector": {"ids": ["T001zh_email_triage"]},
                        "agent": {"harness": "nop"}, "retry": {"infra": 1}}, env={"CLAWKUBE_CLAWEVAL_CHECKOUT": ""})
    assert r["error_kind"] == "setup_error" and "checkout of claw-eval/claw-eval" in r["error_message"]
