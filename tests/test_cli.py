"""The `clawkube` command line as a user runs it (subprocesses), and the pod commands' hand-off."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from clawkube.contracts import termination
from clawkube.lifecycle import bundle
from clawkube.benchmarks.loader import load_task
from tests.lifecycle_helpers import make_task

REPO = Path(__file__).resolve().parents[1]


def clawkube(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO / "operator"))
    return subprocess.run([sys.executable, "-m", "clawkube", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


def test_run_prints_table_and_writes_results(tmp_path: Path):
    make_task(tmp_path)
    out = tmp_path / "out"
    p = clawkube("run", "--tasks", str(tmp_path / "tasks"), "--agent", "oracle", "--trials", "2", "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert "2/2 trials finished" in p.stdout and "ALL" in p.stdout
    assert "2/2" in p.stderr  # progress bar
    assert json.loads((out / "summary.json").read_text())["overall"]["pass_at_k"]["2"] == 1.0
    rep = clawkube("report", str(out))
    assert rep.returncode == 0 and "2/2 trials finished" in rep.stdout
    js = json.loads(clawkube("report", str(out), "--json").stdout)
    assert js["overall"]["trials_finished"] == 2


def test_run_yaml_benchmarkrun_manifest_with_flag_override(tmp_path: Path):
    make_task(tmp_path)
    manifest = {"apiVersion": "clawkube.io/v1alpha1", "kind": "BenchmarkRun", "metadata": {"name": "x"},
                "spec": {"tasks": {"path": "tasks"}, "agent": {"harness": "nop"}, "trials": 1}}
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(manifest))
    out = tmp_path / "out"
    p = clawkube("run", str(tmp_path / "run.yaml"), "--agent", "oracle", "--out", str(out), "--quiet")
    assert p.returncode == 0, p.stderr
    run = json.loads((out / "run.json").read_text())
    assert run["spec"]["agent"]["harness"] == "oracle" and run["tasks"] == ["answer"]


def test_bad_spec_and_missing_tasks_are_clear_errors(tmp_path: Path):
    (tmp_path / "run.yaml").write_text("spec:\n  tasks: {path: t}\n  trials: 0\n")
    p = clawkube("run", str(tmp_path / "run.yaml"), "--out", str(tmp_path / "o"))
    assert p.returncode == 2 and "trials" in p.stderr
    p = clawkube("run", "--tasks", str(tmp_path / "nowhere"), "--out", str(tmp_path / "o"))
    assert p.returncode == 2 and "does not exist" in p.stderr


def test_script_agent_failures_give_exit_code_3(tmp_path: Path):
    make_task(tmp_path, grader="def grade(transcript, workspace_path):\n    raise ValueError('bad grader')\n")
    p = clawkube("run", "--tasks", str(tmp_path / "tasks"), "--agent", "oracle", "--out", str(tmp_path / "o"),
                 "--quiet")
    assert p.returncode == 3 and "grading_error" in p.stdout


def test_validate_reports_malformed_and_nop_passing_tasks(tmp_path: Path):
    make_task(tmp_path, task_id="good")
    # a task that nop passes (grader always gives 1) must be reported as a problem
    make_task(tmp_path, task_id="trivial", grader="def grade(transcript, workspace_path):\n"
                                                  "    return {'overall_score': 1.0}\n")
    (tmp_path / "tasks" / "broken.md").write_text("---\nid: broken\n---\n")
    p = clawkube("validate", str(tmp_path / "tasks"))
    assert p.returncode == 1
    assert "INVALID" in p.stdout and "broken.md" in p.stdout
    assert "PROBLEM  trivial" in p.stdout and "nop    must fail" in p.stdout
    assert "ok       good" in p.stdout


def test_pod_agent_then_pod_grade_hand_off_through_a_folder(tmp_path: Path):
    md = make_task(tmp_path)
    task = load_task(md)
    (tmp_path / "agent.tgz").write_bytes(bundle.agent_bundle(task, "oracle"))
    (tmp_path / "grading.tgz").write_bytes(bundle.grading_bundle(task))
    # the agent side has no grading material at all
    names = _names(tmp_path / "agent.tgz")
    assert not any(n.startswith("files/") or n == "grader.py" or n == "grading.json" for n in names)
    assert "reference_solution.sh" in names  # the oracle harness only
    assert "reference_solution.sh" not in _names_of(bundle.agent_bundle(task, "nop"))
    a = clawkube("pod", "agent", "--bundle", str(tmp_path / "agent.tgz"), "--workspace", str(tmp_path / "w/workspace"),
                 "--out", str(tmp_path / "aout"), "--harness", "oracle", "--termination-log", str(tmp_path / "ta"))
    assert a.returncode == 0, a.stderr
    ta = termination.parse(json.loads((tmp_path / "ta").read_text()))
    assert ta.phase == "agent" and ta.exit_code == 0 and ta.error_kind is None
    g = clawkube("pod", "grade", "--grading", str(tmp_path / "grading.tgz"), "--agent-artifacts",
                 str(tmp_path / "aout"), "--out", str(tmp_path / "gout"), "--termination-log", str(tmp_path / "tg"))
    assert g.returncode == 0, g.stderr
    tg = termination.parse(json.loads((tmp_path / "tg").read_text()))
    assert tg.score.passed and tg.score.score == 1.0
    assert (tmp_path / "gout" / "score.json").exists()


def test_pod_grade_without_agent_artifacts_is_an_infra_error(tmp_path: Path):
    task = load_task(make_task(tmp_path))
    (tmp_path / "grading.tgz").write_bytes(bundle.grading_bundle(task))
    g = clawkube("pod", "grade", "--grading", str(tmp_path / "grading.tgz"), "--agent-artifacts",
                 str(tmp_path / "missing"), "--out", str(tmp_path / "gout"), "--termination-log", str(tmp_path / "tg"))
    assert g.returncode == 0, g.stderr  # the verdict travels in the termination message, not the exit code
    tg = termination.parse(json.loads((tmp_path / "tg").read_text()))
    assert tg.score is None and tg.error_kind == "infra" and "agent's artifacts" in tg.error_message


def _names(path: Path) -> list[str]:
    return _names_of(path.read_bytes())


def _names_of(data: bytes) -> list[str]:
    import io
    import tarfile
    with tarfile.open(fileobj=io.BytesIO(data)) as t:
        return t.getnames()


def test_relative_paths_are_resolved_at_the_cli_edge(tmp_path: Path):
    """Relative --tasks / --out / run.yaml tasks.path / validate / report all work from any working directory."""
    make_task(tmp_path)
    p = clawkube("run", "--tasks", "tasks", "--agent", "oracle", "--out", "out/", "--quiet", cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    (r,) = [json.loads(f.read_text()) for f in (tmp_path / "out" / "trials").glob("*/*/result.json")]
    assert r["score"]["score"] == 1.0 and r["error_kind"] is None
    assert "results: out/summary.json, out/trials/" in p.stdout
    run = json.loads((tmp_path / "out" / "run.json").read_text())
    assert run["spec"]["tasks"]["path"] == str(tmp_path / "tasks")
    # the default --out ("results") is relative too
    p = clawkube("run", "--tasks", "./tasks", "--agent", "oracle", "--quiet", cwd=tmp_path)
    assert p.returncode == 0 and (tmp_path / "results" / "summary.json").exists(), p.stdout + p.stderr
    # run.yaml's tasks.path is relative to run.yaml, wherever the command runs
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "run.yaml").write_text(yaml.safe_dump(
        {"tasks": {"path": "../tasks"}, "agent": {"harness": "oracle"}, "trials": 1}))
    (tmp_path / "elsewhere").mkdir()
    p = clawkube("run", "../conf/run.yaml", "--out", "o2", "--quiet", cwd=tmp_path / "elsewhere")
    assert p.returncode == 0, p.stdout + p.stderr
    assert json.loads((tmp_path / "elsewhere" / "o2" / "summary.json").read_text())["overall"]["mean_score"] == 1.0
    rep = clawkube("report", "o2", cwd=tmp_path / "elsewhere")
    assert rep.returncode == 0 and "1/1 trials finished" in rep.stdout
    v = clawkube("validate", "../tasks", cwd=tmp_path / "elsewhere")
    assert v.returncode == 0 and "ok       answer" in v.stdout, v.stdout


def test_pod_commands_take_relative_paths(tmp_path: Path):
    task = load_task(make_task(tmp_path))
    (tmp_path / "agent.tgz").write_bytes(bundle.agent_bundle(task, "oracle"))
    (tmp_path / "grading.tgz").write_bytes(bundle.grading_bundle(task))
    a = clawkube("pod", "agent", "--bundle", "agent.tgz", "--workspace", "w/workspace", "--out", "aout",
                 "--harness", "oracle", "--termination-log", "ta", cwd=tmp_path)
    assert a.returncode == 0 and json.loads((tmp_path / "ta").read_text())["exit_code"] == 0, a.stderr
    g = clawkube("pod", "grade", "--grading", "grading.tgz", "--agent-artifacts", "aout", "--out", "gout",
                 "--termination-log", "tg", cwd=tmp_path)
    assert g.returncode == 0, g.stderr
    assert json.loads((tmp_path / "tg").read_text())["score"]["score"] == 1.0


def test_the_runner_refuses_relative_paths(tmp_path: Path):
    import pytest

    from clawkube.local.runner import LocalRunner, RunError
    from tests.lifecycle_helpers import spec

    with pytest.raises(RunError, match="absolute"):
        LocalRunner(spec(tmp_path / "tasks"), Path("results"), progress=None)
    with pytest.raises(RunError, match="absolute"):
        LocalRunner(spec(Path("tasks")), tmp_path / "o", progress=None)


def test_pod_commands_leave_no_grading_material_in_tmp(tmp_path: Path):
    """`pod agent` / `pod grade` outside a pod (tests, a developer's machine) remove the bundles they unpacked
    and the grading scratch: a shared /tmp must not keep a task's ground truth for the next agent to read."""
    import tempfile

    task = load_task(make_task(tmp_path))
    (tmp_path / "agent.tgz").write_bytes(bundle.agent_bundle(task, "oracle"))
    (tmp_path / "grading.tgz").write_bytes(bundle.grading_bundle(task))
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env_tmp = {"TMPDIR": str(tmp)}
    for argv in (["pod", "agent", "--bundle", "agent.tgz", "--workspace", "w/workspace", "--out", "aout",
                  "--harness", "oracle", "--termination-log", "ta"],
                 ["pod", "grade", "--grading", "grading.tgz", "--agent-artifacts", "aout", "--out", "gout",
                  "--termination-log", "tg"]):
        p = subprocess.run([sys.executable, "-m", "clawkube", *argv], cwd=tmp_path, capture_output=True, text=True,
                           env=dict(os.environ, PYTHONPATH=str(REPO / "operator"), **env_tmp), timeout=300)
        assert p.returncode == 0, p.stderr
    assert json.loads((tmp_path / "tg").read_text())["score"]["score"] == 1.0
    assert list(tmp.iterdir()) == [], list(tmp.rglob("*"))
    assert tempfile.gettempdir() != str(tmp)
