"""EvoClawBench modes as its runner runs them, with scripted agents that act differently per phase: baseline
(prefixed prompt, no skills), PreSkill (a skill-writing phase in a fresh copy of the task workspace, then a fresh
execution with only the skills it wrote), PostSkill (first run, summary phase over first_run_context.json, fresh
second run), skill hashes and mutation violations, usage split into execution-only and end-to-end, and all three
modes in one run folder with the benchmark's metrics."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from clawkube.benchmarks.loader import load_task
from clawkube.local.runner import LocalRunner, parse_modes
from clawkube.runspec import AgentSpec, BenchmarkRunSpec, EvalMode, TaskSelector, TaskSource
from clawkube.benchmarks.evoclaw import protocol
from clawkube.skills.phase_args import phase_args

REPO = Path(__file__).resolve().parents[1]
TASK = load_task(REPO / "tasks" / "evoclaw" / "evo-word-stats.md")
S = "skills/word-stats"  # EvoClawBench keeps skills inside the workspace
WRITE_SKILL = [
    f"mkdir -p {S}",
    f"cat > {S}/solve.sh <<'CLAWKUBE_EOF'\n{TASK.reference_solution}CLAWKUBE_EOF",
    f"printf -- '---\\nname: word-stats\\ndescription: word statistics\\n---\\nRun solve.sh.\\n' > {S}/SKILL.md",
    f"ls -A | sort | tr '\\n' ' ' > {S}/workspace_entries.txt",  # what the skill-writing phase saw
]
# with the skill: the right answer; without: a partial one (2 of the 5 criteria)
EXECUTE = [f"if [ -f {S}/solve.sh ]; then bash {S}/solve.sh; else echo '{{\"words\": 94}}' > stats.json; fi",
           "ls -A skills 2>/dev/null | wc -l"]
PARTIAL = 0.4


def run(tmp: Path, mode: EvalMode = EvalMode.BASELINE, modes=None, commands=EXECUTE, tasks=None, task_id=None,
        **phase_cmds):
    args = {"commands": list(commands), **phase_cmds}
    spec = BenchmarkRunSpec(tasks=TaskSource(path=str(tasks or REPO / "tasks" / "evoclaw")),
                            selector=TaskSelector(ids=[task_id or TASK.id]), agent=AgentSpec(harness="script", args=args),
                            trials=1, parallelism=3, mode=mode)
    out = tmp / "out"
    return LocalRunner(spec, out, progress=None, modes=modes).run(), out


def events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def tool_results(path: Path) -> list[str]:
    return [e["content"].strip() for e in events(path) if e["type"] == "tool_result"]


def test_baseline_prefixes_the_prompt_and_has_no_skills(tmp_path: Path):
    (r,), out = run(tmp_path, authoring_commands=WRITE_SKILL)[0].results, tmp_path / "out"
    d = out / "trials" / TASK.id / "0"
    assert r.mode == "baseline" and r.score.score == pytest.approx(PARTIAL)
    assert events(d / "transcript.jsonl")[0]["content"] == protocol.BASELINE_PREFIX + TASK.prompt
    assert tool_results(d / "transcript.jsonl")[-1] == "0"  # no skills folder
    assert not (d / "authoring").exists()  # no authoring phase ran
    details = r.score.details
    assert details["skills"] == {"source": "task", "files": {}, "mutations": {"added": [], "modified": [],
                                                                               "deleted": []}}
    assert "skill_mutation_violation" not in details and set(details["phase_usage"]) == {"execution"}
    assert details["execution_usage"]["tool_calls"] == r.usage.tool_calls == 2


def test_preskill_authors_in_the_task_workspace_then_executes_with_only_those_skills(tmp_path: Path):
    outcome, out = run(tmp_path, EvalMode.PRESKILL, authoring_commands=WRITE_SKILL)
    (r,) = outcome.results
    d = out / "trials" / TASK.id / "0"
    assert r.mode == "preskill" and r.score.score == 1.0 and r.score.passed
    # the authoring phase: the authoring prefix before the task prompt, a copy of the task workspace
    assert events(d / "authoring" / "transcript.jsonl")[0]["content"] == protocol.PRESKILL_AUTHOR_PREFIX + TASK.prompt
    assert (d / "authoring" / "skills" / "word-stats" / "workspace_entries.txt").read_text().split() == \
        ["essay.txt", "outputs", "skills"]
    assert not (d / "authoring" / "workspace.tar.gz").exists()  # its workspace is scratch, not evidence
    # the execution: the reuse prefix, exactly the authored skills, hashed as it started
    assert events(d / "transcript.jsonl")[0]["content"] == protocol.SKILL_REUSE_PREFIX + TASK.prompt
    assert tool_results(d / "transcript.jsonl")[-1] == "1"
    skills = r.score.details["skills"]
    solve = (d / "authoring" / "skills" / "word-stats" / "solve.sh").read_bytes()
    assert skills["source"] == "authored" and skills["files"]["word-stats/solve.sh"] == hashlib.sha256(solve).hexdigest()
    assert set(skills["files"]) == {f"word-stats/{n}" for n in ("solve.sh", "SKILL.md", "workspace_entries.txt")}
    assert r.score.details["skill_mutation_violation"] is False
    (created,) = r.score.details["created_skills"]
    assert created["name"] == "word-stats" and created["frontmatter"] == {"name": "word-stats",
                                                                          "description": "word statistics"}
    assert r.score.details["skill_quality"] == 0.4  # name + description; short, no scripts/ or references/
    # usage: end-to-end includes the authoring phase, execution_usage does not
    assert r.score.details["phase_usage"]["authoring"]["tool_calls"] == len(WRITE_SKILL)
    assert r.score.details["execution_usage"]["tool_calls"] == len(EXECUTE)
    assert r.usage.tool_calls == len(WRITE_SKILL) + len(EXECUTE)
    assert set(r.phase_seconds) >= {"authoring", "setup", "agent", "grade"}


def test_skill_mutations_during_execution_are_violations(tmp_path: Path):
    mutate = [*EXECUTE, f"echo 'learned: tokens are a-z runs' >> {S}/SKILL.md", f"touch {S}/notes.md",
              f"rm {S}/workspace_entries.txt", "mkdir -p skills/skill-creator && touch skills/skill-creator/x"]
    (r,), _ = run(tmp_path, EvalMode.PRESKILL, commands=mutate, authoring_commands=WRITE_SKILL)[0].results, None
    assert r.score.details["skills"]["mutations"] == {"added": ["word-stats/notes.md"],  # the seeded name is left out
                                                      "modified": ["word-stats/SKILL.md"],
                                                      "deleted": ["word-stats/workspace_entries.txt"]}
    assert r.score.details["skill_mutation_violation"] is True


def test_a_baseline_that_writes_skills_is_no_violation(tmp_path: Path):
    (r,), _ = run(tmp_path, commands=[*EXECUTE, *WRITE_SKILL])[0].results, None
    assert r.score.details["skills"]["mutations"]["added"] and "skill_mutation_violation" not in r.score.details


def test_preskill_without_authored_skills_is_like_baseline(tmp_path: Path):
    (r,), _ = run(tmp_path, EvalMode.PRESKILL)[0].results, None  # no authoring_commands: the phase writes nothing
    assert r.score.score == pytest.approx(PARTIAL) and r.score.details["skills"]["files"] == {}
    assert r.score.details["created_skills"] == [] and r.score.details["skill_quality"] == 0.0


def test_postskill_first_run_summary_over_its_context_then_a_fresh_second_run(tmp_path: Path):
    keep_context = [f"mkdir -p {S}/references", f"cp {protocol.CONTEXT_FILE} {S}/references/"]
    outcome, out = run(tmp_path, EvalMode.POSTSKILL, summary_commands=[*WRITE_SKILL, *keep_context])
    (r,) = outcome.results
    d = out / "trials" / TASK.id / "0"
    first = r.score.details["first_run"]
    assert first["score"]["score"] == pytest.approx(PARTIAL)  # first run: no skills yet
    assert r.score.score == 1.0 and r.mode == "postskill"  # second run: with the summary's skills
    for name in ("transcript.jsonl", "workspace.tar.gz", "score.json", "first_run_context.json"):
        assert (d / "first_run" / name).exists(), name
    context = json.loads((d / "summary" / "skills" / "word-stats" / "references" / "first_run_context.json").read_text())
    assert context == json.loads((d / "first_run" / "first_run_context.json").read_text())
    assert (context["task_id"], context["task_name"], context["prompt"]) == (TASK.id, TASK.name, TASK.prompt)
    assert context["grade"]["score"] == pytest.approx(PARTIAL) and context["grade"]["grading_type"] == "automated"
    assert context["grading_criteria"][0] == "`stats.json` exists and is a JSON object"
    assert context["transcript_summary"][0].startswith("user: BASELINE MODE: Complete the task directly.")
    assert context["outputs"] == []  # the first run wrote stats.json, not under outputs/
    assert events(d / "summary" / "transcript.jsonl")[0]["content"] == protocol.POSTSKILL_SUMMARY_PREFIX + TASK.prompt
    assert (d / "summary" / "skills" / "word-stats" / "workspace_entries.txt").read_text().split() == \
        [".evoclawbench", "essay.txt", "outputs", "skills"]
    # the second run started from a fresh workspace: its diff adds stats.json again
    assert json.loads((d / "workspace.diff.json").read_text())["added"] == ["stats.json"]
    pu = r.score.details["phase_usage"]
    assert set(pu) == {"first_run", "summary", "execution"}
    assert r.usage.tool_calls == sum(p["tool_calls"] for p in pu.values()) == 2 * len(EXECUTE) + len(WRITE_SKILL) + 2
    assert r.score.details["execution_usage"]["tool_calls"] == len(EXECUTE)
    assert r.score.details["created_skills"][0]["references_count"] == 1


BENCH_TASK = """---
id: task_90_seed
name: Seeded guide
category: c
grading_type: automated
workspace_files:
  - assets/seed/in.txt
---

## Prompt

Copy `assets/seed/in.txt` to `outputs/out.txt`.

## Automated Checks

```python
def grade(transcript: list, workspace_path: str) -> dict:
    from pathlib import Path
    out = Path(workspace_path) / "outputs" / "out.txt"
    return {"sub_1_copied": 1.0 if out.is_file() and out.read_text() == "hello\\n" else 0.0}
```
"""


def bench_repo(root: Path) -> Path:
    """The benchmark's layout: <repo>/evoclawbench/{tasks,assets}, <repo>/skills/skill-creator."""
    (root / "evoclawbench" / "assets" / "seed").mkdir(parents=True)
    (root / "evoclawbench" / "assets" / "seed" / "in.txt").write_text("hello\n")
    (root / "evoclawbench" / "tasks").mkdir()
    (root / "evoclawbench" / "tasks" / "task_90_seed.md").write_text(BENCH_TASK)
    guide = root / "skills" / "skill-creator"
    guide.mkdir(parents=True)
    (guide / "SKILL.md").write_text("---\nname: skill-creator\ndescription: how to write skills\n---\nGuide.\n")
    return root / "evoclawbench" / "tasks"


def test_skill_creator_is_seeded_into_skill_writing_phases_only(tmp_path: Path):
    author = ["ls skills", "mkdir -p skills/copy && printf 'cp assets/seed/in.txt outputs/out.txt\\n' > "
              "skills/copy/run.sh && echo '# copy' > skills/copy/SKILL.md", "head -n 2 skills/skill-creator/SKILL.md"]
    execute = ["ls skills", "if [ -f skills/copy/run.sh ]; then bash skills/copy/run.sh; fi", "ls outputs"]
    outcome, out = run(tmp_path, EvalMode.PRESKILL, commands=execute, tasks=bench_repo(tmp_path / "repo"),
                       task_id="task_90_seed", authoring_commands=author)
    (r,) = outcome.results
    d = out / "trials" / "task_90_seed" / "0"
    assert tool_results(d / "authoring" / "transcript.jsonl") == ["skill-creator", "", "---\nname: skill-creator"]
    assert tool_results(d / "transcript.jsonl") == ["copy", "", "out.txt"]  # the seeded guide is not carried over
    assert sorted(p.name for p in (d / "authoring" / "skills").iterdir()) == ["copy"]
    assert r.score.score == 1.0 and r.score.sub_problems == {"sub_1": 1.0}


def test_all_three_modes_in_one_run_folder_with_the_benchmarks_metrics(tmp_path: Path):
    modes = parse_modes("all")
    outcome, out = run(tmp_path, modes=modes, authoring_commands=WRITE_SKILL)
    assert sorted(r.mode for r in outcome.results) == sorted(modes)
    assert sorted(p.name for p in (out / "trials" / TASK.id).iterdir()) == ["baseline-0", "postskill-0", "preskill-0"]
    s = outcome.summary
    assert s.modes == ["baseline", "preskill", "postskill"]
    assert s.by_mode["baseline"].metrics.mean_score == pytest.approx(PARTIAL)
    for mode in ("preskill", "postskill"):
        m = s.by_mode[mode]
        assert m.metrics.mean_score == 1.0 and m.vs_baseline.score == pytest.approx(1.0 / PARTIAL)
        e2e, ex = m.usage_end_to_end.mean_per_trial, m.usage_execution.mean_per_trial
        assert e2e.tool_calls > ex.tool_calls == len(EXECUTE)  # authoring counted end-to-end only
    metrics = json.loads((out / "summary.json").read_text())["benchmarks"]["evoclawbench"]["metrics"]
    assert metrics["execution_only"]["mean_scores"] == {"baseline": PARTIAL, "preskill": 1.0, "postskill": 1.0}
    assert metrics["execution_only"]["ratios_vs_baseline"] == {"preskill": 2.5, "postskill": 2.5}
    assert metrics["postskill"] == {"first_pass_mean": PARTIAL, "second_pass_mean": 1.0, "second_vs_first_delta": 0.6,
                                    "second_vs_first_ratio": 2.5}
    assert metrics["created_skills"]["preskill_count"] == metrics["created_skills"]["postskill_count"] == 1
    assert metrics["skill_mutation_violations"] == {"preskill": 0, "postskill": 0}
    usage = metrics["end_to_end"]["usage"]["preskill"]
    assert set(usage) == {"total_tokens", "total_cost_usd", "total_execution_time_seconds", "cost_usd", "input_tokens",
                          "output_tokens", "cache_read_tokens", "cache_write_tokens", "request_count"}
    assert set(metrics["end_to_end"]["efficiency_vs_baseline"]["postskill"]) == {
        "token_efficiency_gain", "cost_efficiency_gain", "time_efficiency_gain"}
    run_file = json.loads((out / "run.json").read_text())
    assert run_file["modes"] == modes
    # resume: a second identical invocation keeps every finished trial
    before = {r.mode: r.started_at for r in outcome.results}
    again, _ = run(tmp_path, modes=modes, authoring_commands=WRITE_SKILL)
    assert {r.mode: r.started_at for r in again.results} == before


@pytest.mark.parametrize("value, want", [("all", ["baseline", "preskill", "postskill"]), ("preskill", ["preskill"]),
                                         ("postskill, baseline,postskill", ["postskill", "baseline"])])
def test_parse_modes(value, want):
    assert parse_modes(value) == want


@pytest.mark.parametrize("value", ["", "fast", "baseline,fast"])
def test_parse_modes_rejects(value):
    with pytest.raises(ValueError, match="expected all, or one or more of baseline, preskill, postskill"):
        parse_modes(value)


@pytest.mark.parametrize("args, phase, want", [
    ({"commands": ["x"], "authoring_commands": ["a"]}, "execution", {"commands": ["x"], "authoring_commands": ["a"]}),
    ({"commands": ["x"], "authoring_commands": ["a"]}, "authoring", {"commands": ["a"], "authoring_commands": ["a"]}),
    ({"commands": ["x"], "authoring_commands": ["a"]}, "summary", {"commands": ["a"], "authoring_commands": ["a"]}),
    ({"commands": ["x"], "summary_commands": ["s"]}, "summary", {"commands": ["s"], "summary_commands": ["s"]}),
    ({"commands": ["x"]}, "authoring", {"commands": []}),
    ({"commands": ["x"], "phases": {"authoring": {"final_message": "skills written"}}}, "authoring",
     {"commands": [], "final_message": "skills written"}),
])
def test_phase_args(args, phase, want):
    assert phase_args(args, phase) == want


def test_phase_args_rejects_unknown_phase():
    with pytest.raises(ValueError, match="unknown phase"):
        phase_args({}, "grading")


def test_spec_modes_run_several_modes_and_the_cli_mode_flag_wins(tmp_path: Path):
    from clawkube.cli import build_spec, parser

    base = BenchmarkRunSpec(tasks=TaskSource(path=str(REPO / "tasks" / "evoclaw")),
                            selector=TaskSelector(ids=[TASK.id]), trials=1, agent=AgentSpec(harness="nop"))
    spec = base.model_copy(update={"modes": [EvalMode.BASELINE, EvalMode.POSTSKILL]})
    assert spec.mode_list() == ["baseline", "postskill"] and base.mode_list() == ["baseline"]
    assert LocalRunner(spec, tmp_path / "o", progress=None).modes == ["baseline", "postskill"]
    run_yaml = tmp_path / "run.yaml"
    run_yaml.write_text(json.dumps({"tasks": {"path": str(REPO / "tasks")}, "modes": ["preskill", "postskill"]}))
    assert build_spec(parser().parse_args(["run", str(run_yaml)])).mode_list() == ["preskill", "postskill"]
    for flag, want in (("all", ["baseline", "preskill", "postskill"]), ("baseline", ["baseline"])):
        assert build_spec(parser().parse_args(["run", str(run_yaml), "--mode", flag])).mode_list() == want


@pytest.mark.parametrize("body, problem", [
    ({"modes": ["baseline", "baseline"]}, "names a mode twice"),
    ({"mode": "preskill", "modes": ["baseline", "postskill"]}, "is not among modes"),
    ({"modes": ["fast"]}, "Input should be"),
])
def test_spec_modes_are_validated(body, problem):
    with pytest.raises(ValueError, match=problem):
        BenchmarkRunSpec.model_validate({"tasks": {"path": "x"}, **body})
