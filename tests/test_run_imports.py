"""What a local run imports: a benchmark's heavy machinery only when its tasks are in the run.

Every `clawkube run` detects task formats through every plugin (`registry.all_benchmarks()`), so a plugin's
module-level imports are paid by every run. The CLAW-Eval plugin's mock-service gateway (aiohttp) once cost an
EvoClawBench-only run 0.4-0.6 s of its start-up (bench/RESULTS.md, EvoClawBench rows). This runs a real
`clawkube run` of a sample EvoClawBench task in a subprocess under `python -X importtime` (which lists every module
the process imports) and checks the list.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Needed only by CLAW-Eval trials (its mock services behind the tool gateway, the simulated user), by the cluster
# (operator, S3) or by the services' HTTP admin side: never by a local EvoClawBench run.
NOT_IMPORTED = ("aiohttp", "multidict", "yarl", "kopf", "kubernetes", "boto3", "botocore",
                "clawkube.benchmarks.claweval.gateway", "clawkube.benchmarks.claweval.mocks",
                "clawkube.benchmarks.claweval.environment", "clawkube.benchmarks.claweval.usersim",
                "clawkube.benchmarks.claweval.taskyaml", "clawkube.k8s", "clawkube.modelserver",
                "urllib.request", "http.client")


def imported_by_run(tmp_path: Path, task_id: str) -> set[str]:
    spec = {"tasks": {"path": str(REPO / "tasks" / "evoclaw")}, "selector": {"ids": [task_id]},
            "agent": {"harness": "nop"}, "trials": 1}
    (tmp_path / "run.yaml").write_text(json.dumps(spec))
    env = {**os.environ, "PYTHONPATH": str(REPO / "operator")}
    env.pop("PYTHONPROFILEIMPORTTIME", None)
    p = subprocess.run([sys.executable, "-X", "importtime", "-m", "clawkube", "run", str(tmp_path / "run.yaml"),
                        "--out", str(tmp_path / "out")], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    result = json.loads(next((tmp_path / "out" / "trials").glob("*/*/result.json")).read_text())
    assert result["score"] is not None, result  # the trial ran and was graded: the run did its whole job
    mods = {line.split("|")[-1].strip() for line in p.stderr.splitlines() if line.startswith("import time:")}
    assert "clawkube.local.runner" in mods, "importtime listed nothing: the check would pass vacuously"
    return mods


def test_a_local_evoclawbench_run_imports_no_other_benchmark_s_machinery(tmp_path: Path):
    mods = imported_by_run(tmp_path, "evo-word-stats")
    assert "clawkube.benchmarks.evoclaw.plugin" in mods
    bad = sorted(m for m in mods if any(m == n or m.startswith(n + ".") for n in NOT_IMPORTED))
    assert bad == [], f"a local EvoClawBench run imported {bad}"
