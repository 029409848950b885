"""The run's LLM judge reaches the grading process (locally) and the grading pod (cluster), never an agent; a
task whose grading needs a judge, in a run without one, is `grading_error: no judge configured`."""
from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest

from clawkube.benchmarks import registry
from clawkube.benchmarks.base import Benchmark
from clawkube.benchmarks.loader import load_task
from clawkube.contracts import judge as judges
from clawkube.contracts.grading import GradeRequest
from clawkube.contracts.pod_env import PodEnv
from clawkube.k8s.podspec import PodParams, agent_pod, grade_pod
from clawkube.k8s.model import TaskTrialSpec
from clawkube.lifecycle import bundle
from clawkube.local.runner import LocalRunner, RunError
from clawkube.results.model import ErrorKind, TrialState
from clawkube.runspec import AgentSpec, BenchmarkRunSpec, JudgeSpec, ModelApi, RetryPolicy, SecretRef, TaskSource
from tests.lifecycle_helpers import make_task

KEY_VAR = "CLAWKUBE_TEST_JUDGE_KEY"
JUDGE_GRADER = '''
import os
def grade(workspace_path, judge):
    got = open(os.path.join(workspace_path, "answer.txt")).read().strip() if os.path.exists(
        os.path.join(workspace_path, "answer.txt")) else ""
    expected = {"model": "judge-model", "base_url": "http://127.0.0.1:9/v1", "api_key": os.environ["EXPECTED_KEY"]}
    return {"judge_ok": float(judge == expected), "answer_right": float(got == "42"),
            "overall_score": float(judge == expected and got == "42")}
'''


def _judge_task(root: Path) -> Path:
    grader = JUDGE_GRADER.replace('os.environ["EXPECTED_KEY"]', repr(os.environ[KEY_VAR]))
    md = make_task(root, grader=grader)
    # the task itself lists the judge's key variable among its env: the agent must still not get it
    md.write_text(md.read_text() + f"\n## Env\n\n- {KEY_VAR}\n")
    return md


@pytest.fixture
def judge_key(monkeypatch):
    key = f"judge-key-{uuid.uuid4().hex}"
    monkeypatch.setenv(KEY_VAR, key)
    return key


def _run(root: Path, out: Path, judge: JudgeSpec | None, commands: list[str]):
    spec = BenchmarkRunSpec(tasks=TaskSource(path=str(root / "tasks")), trials=1, parallelism=1,
                            agent=AgentSpec(harness="script", args={"commands": commands}),
                            retry=RetryPolicy(grading_error=1), judge=judge)
    return LocalRunner(spec, out, sandbox_mode="auto", progress=None).run()


SPY = ["env", "cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -i judge; true", "echo 42 > answer.txt"]


def test_the_grader_gets_the_judge_and_the_agent_never_does(tmp_path, judge_key):
    _judge_task(tmp_path)
    judge = JudgeSpec(model="judge-model", base_url="http://127.0.0.1:9/v1", api_key_env=KEY_VAR)
    (r,) = _run(tmp_path, tmp_path / "out", judge, SPY).results
    assert r.state is TrialState.SUCCEEDED, r.error_message
    assert r.score.criteria["judge_ok"] == 1.0 and r.score.score == 1.0
    seen = (tmp_path / "out/trials/answer/0/transcript.jsonl").read_text()
    assert "PATH=" in seen  # the spy really listed the agent's environment
    assert judge_key not in seen and "CLAWKUBE_JUDGE" not in seen and KEY_VAR not in seen
    written = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert written and not any(judge_key.encode() in p.read_bytes() for p in written)  # never in a file


def test_a_judge_task_without_a_judge_is_a_grading_error(tmp_path, judge_key):
    _judge_task(tmp_path)
    (r,) = _run(tmp_path, tmp_path / "out", None, ["echo 42 > answer.txt"]).results
    assert (r.state, r.error_kind) == (TrialState.FAILED, ErrorKind.GRADING_ERROR)
    assert r.error_message.startswith("no judge configured")
    assert not (tmp_path / "out/trials/answer/0/grader.log").exists()  # the grader was never started


def test_a_judge_key_variable_that_is_not_set_stops_the_run(tmp_path, monkeypatch):
    monkeypatch.delenv(KEY_VAR, raising=False)
    make_task(tmp_path)
    with pytest.raises(RunError, match=f"apiKeyEnv names {KEY_VAR}, which is not set"):
        _run(tmp_path, tmp_path / "out", JudgeSpec(model="m", api_key_env=KEY_VAR), [])


def test_needs_judge_follows_the_grader_signature(tmp_path, judge_key):
    task = load_task(_judge_task(tmp_path))
    assert registry.get(task.format).needs_judge(task)
    d = tmp_path / "g"
    bundle.extract(bundle.grading_bundle(task), d)
    assert bundle.read_grading_manifest(d).needs_judge
    optional = load_task(make_task(tmp_path / "opt", grader="def grade(workspace_path, judge=None):\n"
                                                            "    return {'overall_score': 1.0}\n"))
    assert not registry.get(optional.format).needs_judge(optional)


def test_agent_keeps_its_own_model_key_when_the_judge_shares_it():
    judge = JudgeSpec(model="m", api_key_env="SHARED")
    own = AgentSpec(harness="script", api=ModelApi(api_key_env="SHARED"))
    assert "SHARED" not in judges.agent_must_not_see(judge, own)
    assert "SHARED" in judges.agent_must_not_see(judge, AgentSpec(harness="script"))
    assert set(judges.ALL_ENV) <= judges.agent_must_not_see(None, own)


class _EnvJudged(Benchmark):
    """Graders that read the judge from OPENAI_* variables (as some benchmarks' graders do)."""

    name = "env-judged"
    title = "EnvJudged"

    def detect(self, path):
        return False

    def load(self, path):
        raise NotImplementedError

    def score(self, m, raw, evidence):
        raise NotImplementedError

    def judge_env(self, judge):
        return {"OPENAI_API_KEY": judge.api_key or "", "OPENAI_BASE_URL": judge.base_url or "",
                "JUDGE_MODEL": judge.model}


def test_a_plugin_maps_the_judge_to_what_its_graders_read(tmp_path, monkeypatch):
    for k in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "JUDGE_MODEL"):
        monkeypatch.delenv(k, raising=False)
    grader = tmp_path / "grader.py"
    grader.write_text("import os\nSEEN = (os.environ['OPENAI_API_KEY'], os.environ['OPENAI_BASE_URL'], "
                      "os.environ['JUDGE_MODEL'])\n"
                      "def grade():\n    return {'ok': float(SEEN == ('k1', 'http://j/v1', 'jm'))}\n")
    req = GradeRequest(benchmark="env-judged", grader_file=str(grader), workspace_path="-", transcript_path="-",
                       audit_dir="-", task_manifest_path="-", env_snapshot_path="-", output_path="-",
                       judge=judges.JudgeConfig(model="jm", base_url="http://j/v1"))
    judge = judges.Judge(**req.judge.model_dump(), api_key="k1")
    assert _EnvJudged().run_grader(req, judge) == {"ok": 1.0}


# --- cluster: pod specs -------------------------------------------------------------------------------------------

def _params(judge: JudgeSpec | None, stage: str = "execution") -> PodParams:
    run_spec = BenchmarkRunSpec(tasks=TaskSource(path="/tasks"), agent=AgentSpec(harness="nop"), judge=judge)
    spec = TaskTrialSpec(run="r", task_id="t", category="c", task_format="wildclawbench", trial_index=0,
                         content_hash="h", agent_bundle="cm-a", grading_bundle="cm-g", timeout_seconds=60,
                         grader_timeout_seconds=60)
    return PodParams(name="r-t-0-pod", namespace="ns", trial_uid="uid", trial="r-t-0", spec=spec, run_spec=run_spec, image="img", deadline_seconds=100, attempt=1,
                     artifact_uri=None, stage=stage)


def _env(pod: dict) -> dict[str, dict]:
    return {e["name"]: e for c in pod["spec"]["containers"] for e in c.get("env", [])}


def test_the_grading_pod_gets_the_judge_from_its_secret_and_agent_pods_never_do():
    judge = JudgeSpec(model="jm", base_url="http://judge/v1", api_key_env="LOCAL_ONLY",
                      api_key_secret=SecretRef(name="judge-secret", key="token"))
    env = _env(grade_pod(_params(judge), "s3://b/x"))
    assert env[judges.MODEL_ENV]["value"] == "jm" and env[judges.BASE_URL_ENV]["value"] == "http://judge/v1"
    assert env[judges.KEY_ENV]["valueFrom"] == {"secretKeyRef": {"name": "judge-secret", "key": "token"}}
    assert PodEnv.from_environ({k: v["value"] for k, v in env.items() if "value" in v}).judge_config() == \
        judges.JudgeConfig(model="jm", base_url="http://judge/v1")
    for stage in ("execution", "authoring", "first_run", "summary"):
        pod = agent_pod(_params(judge, stage))
        text = json.dumps(pod)
        assert "judge-secret" not in text and "CLAWKUBE_JUDGE" not in text and "LOCAL_ONLY" not in text


def test_no_judge_no_judge_env():
    assert not any(n.startswith("CLAWKUBE_JUDGE") for n in _env(grade_pod(_params(None), "s3://b/x")))
    assert PodEnv.from_environ({}).judge_config() is None
