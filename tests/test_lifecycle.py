"""The trial lifecycle end to end on the local machine: phases, firewall, timeouts, grader faults, resume."""
from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from clawkube.local.runner import LocalRunner, RunError
from clawkube.results.model import ErrorKind, TrialState
from tests.lifecycle_helpers import GT_CRITERION, NO_NAMESPACES, SECRET, make_task, needs_namespaces, run, spec


@pytest.fixture
def task_root(tmp_path: Path) -> Path:
    make_task(tmp_path)
    return tmp_path


def test_oracle_passes_nop_fails_and_files_are_written(task_root: Path, tmp_path: Path):
    out = tmp_path / "out-oracle"
    o = run(task_root / "tasks", out)
    (r,) = o.results
    assert r.state == TrialState.SUCCEEDED and r.score.passed and r.score.score == 1.0
    assert r.score.criteria[GT_CRITERION] == 1.0  # grading-only file was there for the grader
    d = out / "trials" / "answer" / "0"
    for name in ("result.json", "score.json", "usage.json", "transcript.jsonl", "workspace.tar.gz",
                 "workspace.diff.json", "agent.stdout", "grader.log", "env_snapshot.json"):
        assert (d / name).exists(), name
    assert json.loads((d / "workspace.diff.json").read_text())["added"] == ["answer.txt"]
    assert set(r.phase_seconds) == {"setup", "agent", "capture", "firewall", "grade"}
    events = [json.loads(line) for line in (d / "transcript.jsonl").read_text().splitlines()]
    assert events[0]["role"] == "user" and events[1]["type"] == "tool_call"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["overall"]["mean_score"] == 1.0
    # the agent's snapshot never contains the grading-only file
    import tarfile
    with tarfile.open(d / "workspace.tar.gz") as t:
        assert "gt/answer.txt" not in t.getnames() and "answer.txt" in t.getnames()

    n = run(task_root / "tasks", tmp_path / "out-nop", harness="nop").results[0]
    assert n.state == TrialState.SUCCEEDED and not n.score.passed and n.score.score == 0.0


HOSTILE = {
    # look for ground truth, grader code and the reference solution everywhere an agent might
    "grep_secret": "grep -rlE 'GT-SECRET-[0-9a-f]{{32}}' /tmp /var/tmp /opt /home /srv /mnt 2>/dev/null | head -20",
    "grep_grader": "grep -rlE 'saw_gt_[0-9a-f]{{12}}' /tmp /var/tmp /opt /home /srv /mnt 2>/dev/null | head -20",
    "find": "find /tmp /var/tmp /opt /home /srv /mnt \\( -name 'answer.txt' -o -name '*.md' -o -name 'grader.py' "
            "-o -name 'reference_solution.sh' -o -name 'grading.json' \\) 2>/dev/null | grep -F '{root}'",
    # '[/]...' and '[G]...': patterns that cannot match grep's own command line in /proc
    "proc": "cat /proc/*/cmdline /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -e '[/]{root_tail}' "
            "-e '[G]T-SECRET-[0-9a-f]'",
    "list": "ls -A {root}/tasks {root}/fixtures/answer/gt {out}/.private {out}/.grading {out}/trials 2>&1 | grep -v ':$'",
    "read_task": "cat {root}/tasks/answer.md {root}/fixtures/answer/gt/answer.txt 2>&1",
    "whoami": "id -u",
    "work": "echo 42 > answer.txt",
}


def _hostile_run(tmp_path: Path, mode: str) -> tuple[dict[str, str], object]:
    # a world-traversable root, so that only the sandbox (not file permissions) stands in the way
    root = Path(tempfile.mkdtemp(prefix="clawkube-hostile-", dir=tmp_path.parent.parent.parent))
    # another run's leftovers in the host's /tmp (as other tests and runs leave them): never visible to the agent
    decoy = Path(tempfile.mkdtemp(prefix="clawkube-decoy-", dir=tmp_path.parent.parent.parent))
    try:
        root.chmod(0o755)
        decoy.chmod(0o755)
        (decoy / "answer.txt").write_text("GT-SECRET-" + "0" * 32 + "\n")
        (decoy / "grader.py").write_text("saw_gt_" + "0" * 12 + "\n")
        make_task(root, timeout=300)
        out = root / "out"
        fill = {"root": str(root), "root_tail": str(root)[1:], "out": str(out)}  # the agent knows where to look, not what the secrets are
        cmds = [c.format(**fill) for c in HOSTILE.values()]
        (r,) = run(root / "tasks", out, harness="script", mode=mode, commands=cmds).results
        events = [json.loads(x) for x in (out / "trials/answer/0/transcript.jsonl").read_text().splitlines()]
        outputs = [e.get("content", "") for e in events if e["type"] == "tool_result"]
        return dict(zip(HOSTILE, outputs)), r
    finally:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(decoy, ignore_errors=True)


@pytest.mark.skipif(not needs_namespaces, reason=NO_NAMESPACES)
def test_hostile_agent_cannot_reach_grading_only_material(tmp_path: Path):
    seen, r = _hostile_run(tmp_path, "bwrap")
    assert r.firewall == "bwrap"
    assert int(seen["whoami"].strip()) >= 200000  # the hostile commands really ran, as the trial's own sandbox uid
    for step in ("grep_secret", "grep_grader", "find", "proc"):
        assert seen[step].strip() == "", f"{step} reached grading-only material: {seen[step]!r}"
    assert all("No such file" in line for line in seen["list"].strip().splitlines()), seen["list"]
    assert SECRET not in seen["read_task"] and "def grade" not in seen["read_task"]
    assert "No such file" in seen["read_task"]  # nothing outside the allowlist exists inside
    # ... while the grader, after the firewall, did see the ground truth and scored the honest part of the work
    assert r.score.criteria[GT_CRITERION] == 1.0 and r.score.passed


@pytest.mark.skipif(not needs_namespaces, reason=NO_NAMESPACES)
def test_the_hostile_probe_does_find_material_without_the_sandbox(tmp_path: Path):
    """Control: with the sandbox off the same probes find the ground truth, so the test above can fail."""
    seen, r = _hostile_run(tmp_path, "none")
    assert r.firewall == "none"
    assert SECRET in seen["read_task"] and "answer.md" in seen["find"] and seen["grep_secret"].strip()


def test_agent_timeout_is_enforced_and_still_graded(task_root: Path, tmp_path: Path):
    sp = spec(task_root / "tasks", "script", commands=["echo 42 > answer.txt", "sleep 60"])
    sp.timeout_seconds = 2
    start = time.monotonic()
    (r,) = LocalRunner(sp, tmp_path / "out", progress=None).run().results
    assert time.monotonic() - start < 30
    assert r.error_kind == ErrorKind.AGENT_TIMEOUT and "2s" in r.error_message
    assert r.usage.wall_seconds < 10
    assert r.score is not None and r.score.passed  # partial work done before the deadline is graded


def test_grader_crash_is_a_grading_error_not_a_score(tmp_path: Path):
    make_task(tmp_path, grader="def grade(transcript, workspace_path):\n    raise RuntimeError('boom in grader')\n")
    (r,) = run(tmp_path / "tasks", tmp_path / "out").results
    assert r.state == TrialState.FAILED and r.score is None
    assert r.error_kind == ErrorKind.GRADING_ERROR and "boom in grader" in r.error_message
    d = tmp_path / "out" / "trials" / "answer" / "0"
    assert (d / "transcript.jsonl").exists() and (d / "workspace.tar.gz").exists()  # evidence kept
    assert not (d / "score.json").exists()
    assert "boom in grader" in (d / "grader.log").read_text()


def test_grader_timeout_is_a_grading_error(tmp_path: Path):
    make_task(tmp_path, grader="import time\ndef grade(transcript, workspace_path):\n    time.sleep(60)\n")
    start = time.monotonic()
    (r,) = LocalRunner(spec(tmp_path / "tasks"), tmp_path / "out", progress=None, grader_timeout=2).run().results
    assert time.monotonic() - start < 30
    assert r.error_kind == ErrorKind.GRADING_ERROR and "timed out after 2s" in r.error_message


@pytest.mark.parametrize("body,needle", [
    ("    return {'overall_score': 1.5}", "outside 0..1"),
    ("    return 'yes'", "expected a dict"),
    ("    return {'overall_score': 'high'}", "no numeric field"),
    ("    return {'overall_score': {1, 2}}", "not JSON serializable"),
])
def test_bad_grader_output_is_a_grading_error(tmp_path: Path, body: str, needle: str):
    make_task(tmp_path, grader=f"def grade(transcript, workspace_path):\n{body}\n")
    (r,) = run(tmp_path / "tasks", tmp_path / "out").results
    assert r.error_kind == ErrorKind.GRADING_ERROR and needle in r.error_message


def test_resume_keeps_finished_trials_and_redoes_unfinished(task_root: Path, tmp_path: Path):
    out = tmp_path / "out"
    first = run(task_root / "tasks", out, trials=3).results
    assert len(first) == 3
    kept = {r.trial_index: (out / "trials" / "answer" / str(r.trial_index) / "result.json").read_text() for r in first}
    # trial 1 was interrupted: its folder exists, but no result.json
    (out / "trials" / "answer" / "1" / "result.json").unlink()
    again = run(task_root / "tasks", out, trials=3)
    assert len(again.results) == 3 and all(r.score.passed for r in again.results)
    assert (out / "trials" / "answer" / "0" / "result.json").read_text() == kept[0]
    assert (out / "trials" / "answer" / "2" / "result.json").read_text() == kept[2]
    assert json.loads((out / "summary.json").read_text())["overall"]["trials_finished"] == 3


def test_output_folder_of_a_different_spec_is_refused(task_root: Path, tmp_path: Path):
    out = tmp_path / "out"
    run(task_root / "tasks", out)
    with pytest.raises(RunError, match="different run spec"):
        run(task_root / "tasks", out, harness="nop")


def test_malformed_task_does_not_stop_the_run(task_root: Path, tmp_path: Path):
    (task_root / "tasks" / "broken.md").write_text("---\nid: broken\nname: x\n---\n\n## Prompt\n\nhi\n")
    o = run(task_root / "tasks", tmp_path / "out")
    assert [r.task_id for r in o.results] == ["answer"]
    assert any("broken.md" in e["path"] for e in o.task_errors)


def test_warmup_failure_is_a_setup_error_naming_the_line_not_retried(tmp_path: Path):
    md = make_task(tmp_path)
    md.write_text(md.read_text() + "\n## Warmup\n\n```bash\necho fine\nfalse && true\nls /no-such-dir\necho never\n```\n")
    (r,) = run(tmp_path / "tasks", tmp_path / "out").results
    assert r.error_kind == ErrorKind.SETUP_ERROR and r.attempt == 1, r.error_message
    assert "warmup failed at line 3: 'ls /no-such-dir'" in r.error_message and "No such file" in r.error_message


def test_a_retried_grading_is_counted_in_the_result_and_the_summary(tmp_path: Path):
    """The grader crashes on its first call and passes on the second: the trial is graded, and the retried
    grading shows in result.retries and the run summary's `retries` (not in its failed `errors`)."""
    grader = ("import os\ndef grade(transcript, workspace_path):\n"
              "    mark = os.path.join(workspace_path, '.graded-once')\n"
              "    if not os.path.exists(mark):\n"
              "        open(mark, 'w').close()\n"
              "        raise RuntimeError('first grading crashes')\n"
              "    return {'overall_score': 1.0}\n")
    make_task(tmp_path, grader=grader)
    sp = spec(tmp_path / "tasks")
    sp.retry.grading_error = 2
    outcome = LocalRunner(sp, tmp_path / "out", progress=None).run()
    (r,) = outcome.results
    assert r.score is not None and r.score.score == 1.0, r.error_message
    assert r.retries == {"grading_error": 1}
    assert outcome.summary.retries["grading_error"] == 1 and outcome.summary.errors["grading_error"] == 0


def test_each_task_is_extracted_once_by_its_first_trial_and_not_at_all_when_resumed(tmp_path: Path, monkeypatch):
    from clawkube.local import trial

    for t in ("answer", "second"):
        make_task(tmp_path, task_id=t)
    calls: list[str] = []
    real = trial.extract

    def counting(task_spec, harness, task):
        calls.append(task.task_id)
        time.sleep(0.2)  # a slow extraction: the task's other trial, in the other worker, must wait for it
        real(task_spec, harness, task)
    monkeypatch.setattr(trial, "extract", counting)
    sp = spec(tmp_path / "tasks", trials=2, parallel=2)
    out = tmp_path / "out"
    results = LocalRunner(sp, out, progress=None).run().results
    assert len(results) == 4 and all(r.score is not None and r.score.passed for r in results)
    assert sorted(calls) == ["answer", "second"]
    calls.clear()
    (out / "trials" / "second" / "1" / "result.json").unlink()  # one unfinished trial
    again = LocalRunner(sp, out, progress=None).run().results
    assert len(again) == 4 and all(r.score is not None for r in again)
    assert calls == ["second"]  # the finished task's bundles are not extracted again
