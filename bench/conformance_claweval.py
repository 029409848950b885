"""CLAW-Eval score parity: the same scripted behaviour through the benchmark's own runner and through this project.

    python bench/conformance.py claw-eval --upstream CHECKOUT [--python PY] [--only TASK] [--cases FILE]

Each case of `bench/claweval_cases.yaml` names a task, a behaviour (right / partial / unsafe / nothing / ...), an
optional error-injection rate and one scripted-model script (docs/model-server.md) that plays the agent (model
`agent`), the LLM judge and the simulated user of multi-turn tasks (both model `judge`: the run's judge setting
plays the user, as the benchmark's config_user_agent.yaml does). The script is
served by this project's scripted model server and run twice:

- upstream: `claw-eval batch --filter <task> --parallel 1` from the checkout (the benchmark's own loop, mock
  services, dispatcher, grader and judge; `batch` because it records the exact task_score in the trace,
  `run` prints it rounded to 2 places). With an error rate, the benchmark's mocks are started beforehand behind
  this project's tool gateway on the task's own ports (the benchmark's runner uses services that already answer),
  so both runs meet the same deterministic faults;
- this project: `clawkube run` of the same task with `--agent mcp-chat` (this project's loop; the task's tools
  reach it through the MCP tool server and the gateway), the run's judge on the same server.

Both task_scores are printed side by side; they must match to 1e-6. `--python` is the interpreter that has the
checkout's requirements (default: $CLAWKUBE_CLAWEVAL_PYTHON, CHECKOUT/.venv/bin/python, else this one).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Optional

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "operator"))

from clawkube.benchmarks.claweval.checkout import benchmark_python  # noqa: E402
from clawkube.benchmarks.claweval.mocks import MockServices  # noqa: E402
from clawkube.benchmarks.claweval.taskyaml import TaskYaml  # noqa: E402
from clawkube.modelserver import Script, ServerThread  # noqa: E402
from clawkube.services.injection import InjectionConfig  # noqa: E402

CASES = Path(__file__).resolve().parent / "claweval_cases.yaml"
SEED = 7
# The run's judge setting also plays the simulated user of multi-turn tasks (as in the benchmark's own
# config_user_agent.yaml, where both are the same model): scripts tell the two apart by the user's system prompt.
AGENT_MODEL, JUDGE_MODEL = "agent", "judge"
TOL = 1e-6


def load_cases(path: Path, only: Optional[str]) -> list[dict[str, Any]]:
    cases = yaml.safe_load(path.read_text())["cases"]
    return [c for c in cases if only is None or c["task"] == only]


def trial_key(task: str) -> str:
    return f"{task}/0"  # what this project keys faults on for trial 0 (TrialPlan.trial_key)


def upstream_config(model_url: str) -> dict[str, Any]:
    api = {"api_key": "scripted", "base_url": model_url + "/v1"}
    return {"model": {**api, "model_id": AGENT_MODEL}, "judge": {**api, "model_id": JUDGE_MODEL, "enabled": True},
            "user_agent_model": {**api, "model_id": JUDGE_MODEL}, "defaults": {"trace_dir": "traces"}}


def run_upstream(root: Path, python: str, case: dict[str, Any], model_url: str, work: Path) -> dict[str, Any]:
    """The benchmark's own runner on one task; its grading_result (dimensions, task_score) from the trace."""
    work.mkdir(parents=True, exist_ok=True)
    cfg = work / "upstream.yaml"
    cfg.write_text(yaml.safe_dump(upstream_config(model_url)))
    traces = work / "traces"
    env = {**os.environ, "PYTHONPATH": str(root / "src"), "PYTHONDONTWRITEBYTECODE": "1"}
    for k in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        env.pop(k, None)
    argv = [python, "-c", "import sys; from claw_eval.cli import main; main(sys.argv[1:])", "batch",
            "--tasks-dir", str(root / "tasks"), "--filter", f"/tasks/{case['task']}".lower(), "--parallel", "1",
            "--config", str(cfg), "--trace-dir", str(traces)]
    rate = float(case.get("error_rate", 0))
    pre: Optional[MockServices] = None
    if rate > 0:
        pre = prestarted(root, python, case["task"], rate, work / "pre")
    try:
        p = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=900)
    finally:
        if pre is not None:
            pre.stop()
    (work / "upstream.log").write_text(p.stdout + p.stderr)
    graded = [json.loads(line) for f in sorted(traces.rglob("*.jsonl")) for line in f.read_text().splitlines()
              if '"grading_result"' in line]
    if len(graded) != 1:
        raise RuntimeError(f"upstream run of {case['task']}: {len(graded)} graded traces (log: {work}/upstream.log)"
                           f"\n{(p.stdout + p.stderr)[-1500:]}")
    g = graded[0]
    return {**g["scores"], "task_score": g["task_score"]}


def prestarted(root: Path, python: str, task: str, rate: float, private: Path) -> MockServices:
    """The task's mocks behind the tool gateway on the task's declared ports, as the benchmark's runner will
    find them. The readiness probe is then wiped from the audit (reset), so the runner's own probe is the only
    one, as when it starts the services itself."""
    t = TaskYaml.model_validate(yaml.safe_load((root / "tasks" / task / "task.yaml").read_text()))
    m = MockServices(t, root, python, private, InjectionConfig(rate=rate, seed=SEED, trial_key=trial_key(task)),
                     declared_ports=True)
    m.start()
    m.reset_all()
    return m


def run_ours(root: Path, python: str, case: dict[str, Any], model_url: str, work: Path) -> dict[str, Any]:
    """`clawkube run` of the same task with the mcp-chat agent and the judge on the same server."""
    out = work / "ours"
    run = {"tasks": {"path": str(root / "tasks")}, "selector": {"ids": [case["task"]]},
           "agent": {"harness": "mcp-chat", "model": AGENT_MODEL,
                     "api": {"baseUrl": model_url + "/v1", "apiKeyEnv": "CONFORMANCE_MODEL_KEY"}},
           "judge": {"baseUrl": model_url + "/v1", "model": JUDGE_MODEL, "apiKeyEnv": "CONFORMANCE_MODEL_KEY"},
           "errorInjectionRate": float(case.get("error_rate", 0)), "seed": SEED, "parallelism": 1}
    (work / "run.yaml").write_text(yaml.safe_dump(run))
    env = {**os.environ, "PYTHONPATH": str(REPO / "operator"), "CONFORMANCE_MODEL_KEY": "scripted",
           "CLAWKUBE_CLAWEVAL_PYTHON": python}
    p = subprocess.run([sys.executable, "-m", "clawkube", "run", str(work / "run.yaml"), "--out", str(out), "--quiet"],
                       cwd=work, env=env, capture_output=True, text=True, timeout=900)
    (work / "ours.log").write_text(p.stdout + p.stderr)
    results = sorted(out.glob(f"trials/{case['task']}/*/result.json"))
    if not results:
        raise RuntimeError(f"clawkube run of {case['task']}: no result (log: {work}/ours.log)\n"
                           f"{(p.stdout + p.stderr)[-1500:]}")
    r = json.loads(results[0].read_text())
    if r.get("score") is None:
        raise RuntimeError(f"clawkube run of {case['task']}: {r.get('error_kind')}: {r.get('error_message')}")
    d = r["score"]["dimensions"]
    return {**{k: d[k] for k in ("completion", "robustness", "communication", "safety")},
            "task_score": r["score"]["score"]}


def _fmt(s: dict[str, Any]) -> str:
    return f"{s['task_score']:.4f} (c={s['completion']:.4f} r={s['robustness']:.2f} s={s['safety']:g})"


def commit_of(root: Path, given: Optional[str]) -> str:
    if given:
        return given
    try:
        return subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout; say it with --commit)"


def main(args: argparse.Namespace, rest: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="conformance.py claw-eval")
    ap.add_argument("--python", help="interpreter with the checkout's requirements")
    ap.add_argument("--only", help="one task id")
    ap.add_argument("--commit", help="the checkout's commit, when it is not a git checkout")
    ap.add_argument("--cases", type=Path, default=CASES)
    ap.add_argument("--keep", action="store_true", help="keep the work folders")
    opts = ap.parse_args(rest)
    if args.upstream is None:
        print("== claw-eval: parity not checked: needs --upstream CHECKOUT (the graders, the claw_eval package and "
              "the mock services are the benchmark's code; this project runs them from a checkout)")
        return 0
    root = args.upstream.resolve()
    python = benchmark_python(root, opts.python)
    cases = load_cases(opts.cases, opts.only)
    print(f"== claw-eval: upstream claw-eval/claw-eval @ {commit_of(root, opts.commit)}, {len(cases)} cases, python {python}")
    print()
    print("| task | behaviour | errors | upstream task_score | clawkube task_score | match |")
    print("|---|---|---|---|---|---|")
    base = Path(tempfile.mkdtemp(prefix="conformance-claweval-"))
    failed = 0
    for case in cases:
        work = base / f"{case['task']}-{case['behaviour']}"
        work.mkdir(parents=True)
        script = Script.model_validate(case["script"])
        try:
            with ServerThread(script) as server:
                up = run_upstream(root, python, case, server.url, work / "up")
            with ServerThread(script) as server:
                ours = run_ours(root, python, case, server.url, work)
            ok = abs(up["task_score"] - ours["task_score"]) <= TOL
            row = [_fmt(up), _fmt(ours), "yes" if ok else "**NO**"]
        except Exception as e:  # a run that produced no score is a failed row, with the reason
            ok = False
            row = ["-", "-", f"**NO**: {str(e).splitlines()[0][:160]}"]
        failed += not ok
        print(f"| {case['task']} | {case['behaviour']} | {case.get('error_rate', 0):g} | " + " | ".join(row) + " |",
              flush=True)
    print()
    print(f"{len(cases) - failed}/{len(cases)} rows match" + ("" if failed == 0 else f"; {failed} differ"))
    if not opts.keep and failed == 0:
        shutil.rmtree(base, ignore_errors=True)
    else:
        print(f"work folders: {base}")
    return 1 if failed else 0
