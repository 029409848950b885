"""EvoClawBench score parity: the same scripted agent behaviours through EvoClawBench's own runner and through
this project, in all three modes (baseline, preskill, postskill); per-task and sub-problem scores must match.

    python bench/conformance.py evoclawbench [--upstream DIR] [--tasks ID,ID,...] [--behaviours ...]
                                              [--workers N] [--upstream-python PY] [--keep DIR]

Behaviours (the same shell commands, run by this project's `script` agent and, for the benchmark's runner, by
bench/evoclaw_shim.py standing in for the `openclaw` command line):
- none:    does nothing; its final message is "done";
- partial: writes some of the expected outputs (generated tasks: the first case right, the second one wrong;
           hand-written tasks: placeholders for half of the `outputs/...` files the prompt names);
- right:   writes every expected output (generated tasks: the values their grader expects; hand-written tasks:
           placeholders for every named output); the sanity task answers "EvoClawBench ready";
- skill:   the skill-writing agent: PreSkill authoring and PostSkill summary write `skills/<name>/SKILL.md` and a
           `scripts/solve.sh` (the summary only when `.evoclawbench/first_run_context.json` is there, and it keeps a
           copy under `references/`); an execution runs that script when the skill is there, else acts as partial;
- mutate:  as skill, but the execution also edits the skill (a skill mutation violation in PreSkill/PostSkill).
Hybrid tasks call the judge: the project's scripted model server (`clawkube.modelserver`) answers both runners'
judge requests from the same script (a higher total when the prompt shows output files), and the judge prompts
the two runners sent are compared too.

Without `--upstream` it runs this project's side only and says parity was not checked. The upstream runner runs
from the checkout as it is (`scripts/benchmark.py --environment local --runtime openclaw --mode all`), in a
scratch folder, with a Python environment holding the dependencies its script header declares (built once under
~/.cache/clawkube/, or `--upstream-python`).
"""
from __future__ import annotations

import argparse
import ast
import base64
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Optional

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(REPO / "operator"))
sys.path.insert(0, str(BENCH))

import evoclaw_shim  # noqa: E402

MODES = ("baseline", "preskill", "postskill")
BEHAVIOURS = ("none", "partial", "right", "skill", "mutate")
# >= 20 tasks across the hand-written families and the generated task families; every grading type, the two
# graders with third-party imports (openpyxl, python-docx) and yaml, and the sanity task (reads the transcript).
DEFAULT_TASKS = (
    "task_00_sanity", "task_01_batch_data_transform", "task_02_log_analysis", "task_05_config_migration",
    "task_07_doc_extraction", "task_09_excel_analytics", "task_12_docx_generation", "task_13_data_pipeline",
    "task_14_email_processing", "task_17_invoice_processing", "task_20_env_config",
    "task_22_finance_ledger_reconciliation", "task_27_contract_clause_extraction",
    "task_32_appointment_referral_triage", "task_37_procurement_bid_scoring", "task_42_employee_onboarding_checklist",
    "task_47_support_ticket_escalation", "task_52_kubernetes_policy_review", "task_57_security_alert_correlation",
    "task_63_messy_csv_normalization", "task_67_research_claim_evidence", "task_72_localization_placeholder_qa",
    "task_77_ecommerce_catalog_normalization", "task_82_facilities_maintenance_prioritization",
    "task_87_civic_service_request_routing", "task_92_crm_pipeline_hygiene", "task_100_inbox_rules_classification",
)
JUDGE_MODEL = "judge"
AGENT_MODEL = "scripted/agent"
TOL = 1e-6


def data_root(given: Optional[Path] = None) -> Path:
    """The shared EvoClawBench data folder (../shared/benchmarks/evoclawbench beside the repository, or
    $CLAWKUBE_BENCHMARKS_DATA/evoclawbench)."""
    if given is not None:
        return given
    env = os.environ.get("CLAWKUBE_BENCHMARKS_DATA")
    candidates = [Path(env)] if env else [p / "shared" / "benchmarks" for p in REPO.parents]
    for c in candidates:
        if (c / "evoclawbench").is_dir():
            return c / "evoclawbench"
    raise SystemExit("no EvoClawBench data: set CLAWKUBE_BENCHMARKS_DATA to ../shared/benchmarks")


# --- the task files (read for scripting behaviours only) -----------------------------------------------------------

def task_file(tasks_dir: Path, task_id: str) -> Path:
    for p in sorted(tasks_dir.glob("task_*.md")):
        if re.search(rf"^id:\s*{re.escape(task_id)}\s*$", p.read_text(encoding="utf-8"), re.M):
            return p
    raise SystemExit(f"no task {task_id} under {tasks_dir}")


def grader_code(text: str) -> str:
    section = text.split("## Automated Checks", 1)[1] if "## Automated Checks" in text else ""
    m = re.search(r"```python\s*(.*?)\s*```", section, re.S)
    return m.group(1) if m else ""


def expected_reports(code: str) -> Optional[dict[str, Any]]:
    """A generated task's `expected = {case_id: {field: value}}` literal (its grader compares
    outputs/<case_id>_report.json to it), or None for a hand-written task."""
    if 'f"{case_id}_report.json"' not in code:
        return None
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "expected" for t in node.targets):
            return ast.literal_eval(node.value)
    return None


def named_outputs(text: str) -> list[str]:
    """The `outputs/...` files a hand-written task's text names, in order."""
    seen: dict[str, None] = {}
    for m in re.finditer(r"`(outputs/[A-Za-z0-9_./-]+)`", text):
        if not m.group(1).endswith("/"):
            seen.setdefault(m.group(1))
    return list(seen)


def placeholder(path: str) -> str:
    return "{}\n" if path.endswith(".json") else f"placeholder for {path}\n"


# --- behaviours as shell commands ------------------------------------------------------------------------------------

def write_cmd(path: str, content: str) -> str:
    data = base64.b64encode(content.encode()).decode()
    return f"mkdir -p {shlex.quote(str(Path(path).parent))} && printf %s {data} | base64 -d > {shlex.quote(path)}"


def solution_files(text: str, kind: str) -> dict[str, str]:
    """The files a `right` or `partial` behaviour writes for this task."""
    expected = expected_reports(grader_code(text))
    if expected is not None:
        cases = sorted(expected)
        if kind == "right":
            return {f"outputs/{c}_report.json": json.dumps(expected[c], indent=2) + "\n" for c in cases}
        files = {f"outputs/{cases[0]}_report.json": json.dumps(expected[cases[0]]) + "\n"}
        if len(cases) > 1:
            files[f"outputs/{cases[1]}_report.json"] = json.dumps({"note": "unsure"}) + "\n"
        return files
    names = named_outputs(text)
    if kind == "partial":
        names = names[: max(1, len(names) // 2)] if names else []
    return {n: placeholder(n) for n in names}


def skill_name(task_id: str) -> str:
    return task_id.replace("_", "-")[:40]


def skill_commands(task_id: str, solve: list[str], with_context: bool) -> list[str]:
    name = skill_name(task_id)
    root = f"skills/{name}"
    skill_md = (f"---\nname: {name}\ndescription: Solve {task_id} from its fixtures and write the reports it asks "
                f"for.\n---\n\n# {task_id}\n\nRun `bash {root}/scripts/solve.sh` from the workspace root; it writes "
                "every report under outputs/. Check each file is valid JSON before finishing.\n")
    cmds = [write_cmd(f"{root}/SKILL.md", skill_md), write_cmd(f"{root}/scripts/solve.sh", "\n".join(solve) + "\n")]
    if with_context:
        guard = "test -f .evoclawbench/first_run_context.json || { echo 'no first-run context'; exit 0; }"
        keep = f"mkdir -p {root}/references && cp .evoclawbench/first_run_context.json {root}/references/"
        return [f"( {guard} && {' && '.join(cmds)} && {keep} )"]
    return cmds


def behaviour(task_id: str, text: str, kind: str) -> dict[str, Any]:
    final = "EvoClawBench ready" if task_id == "task_00_sanity" and kind != "none" else "done"
    if kind == "none":
        return {"execution": [], "authoring": [], "summary": [], "final_message": final}
    partial = [write_cmd(p, c) for p, c in solution_files(text, "partial").items()]
    if kind in ("partial", "right"):
        files = solution_files(text, kind)
        return {"execution": [write_cmd(p, c) for p, c in files.items()], "authoring": [], "summary": [],
                "final_message": final}
    right = [write_cmd(p, c) for p, c in solution_files(text, "right").items()]
    script = f"skills/{skill_name(task_id)}/scripts/solve.sh"
    run_skill = f"if [ -f {script} ]; then bash {script}; else {' && '.join(partial) or 'true'}; fi"
    execution = [run_skill, "ls outputs"]
    if kind == "mutate":
        execution.append(f"if [ -d skills/{skill_name(task_id)} ]; then echo '- edited during execution' >> "
                         f"skills/{skill_name(task_id)}/SKILL.md; fi")
    return {"execution": execution, "authoring": skill_commands(task_id, right, False),
            "summary": skill_commands(task_id, right, True), "final_message": final}


def behaviours(tasks_dir: Path, task_ids: list[str], kind: str) -> dict[str, dict[str, Any]]:
    return {t: behaviour(t, task_file(tasks_dir, t).read_text(encoding="utf-8"), kind) for t in task_ids}


def judge_script() -> dict[str, Any]:
    """The scripted judge: a strict JSON verdict, higher when the prompt shows the agent's output files."""
    def verdict(total: float, note: str) -> str:
        return json.dumps({"scores": {"accuracy": total, "completeness": total}, "total": total, "notes": note})
    return {"models": [JUDGE_MODEL],
            "rules": [{"name": "judge-with-outputs", "when": {"model": JUDGE_MODEL, "contains": "--- Output:"},
                       "text": verdict(0.8, "outputs present")},
                      {"name": "judge-no-outputs", "when": {"model": JUDGE_MODEL}, "text": verdict(0.1, "no outputs")}],
            "fallback": {"text": "Done."}}


# --- one row per (behaviour, mode, task) -------------------------------------------------------------------------

def row(score: Optional[float], subs: list[float], first: Optional[float], violation: Optional[bool],
        skills: list[str], quality: Optional[float], breakdown: dict[str, float], note: str = "") -> dict[str, Any]:
    return {"score": score, "sub_problem_scores": [round(s, 6) for s in subs], "first_pass": first,
            "violation": violation, "skills": sorted(skills), "skill_quality": quality,
            "breakdown": {k: round(v, 6) for k, v in sorted(breakdown.items())}, "note": note}


# --- EvoClawBench's own runner ----------------------------------------------------------------------------------------

def upstream_layout(upstream: Path) -> Path:
    """The folder holding scripts/benchmark.py and tasks/ (the repository root's evoclawbench/, or itself)."""
    for base in (upstream / "evoclawbench", upstream):
        if (base / "scripts" / "benchmark.py").is_file() and (base / "tasks").is_dir():
            return base
    raise SystemExit(f"--upstream {upstream}: no evoclawbench/scripts/benchmark.py there")


def script_dependencies(benchmark_py: Path) -> list[str]:
    """The dependencies the runner's own script header (`# /// script`) declares."""
    text = benchmark_py.read_text(encoding="utf-8")
    block = re.search(r"^# /// script\n(.*?)^# ///", text, re.S | re.M)
    if not block:
        return []
    return re.findall(r'^#\s+"([^"]+)",?\s*$', block.group(1), re.M)


def upstream_python(base: Path, given: Optional[str]) -> str:
    if given:
        return given
    deps = script_dependencies(base / "scripts" / "benchmark.py")
    venv = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "clawkube" / "evoclaw-upstream-venv"
    py = venv / "bin" / "python"
    stamp = venv / "deps.txt"
    if not (py.exists() and stamp.is_file() and stamp.read_text() == "\n".join(deps)):
        print(f"== a Python environment for the upstream runner: {venv} ({', '.join(deps)})", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", *deps], check=True)
        stamp.write_text("\n".join(deps))
    return str(py)


def run_upstream(base: Path, python: str, task_ids: list[str], table: dict[str, dict], judge_url: str, work: Path,
                 workers: int) -> dict[str, Any]:
    """One runner invocation (`--mode all`) over the tasks with these behaviours; returns its results JSON."""
    work = work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    (work / "behaviours.json").write_text(json.dumps(table))
    shim_bin = evoclaw_shim.install(work / "bin")
    env = {**os.environ, "PATH": f"{shim_bin}:{os.environ.get('PATH', '/usr/bin:/bin')}", "HOME": str(work / "home"),
           "EVOCLAW_SHIM_BEHAVIOURS": str(work / "behaviours.json"), "OPENAI_BASE_URL": judge_url + "/v1",
           "OPENAI_API_KEY": "scripted", "PYTHONUNBUFFERED": "1"}
    env.pop("OPENROUTER_API_KEY", None)
    cmd = [python, str(base / "scripts" / "benchmark.py"), "--model", AGENT_MODEL, "--runtime", "openclaw",
           "--mode", "all", "--suite", ",".join(task_ids), "--workers", str(workers), "--no-progress",
           "--environment", "local", "--judge", JUDGE_MODEL, "--output-dir", "results"]
    p = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
    (work / "runner.log").write_text(p.stdout + p.stderr)
    found = sorted((work / "results").glob("[0-9][0-9][0-9][0-9]_*.json"))
    found = [f for f in found if not f.name.endswith(".trajectories.json")]
    if p.returncode != 0 or not found:
        raise SystemExit(f"upstream runner failed (exit {p.returncode}); log: {work / 'runner.log'}\n"
                         + (p.stdout + p.stderr)[-2000:])
    return json.loads(found[-1].read_text())


def upstream_rows(results: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for mode in MODES:
        for task_id, entry in (results.get(f"{mode}_results") or {}).items():
            grade = (entry.get("grades") or [{}])[-1]
            first = None
            if mode == "postskill":
                first = (entry.get("first_pass_grades") or [{}])[-1].get("score")
            violation = entry.get("skill_mutation_violation") if mode != "baseline" else None
            skills = [s["name"] for s in entry.get("created_skills") or []] if mode != "baseline" else []
            quality = entry.get("skill_quality_score") if mode != "baseline" else None
            rows[(mode, task_id)] = row(grade.get("score"), grade.get("sub_problem_scores") or [], first, violation,
                                        skills, quality, grade.get("breakdown") or {}, grade.get("notes") or "")
    return rows


# --- comparison and the table ------------------------------------------------------------------------------------------

def _close(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return abs(a - b) <= TOL
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    return a == b


FIELDS = ("score", "sub_problem_scores", "first_pass", "violation", "skills", "skill_quality", "breakdown")


def differences(ours: dict[str, Any], theirs: dict[str, Any]) -> list[str]:
    return [f for f in FIELDS if not _close(ours.get(f), theirs.get(f))]


def fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.4f}"
    if isinstance(v, list):
        return "[" + ",".join(fmt(x) for x in v) + "]" if v else "[]"
    return str(v)


# --- this project --------------------------------------------------------------------------------------------------

def agent_args(b: dict[str, Any]) -> dict[str, Any]:
    """The `script` agent's options for a behaviour (execution commands; the skill-writing phases' commands)."""
    return {"commands": b.get("execution", []), "authoring_commands": b.get("authoring", []),
            "summary_commands": b.get("summary", []), "final_message": b.get("final_message", "done")}


def run_ours_task(tasks_dir: Path, task_id: str, b: dict[str, Any], judge_url: str, out: Path) -> list[Any]:
    from clawkube.local.runner import LocalRunner
    from clawkube.runspec import AgentSpec, BenchmarkRunSpec, JudgeSpec, TaskSelector, TaskSource

    spec = BenchmarkRunSpec(tasks=TaskSource(path=str(tasks_dir)), selector=TaskSelector(ids=[task_id]),
                            agent=AgentSpec(harness="script", args=agent_args(b)), trials=1, parallelism=3,
                            judge=JudgeSpec(base_url=judge_url + "/v1", model=JUDGE_MODEL))
    return LocalRunner(spec, out, progress=None, fresh=True, modes=list(MODES)).run().results


def run_ours(tasks_dir: Path, task_ids: list[str], table: dict[str, dict], judge_url: str, work: Path,
             workers: int) -> dict[tuple[str, str], dict[str, Any]]:
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    # one process per task run (a run is the unit the `script` agent's options belong to); processes, not threads:
    # CPython 3.11's ast.parse (task loading checks grader code) is not thread-safe
    with ProcessPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = {t: pool.submit(run_ours_task, tasks_dir, t, table[t], judge_url, work / t) for t in task_ids}
        for t, f in futures.items():
            for r in f.result():
                rows[(r.mode, r.task_id)] = our_row(r)
    return rows


def our_row(r: Any) -> dict[str, Any]:
    if r.score is None:
        return row(None, [], None, None, [], None, {}, f"{r.error_kind.value if r.error_kind else '?'}: "
                                                       f"{r.error_message}")
    d = r.score.details
    subs = r.score.sub_problems
    first = None
    if r.mode == "postskill":
        first = ((d.get("first_run") or {}).get("score") or {}).get("score", 0.0)
    skills = [s["name"] for s in d.get("created_skills") or []] if r.mode != "baseline" else []
    violation = d.get("skill_mutation_violation") if r.mode != "baseline" else None
    quality = d.get("skill_quality", 0.0) if r.mode != "baseline" else None
    return row(r.score.score, [subs[k] for k in sorted(subs, key=lambda k: int(k.split("_")[1]))], first, violation,
               skills, quality, r.score.criteria, d.get("notes") or "")


# --- side evidence: the judge's prompts and the first-run contexts ------------------------------------------------------

def judge_prompts(server: Any) -> list[str]:
    return sorted(req.last_text for req in server.requests() if req.model == JUDGE_MODEL)


def contexts(root: Path) -> dict[str, Any]:
    """task id -> the first_run_context.json a `skill` behaviour kept under its skill's references/."""
    out: dict[str, Any] = {}
    for f in sorted(root.rglob("references/first_run_context.json")):
        data = json.loads(f.read_text())
        out[data.get("task_id", str(f))] = data
    return out


# --- the command ------------------------------------------------------------------------------------------------------

def upstream_commit(upstream: Path, given: Optional[str]) -> str:
    if given:
        return given
    p = subprocess.run(["git", "-C", str(upstream), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else "unknown (not a git checkout: pass --upstream-commit)"


def parse(rest: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="conformance.py evoclawbench")
    ap.add_argument("--tasks", default=",".join(DEFAULT_TASKS), help="comma-separated task ids")
    ap.add_argument("--behaviours", default=",".join(BEHAVIOURS))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--upstream-python", help="a Python with the runner's dependencies (default: a cached venv)")
    ap.add_argument("--upstream-commit", help="the checkout's commit, when it is not a git checkout")
    ap.add_argument("--keep", type=Path, help="keep the work folders here")
    return ap.parse_args(rest)


def print_table(rows: list[tuple[str, str, str, dict, Optional[dict], list[str]]]) -> None:
    head = f"{'behaviour':<9} {'mode':<9} {'task':<44} {'upstream':>8} {'ours':>8}  {'sub-problems (ours)':<34} " \
           f"{'1st pass':>8} {'viol':>4} {'skills':>6}  match"
    print(head)
    print("-" * len(head))
    for kind, mode, task, ours, theirs, diff in rows:
        subs = fmt(ours["sub_problem_scores"])
        subs = subs if len(subs) <= 34 else subs[:31] + "..."
        match = "-" if theirs is None else ("yes" if not diff else "NO: " + ",".join(diff))
        print(f"{kind:<9} {mode:<9} {task:<44} {fmt(theirs['score']) if theirs else '-':>8} {fmt(ours['score']):>8}  "
              f"{subs:<34} {fmt(ours['first_pass']):>8} {fmt(ours['violation']):>4} {len(ours['skills']):>6}  {match}")


def main(args: argparse.Namespace, rest: list[str]) -> int:
    opts = parse(rest)
    from clawkube.modelserver.script import Script
    from clawkube.modelserver.server import ServerThread

    data = data_root(args.data)
    tasks_dir = data / "evoclawbench" / "tasks"
    task_ids = [t.strip() for t in opts.tasks.split(",") if t.strip()]
    kinds = [k.strip() for k in opts.behaviours.split(",") if k.strip()]
    bad = [k for k in kinds if k not in BEHAVIOURS]
    if bad:
        raise SystemExit(f"unknown behaviours {bad} (known: {', '.join(BEHAVIOURS)})")
    base = upstream_layout(args.upstream) if args.upstream else None
    python = upstream_python(base, opts.upstream_python) if base else None
    work = opts.keep or Path(tempfile.mkdtemp(prefix="clawkube-conformance-evoclaw-"))
    script = Script.model_validate(judge_script())
    table_rows: list[tuple[str, str, str, dict, Optional[dict], list[str]]] = []
    side: list[str] = []
    t0 = time.time()
    try:
        for kind in kinds:
            table = behaviours(tasks_dir, task_ids, kind)
            with ServerThread(script) as ours_judge:
                ours = run_ours(tasks_dir, task_ids, table, ours_judge.url, work / kind / "ours", opts.workers)
                our_prompts = judge_prompts(ours_judge)
            theirs: dict[tuple[str, str], dict] = {}
            if base is not None:
                with ServerThread(script) as up_judge:
                    theirs = upstream_rows(run_upstream(base, python, task_ids, table, up_judge.url,
                                                       work / kind / "upstream", opts.workers))
                    their_prompts = judge_prompts(up_judge)
                side.append(f"{kind}: judge prompts {'identical' if our_prompts == their_prompts else 'DIFFER'} "
                            f"({len(our_prompts)} here, {len(their_prompts)} there)")
                if kind == "skill":
                    mine, up = contexts(work / kind / "ours"), contexts(work / kind / "upstream" / "workspaces")
                    same = sum(mine.get(t) == up.get(t) for t in up)
                    side.append(f"{kind}: first_run_context.json identical for {same} of {len(up)} tasks "
                                f"({len(mine)} here)")
            for mode in MODES:
                for t in task_ids:
                    o = ours.get((mode, t)) or row(None, [], None, None, [], None, {}, "no result")
                    th = theirs.get((mode, t)) if base is not None else None
                    diff = differences(o, th) if th is not None else []
                    if base is not None and th is None:
                        diff = ["missing upstream"]
                    table_rows.append((kind, mode, t, o, th, diff))
    finally:
        if opts.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"== evoclawbench: {len(task_ids)} tasks x {len(kinds)} behaviours x {len(MODES)} modes "
          f"({time.time() - t0:.0f} s)")
    print_table(table_rows)
    for line in side:
        print(line)
    compared = [r for r in table_rows if r[4] is not None or r[5]]
    failed = [r for r in compared if r[5]]
    if base is None:
        print("parity NOT checked: no --upstream checkout given (this project's scores only)")
        return 0
    ok = not failed and all("DIFFER" not in s for s in side)
    print(f"upstream: {args.upstream} (pzy2000/EvoClawBench {upstream_commit(args.upstream, opts.upstream_commit)}), "
          f"runner scripts/benchmark.py --environment local --runtime openclaw --mode all")
    print(f"parity: {len(compared) - len(failed)} of {len(compared)} rows match (score, sub-problem scores, first "
          f"pass, skill mutation violation, created skills, skill quality, criteria){'' if ok else ' -- MISMATCH'}")
    return 0 if ok else 1
