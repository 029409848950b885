"""An EvoClawBench trial's agent works from the task's extracted bundle, which all its trials share in the run's
hidden folder (`<out>/.private`): the agent gets copies of the workspace and skills, never the folder itself, nor
its path (a sandbox's mount sources show in bubblewrap's command line inside). An agent that looks for it, in
every mode (PreSkill's skill-writing phase is seeded from the bundle): nothing found, and the trial still graded.
With the sandbox off (the control), the same probe finds it, so the test can fail."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from clawkube.local.runner import LocalRunner
from clawkube.runspec import AgentSpec, BenchmarkRunSpec, TaskSelector, TaskSource

from .attack import CONTROL, IS_ROOT, NEEDS_ROOT, SANDBOXED, outputs

REPO = Path(__file__).resolve().parents[2]
TASK = "evo-word-stats"

pytestmark = pytest.mark.skipif(not IS_ROOT, reason=NEEDS_ROOT)


def probes(out: Path) -> list[str]:
    hidden = f"{out}/.private"
    return [
        # '[.]private': a pattern that cannot match grep's own command line
        f"cat /proc/*/cmdline /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -F -e '{out}' | grep -e '[.]private' "
        "| head -5",
        f"ls -A {hidden}/tasks/{TASK}/agent {hidden}/tasks/{TASK}/grading 2>/dev/null | head -5",
        f"timeout 60 find / -xdev -path '*/.private/tasks/*' 2>/dev/null | head -5",
        "timeout 60 grep -rl 'def grade' / --include=grader.py 2>/dev/null | head -5",
    ]


def hunt(tmp_path: Path, mode: str, sandbox: str) -> tuple[dict[str, list[str]], object]:
    """What the probes printed in each phase of the trial (execution, and PreSkill's / PostSkill's phases before it)."""
    tasks = tmp_path / "tasks"
    shutil.copytree(REPO / "tasks" / "evoclaw", tasks)
    out = tmp_path / "out"
    spec = BenchmarkRunSpec(tasks=TaskSource(path=str(tasks)), selector=TaskSelector(ids=[TASK]),
                            agent=AgentSpec(harness="script", args={"commands": probes(out),  # every phase probes
                                                                "authoring_commands": probes(out)}),
                            trials=1, mode=mode)
    (r,) = LocalRunner(spec, out, sandbox_mode=sandbox, progress=None).run().results
    trial = out / "trials" / TASK / "0"
    phases = (str(f.parent.relative_to(trial)) for f in trial.rglob("transcript.jsonl"))
    return {ph: [x.strip() for x in outputs(out, TASK, f"0/{ph}")] for ph in sorted(phases)}, r


@pytest.mark.parametrize("mode, phases", [("baseline", ["."]), ("preskill", [".", "authoring"]),
                                          ("postskill", [".", "first_run", "summary"])])
def test_an_evoclawbench_agent_never_finds_the_shared_bundle(tmp_path: Path, mode: str, phases: list[str]):
    found, r = hunt(tmp_path, mode, SANDBOXED)
    assert r.score is not None, r.error_message  # graded: the trial did its whole job
    assert sorted(found) == sorted(phases), found  # every phase's agent ran the probes
    for phase, outputs in found.items():
        assert outputs == ["", "", "", ""], (phase, outputs)


def test_control_without_the_sandbox_the_probe_finds_the_bundle(tmp_path: Path):
    found, r = hunt(tmp_path, "baseline", CONTROL)
    assert r.score is not None, r.error_message
    outputs = found["."]
    assert len(outputs) == 4 and outputs[1] != "" and outputs[2] != "", outputs
