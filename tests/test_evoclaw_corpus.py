"""The real EvoClawBench corpus (../shared/benchmarks/evoclawbench), every task whose fixtures are present, in
all three modes, with a do-nothing agent and a scripted agent (one that writes a skill and uses it), the scripted
model server as the judge of the hybrid tasks; prints the score table (task x mode x agent).

What must hold: every available task ends graded in every mode (no grading, setup or infra error); a do-nothing
agent passes nothing; the scripted agent's skill-writing phases create its skill for every task, its reuse
executions leave the skills alone, PostSkill records the first pass; the run summary carries the benchmark's
three-mode metrics. `validate --no-run` loads the corpus and exits 0 (the template skipped, the tasks whose code
fixtures the corpus leaves out listed as unavailable)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from clawkube.benchmarks.loader import load_tasks
from clawkube.local.runner import LocalRunner
from clawkube.modelserver.script import Script
from clawkube.modelserver.server import ServerThread
from clawkube.runspec import AgentSpec, BenchmarkRunSpec, JudgeSpec, TaskSource
from tests.benchmark_data import EVOCLAW, data

REPO = Path(__file__).resolve().parents[1]
MODES = ["baseline", "preskill", "postskill"]
UNAVAILABLE = {"task_04_test_generation", "task_06_code_review", "task_10_git_history_analysis"}  # code fixtures
JUDGE = {"models": ["judge"], "rules": [
    {"when": {"model": "judge", "contains": "--- Output:"},
     "text": '{"scores": {"accuracy": 0.7}, "total": 0.7, "notes": "outputs present"}'},
    {"when": {"model": "judge"}, "text": '{"scores": {"accuracy": 0.1}, "total": 0.1, "notes": "no outputs"}'}]}
SKILL = "skills/corpus-helper"
# the scripted agent: its skill writes the one report the agent writes without it, then a JSON report for every
# case file it finds (tasks without case files: the same outputs as without the skill)
WRITE_SKILL = [
    f"mkdir -p {SKILL}/scripts",
    f"printf -- '---\\nname: corpus-helper\\ndescription: write a report per case file\\n---\\n"
    f"Run scripts/solve.sh from the workspace root.\\n' > {SKILL}/SKILL.md",
    f"printf 'echo \"{{}}\" > outputs/case_01_report.json; for f in $(find assets -name \"case_*\" | sort); do n=$(basename \"$f\"); "
    f"echo \"{{}}\" > \"outputs/${{n%%.*}}_report.json\"; done\\n' > {SKILL}/scripts/solve.sh",
]
EXECUTE = [f"if [ -f {SKILL}/scripts/solve.sh ]; then bash {SKILL}/scripts/solve.sh; "
           "else echo '{}' > outputs/case_01_report.json; fi", "ls outputs | wc -l"]


def tasks_dir() -> Path:
    return data(EVOCLAW) / "evoclawbench" / "tasks"


def test_validate_loads_the_corpus_and_exits_0():
    p = subprocess.run([sys.executable, "-m", "clawkube", "validate", str(tasks_dir()), "--no-run"],
                       capture_output=True, text=True, env={"PYTHONPATH": str(REPO / "operator"), "PATH": "/usr/bin:/bin"})
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
    assert "98 task(s) loaded, 0 malformed, 3 unavailable" in p.stdout and " 0 problem(s)" in p.stdout
    assert "TASK_TEMPLATE.md: a EvoClawBench template, not a task" in p.stdout
    assert {line.split(".md:")[0].split("/")[-1] for line in p.stdout.splitlines()
            if line.startswith("UNAVAIL")} == UNAVAILABLE


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    outcomes = {}
    with ServerThread(Script.model_validate(JUDGE)) as judge:
        for name, agent in (("nop", AgentSpec(harness="nop")),
                            ("scripted", AgentSpec(harness="script", args={"commands": EXECUTE,
                                                                           "authoring_commands": WRITE_SKILL}))):
            spec = BenchmarkRunSpec(tasks=TaskSource(path=str(tasks_dir())), agent=agent, trials=1, parallelism=4,
                                    modes=MODES, judge=JudgeSpec(base_url=judge.url + "/v1", model="judge"))
            outcomes[name] = LocalRunner(spec, root / name, progress=None).run()
    return outcomes


def test_every_available_task_is_graded_in_every_mode_and_the_table_prints(runs, capsys):
    available = {t.id for t in load_tasks(tasks_dir()).tasks}
    assert len(available) == 98 and not available & UNAVAILABLE
    table: dict[tuple[str, str], dict[str, float]] = {}
    for name, outcome in runs.items():
        assert {e["path"].split("/")[-1].removesuffix(".md") for e in outcome.task_errors} == UNAVAILABLE
        assert all(e["unavailable"] for e in outcome.task_errors)
        failed = [(r.task_id, r.mode, r.error_kind, r.error_message) for r in outcome.results if r.score is None]
        assert not failed, failed[:5]
        assert {(r.task_id, r.mode) for r in outcome.results} == {(t, m) for t in available for m in MODES}
        for r in outcome.results:
            table.setdefault((r.task_id, r.mode), {})[name] = r.score.score
    with capsys.disabled():
        print(f"\nEvoClawBench corpus: {len(available)} tasks x {len(MODES)} modes (nop | scripted)")
        print(f"{'task':<46}" + "".join(f"{m:>20}" for m in MODES))
        for task in sorted(available):
            cells = [f"{table[(task, m)]['nop']:.3f} | {table[(task, m)]['scripted']:.3f}" for m in MODES]
            print(f"{task:<46}" + "".join(f"{c:>20}" for c in cells))
        for name, outcome in runs.items():
            x = outcome.summary.benchmarks["evoclawbench"]["metrics"]["execution_only"]
            print(f"{name}: mean scores {x['mean_scores']}, ratios vs baseline {x['ratios_vs_baseline']}")


def test_a_do_nothing_agent_passes_nothing(runs):
    passed = [(r.task_id, r.mode, r.score.score) for r in runs["nop"].results if r.score.passed]
    assert passed == []


def test_the_scripted_agent_writes_and_reuses_its_skill_everywhere(runs):
    by = {(r.task_id, r.mode): r for r in runs["scripted"].results}
    for (task, mode), r in by.items():
        d = r.score.details
        if mode == "baseline":
            assert "created_skills" not in d and d["skills"]["files"] == {}
            continue
        assert [s["name"] for s in d["created_skills"]] == ["corpus-helper"], (task, mode)
        assert d["skill_quality"] == 0.8 and d["skill_mutation_violation"] is False  # name, description, >100 chars, scripts
        assert set(d["skills"]["files"]) == {"corpus-helper/SKILL.md", "corpus-helper/scripts/solve.sh"}
        if mode == "postskill":
            assert d["first_run"]["score"]["score"] == pytest.approx(by[(task, "baseline")].score.score)
    # the skill writes every case's report: never worse than the one report written without it
    worse = [t for (t, m), r in by.items() if m == "preskill" and r.score.score < by[(t, "baseline")].score.score]
    assert worse == []
    metrics = runs["scripted"].summary.benchmarks["evoclawbench"]["metrics"]
    assert metrics["created_skills"]["preskill_count"] == metrics["created_skills"]["postskill_count"] == 98
    assert metrics["skill_mutation_violations"] == {"preskill": 0, "postskill": 0}
    assert metrics["execution_only"]["mean_scores"]["preskill"] > metrics["execution_only"]["mean_scores"]["baseline"]
    saved = json.loads((runs["scripted"].out / "summary.json").read_text())["benchmarks"]["evoclawbench"]
    assert set(saved["metrics"]) == {"execution_only", "end_to_end", "postskill", "created_skills", "skill_quality",
                                     "skill_mutation_violations"}
