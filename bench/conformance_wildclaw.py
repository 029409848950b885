"""WildClawBench score parity: this project's `overall_score` against the benchmark's own runner's.

    python bench/conformance.py wildclawbench [--upstream CHECKOUT] [--data DIR]
                                [--only TASK_ID ...] [--behaviour right|partial|none ...]
                                [--upstream-commit SHA] [--keep DIR]

For each case in `wildclaw_cases.py` (12 tasks) and each behaviour (right, partial, none) it lays out the
benchmark's own folder structure in a scratch folder (`tasks/<category>/<task>.md` copied unmodified from the
benchmark data, `workspace/<category>/<task>/{exec,tmp,gt}` built by the case) and scores the behaviour twice:

- ours: `clawkube run` with the scripted agent (`script` harness: the behaviour's commands and final message),
  the run-level judge pointing at the scripted model server; the trial's score from its result.json;
- upstream (with `--upstream`): `wildclaw_reference.py` in its own process, which runs the checkout's
  `run_single_task` with a scripted backend and the same judge (OPENROUTER_* / JUDGE_MODEL), and takes the
  task's final score as the runner's summary computes it.

One row per task and behaviour; rows must agree to 1e-6 (both "none" = no numeric score, which upstream's summary
counts as 0). Exit code 1 when a row differs or a side could not run. Without `--upstream` it prints this
project's scores and says that parity was not checked.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from wildclaw_cases import CASES, Behaviour, Case, judge_script  # noqa: E402

BEHAVIOURS = ("right", "partial", "none")
TOLERANCE = 1e-6
JUDGE_MODEL = "scripted/judge"
JUDGE_KEY_ENV = "CLAWKUBE_CONFORMANCE_JUDGE_KEY"
JUDGE_KEY = "sk-conformance-judge"
UPSTREAM_FILES = ("eval/run_batch.py", "src/utils/grading.py", "src/utils/transcript_loader.py",
                  "src/utils/docker_utils.py", "src/utils/task_parser.py")


@dataclass
class Side:
    score: Optional[float]  # None: no numeric score
    note: str = ""
    ran: bool = True  # False: this side could not run at all (an error of the harness, not a score)


@dataclass
class Row:
    task: str
    behaviour: str
    ours: Side
    ref: Optional[Side]

    @property
    def match(self) -> Optional[bool]:
        if self.ref is None:
            return None
        if not (self.ours.ran and self.ref.ran):
            return False
        if self.ours.score is None or self.ref.score is None:
            return self.ours.score is None and self.ref.score is None
        return abs(self.ours.score - self.ref.score) <= TOLERANCE


# --- the scripted judge -------------------------------------------------------------------------------------------

def start_judge(script: dict, folder: Path):
    """Start `clawkube model-server` with the cases' judge script; (base URL ending in /v1, stop function)."""
    folder.mkdir(parents=True, exist_ok=True)
    script_file, port_file = folder / "judge.json", folder / "judge.port"
    script_file.write_text(json.dumps(script, ensure_ascii=False, indent=1))
    port_file.unlink(missing_ok=True)
    env = dict(os.environ, PYTHONPATH=str(REPO / "operator"))
    proc = subprocess.Popen([sys.executable, "-m", "clawkube", "model-server", "--script", str(script_file),
                             "--port", "0", "--port-file", str(port_file), "--log", str(folder / "judge.log")],
                            env=env, stdout=subprocess.DEVNULL, stderr=open(folder / "judge.stderr", "w"))
    deadline = time.monotonic() + 30
    while not (port_file.is_file() and port_file.read_text().strip()):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"the scripted judge did not start: {(folder / 'judge.stderr').read_text()[-500:]}")
        time.sleep(0.1)

    def stop() -> None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()

    return f"http://127.0.0.1:{int(port_file.read_text())}/v1", stop


# --- one scratch benchmark tree per case ----------------------------------------------------------------------------

def build_tree(root: Path, data: Path, case: Case) -> Path:
    """<root>/tasks/<category>/<task>.md (the benchmark's file, unmodified), <root>/skills (the benchmark's),
    <root>/<workspace path> (built by the case)."""
    if root.exists():
        shutil.rmtree(root)
    src = data / "tasks" / case.task
    dest = root / "tasks" / case.task
    dest.parent.mkdir(parents=True)
    shutil.copyfile(src, dest)
    if (data / "skills").is_dir():
        shutil.copytree(data / "skills", root / "skills")
    ws = root / case.workspace_rel
    (ws / "exec").mkdir(parents=True)
    case.build(ws)
    return dest


def run_ours(tree: Path, case: Case, beh: Behaviour, judge_url: str, out: Path) -> Side:
    spec = {"spec": {"tasks": {"path": str(tree / "tasks")}, "selector": {"ids": [case.task_id]},
                     "agent": {"harness": "script",
                               "args": {"commands": beh.commands, "final_message": beh.final_message}},
                     "trials": 1, "parallelism": 1,
                     "judge": {"baseUrl": judge_url, "model": JUDGE_MODEL, "apiKeyEnv": JUDGE_KEY_ENV}}}
    run_file = out.with_suffix(".yaml")
    run_file.write_text(yaml.safe_dump(spec, sort_keys=False))
    env = dict(os.environ, PYTHONPATH=str(REPO / "operator"), **{JUDGE_KEY_ENV: JUDGE_KEY})
    p = subprocess.run([sys.executable, "-m", "clawkube", "run", str(run_file), "--out", str(out), "--fresh",
                        "--quiet"], env=env, capture_output=True, text=True, timeout=900)
    result = out / "trials" / case.task_id / "0" / "result.json"
    if not result.is_file():
        return Side(None, f"clawkube run exited {p.returncode}: {(p.stderr or p.stdout).strip()[-300:]}", ran=False)
    r = json.loads(result.read_text())
    score = (r.get("score") or {}).get("score")
    note = f"{r.get('error_kind')}: {r.get('error_message')}" if r.get("error_kind") else ""
    return Side(score, note)


def run_reference(upstream: Path, task_file: Path, case: Case, beh: Behaviour, judge_url: str, work: Path) -> Side:
    req = {"task_file": str(task_file), "workspace_path": str(task_file.parents[2] / case.workspace_rel),
           "work_dir": str(work), "commands": beh.commands, "final_message": beh.final_message}
    work.mkdir(parents=True, exist_ok=True)
    (work / "request.json").write_text(json.dumps(req))
    env = dict(os.environ, OPENROUTER_API_KEY=JUDGE_KEY, OPENROUTER_BASE_URL=judge_url, JUDGE_MODEL=JUDGE_MODEL)
    env.pop("PYTHONPATH", None)
    p = subprocess.run([sys.executable, str(HERE / "wildclaw_reference.py"), "--upstream", str(upstream),
                        str(work / "request.json"), str(work / "result.json")], env=env, capture_output=True,
                       text=True, timeout=900)
    res_file = work / "result.json"
    if not res_file.is_file():
        return Side(None, f"reference exited {p.returncode}: {p.stderr.strip()[-300:]}", ran=False)
    res = json.loads(res_file.read_text())
    if res.get("error", "") and str(res["error"]).startswith("reference run failed"):
        return Side(None, res["error"], ran=False)
    note = f"agent error: {res['error']}" if res.get("error") else ""
    if res.get("final") is None and res.get("scores", {}).get("error"):
        note = f"grading: {str(res['scores']['error'])[:120]}"
    return Side(res.get("final"), note)


# --- output ---------------------------------------------------------------------------------------------------------

def _fmt(side: Optional[Side]) -> str:
    if side is None:
        return "-"
    if not side.ran:
        return "not run"
    return "none" if side.score is None else f"{side.score:.6f}"


def upstream_identity(upstream: Path, commit: Optional[str]) -> str:
    if not commit:
        p = subprocess.run(["git", "-C", str(upstream), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                           text=True)
        commit = p.stdout.strip() if p.returncode == 0 else "unknown (not a git checkout; pass --upstream-commit)"
    h = hashlib.sha256()
    for rel in UPSTREAM_FILES:
        f = upstream / rel
        h.update(f.read_bytes() if f.is_file() else b"missing")
    return f"{commit}, runner files sha256 {h.hexdigest()[:12]}"


def print_table(rows: list[Row], upstream: Optional[str]) -> None:
    w = max(len(r.task) for r in rows)
    print(f"| {'task'.ljust(w)} | behaviour | clawkube  | upstream  | match | notes |")
    print(f"|{'-' * (w + 2)}|-----------|-----------|-----------|-------|-------|")
    for r in rows:
        m = {None: "-", True: "yes", False: "NO"}[r.match]
        notes = "; ".join(n for n in (f"ours: {r.ours.note}" if r.ours.note else "",
                                      f"upstream: {r.ref.note}" if r.ref and r.ref.note else "") if n)
        notes = " ".join(notes.replace("|", "/").split())[:160]
        print(f"| {r.task.ljust(w)} | {r.behaviour.ljust(9)} | {_fmt(r.ours).ljust(9)} | {_fmt(r.ref).ljust(9)} "
              f"| {m.ljust(5)} | {notes} |")
    if upstream is None:
        print("\nparity NOT checked: no --upstream checkout of internlm/WildClawBench given "
              "(this project's scores only)")
    else:
        ok = sum(1 for r in rows if r.match)
        print(f"\nparity: {ok}/{len(rows)} rows match to {TOLERANCE:g} (upstream {upstream})")


def main(args: argparse.Namespace, rest: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="conformance.py wildclawbench")
    ap.add_argument("--only", nargs="*", default=[], help="task ids")
    ap.add_argument("--behaviour", nargs="*", default=list(BEHAVIOURS), choices=BEHAVIOURS)
    ap.add_argument("--upstream-commit", help="the checkout's commit, when it is not a git checkout")
    ap.add_argument("--keep", type=Path, help="work in this folder and keep it (default: a temporary folder)")
    opts = ap.parse_args(rest)
    shared = Path(os.environ.get("CLAWKUBE_BENCHMARKS_DATA") or REPO.parent / "shared" / "benchmarks")
    data = (args.data or shared / "wildclawbench").resolve()
    if not (data / "tasks").is_dir():
        print(f"== wildclawbench: benchmark data not found at {data} (pass --data)")
        return 1
    upstream = args.upstream.resolve() if args.upstream else None
    if upstream is not None and not (upstream / "eval" / "run_batch.py").is_file():
        print(f"== wildclawbench: {upstream} is not a checkout of internlm/WildClawBench (no eval/run_batch.py)")
        return 1
    cases = [c for c in CASES if not opts.only or c.task_id in opts.only]
    work = opts.keep or Path(tempfile.mkdtemp(prefix="wildclaw-conformance-"))
    work.mkdir(parents=True, exist_ok=True)
    judge_url, stop_judge = start_judge(judge_script(cases), work / "judge")
    print(f"== wildclawbench: {len(cases)} tasks x {len(opts.behaviour)} behaviours, data {data}")
    rows: list[Row] = []
    try:
        for case in cases:
            for name in opts.behaviour:
                beh = case.behaviours[name]
                base = work / case.task_id / name
                build_tree(base / "ours" / "bench", data, case)
                ours = run_ours(base / "ours" / "bench", case, beh, judge_url, base / "ours" / "out")
                ref = None
                if upstream is not None:
                    ref_file = build_tree(base / "upstream" / "bench", data, case)
                    ref = run_reference(upstream, ref_file, case, beh, judge_url, base / "upstream" / "work")
                rows.append(Row(case.task_id, name, ours, ref))
    finally:
        stop_judge()
        if opts.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print_table(rows, upstream_identity(upstream, opts.upstream_commit) if upstream else None)
    bad = [r for r in rows if r.match is False or not r.ours.ran]
    return 1 if bad else 0
