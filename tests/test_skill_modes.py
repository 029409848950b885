"""EvoClawBench modes with scripted agents that act differently per phase: baseline (no authored skills),
PreSkill (authoring from the prompt only, then a fresh execution with those skills), PostSkill (first run,
summary phase over a compact first-run context, fresh second run), skill hashes and mutations, usage split
into execution-only and end-to-end, and all three modes in one run folder with ratios against baseline."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from clawkube.local.runner import LocalRunner, parse_modes
from clawkube.results.model import Score
from clawkube.runspec import AgentSpec, BenchmarkRunSpec, EvalMode, TaskSelector, TaskSource
from clawkube.skills.context import LIMIT, first_run_context, grade_summary
from clawkube.skills.phase_args import phase_args
from clawkube.benchmarks.loader import load_task

REPO = Path(__file__).resolve().parents[1]
TASK = load_task(REPO / "tasks" / "evoclaw" / "evo-word-stats.md")
S = '"$CLAWKUBE_SKILLS_DIR/word-stats"'
WRITE_SKILL = [
    f"mkdir -p {S}",
    f"cat > {S}/solve.sh <<'CLAWKUBE_EOF'\n{TASK.reference_solution}CLAWKUBE_EOF",
    f"echo 'Word statistics: run solve.sh in the workspace.' > {S}/SKILL.md",
    f"ls -A | wc -l > {S}/workspace_entries.txt",  # what the skill-writing phase could see of a workspace
]
# with the skill: the right answer; without: a partial one (2 of the 5 criteria)
EXECUTE = [f"if [ -f {S}/solve.sh ]; then bash {S}/solve.sh; else echo '{{\"words\": 94}}' > stats.json; fi",
           'ls -A "$CLAWKUBE_SKILLS_DIR" | wc -l']
PARTIAL = 0.4


def run(tmp: Path, mode: EvalMode = EvalMode.BASELINE, modes=None, commands=EXECUTE, **phase_cmds):
    args = {"commands": list(commands), **phase_cmds}
    spec = BenchmarkRunSpec(tasks=TaskSource(path=str(REPO / "tasks" / "evoclaw")),
                            selector=TaskSelector(ids=[TASK.id]), agent=AgentSpec(harness="script", args=args),
                            trials=1, parallelism=3, mode=mode)
    out = tmp / "out"
    return LocalRunner(spec, out, progress=None, modes=modes).run(), out


def tool_results(path: Path) -> list[str]:
    return [e["content"].strip() for line in path.read_text().splitlines()
            if (e := json.loads(line))["type"] == "tool_result"]


def test_baseline_has_no_skills(tmp_path: Path):
    (r,), out = run(tmp_path, authoring_commands=WRITE_SKILL)[0].results, tmp_path / "out"
    d = out / "trials" / TASK.id / "0"
    assert r.mode == "baseline" and r.score.score == pytest.approx(PARTIAL)
    assert tool_results(d / "transcript.jsonl")[-1] == "0"  # empty skills dir
    assert not (d / "authoring").exists()  # no authoring phase ran
    details = r.score.details
    assert details["skills"] == {"source": "task", "files": {}, "mutations": {"added": [], "modified": [],
                                                                               "deleted": []}}
    assert details["execution_usage"]["tool_calls"] == r.usage.tool_calls == 2


def test_preskill_authors_from_the_prompt_then_executes_with_only_those_skills(tmp_path: Path):
    outcome, out = run(tmp_path, EvalMode.PRESKILL, authoring_commands=WRITE_SKILL)
    (r,) = outcome.results
    d = out / "trials" / TASK.id / "0"
    assert r.mode == "preskill" and r.score.score == 1.0 and r.score.passed
    # the authoring phase: the task prompt inside an authoring prompt, an empty workspace, skills as output
    events = [json.loads(x) for x in (d / "authoring" / "transcript.jsonl").read_text().splitlines()]
    assert "preparing reusable skills" in events[0]["content"] and TASK.prompt.strip() in events[0]["content"]
    assert (d / "authoring" / "skills" / "word-stats" / "workspace_entries.txt").read_text().strip() == "0"
    assert not (d / "authoring" / "workspace.tar.gz").exists()  # its workspace is scratch, not evidence
    # the execution saw exactly the authored skills, and they were hashed as it started
    assert tool_results(d / "transcript.jsonl")[-1] == "1"
    skills = r.score.details["skills"]
    solve = (d / "authoring" / "skills" / "word-stats" / "solve.sh").read_bytes()
    assert skills["source"] == "authored" and skills["files"]["word-stats/solve.sh"] == hashlib.sha256(solve).hexdigest()
    assert set(skills["files"]) == {f"word-stats/{n}" for n in ("solve.sh", "SKILL.md", "workspace_entries.txt")}
    assert r.score.details["skills_mutated"] is False
    # usage: end-to-end includes the authoring phase, execution_usage does not
    assert r.score.details["phase_usage"]["authoring"]["tool_calls"] == len(WRITE_SKILL)
    assert r.score.details["execution_usage"]["tool_calls"] == len(EXECUTE)
    assert r.usage.tool_calls == len(WRITE_SKILL) + len(EXECUTE)
    assert set(r.phase_seconds) >= {"authoring", "setup", "agent", "grade"}


def test_skill_mutations_during_execution_are_reported(tmp_path: Path):
    mutate = [*EXECUTE, f"echo 'learned: tokens are a-z runs' >> {S}/SKILL.md", f"touch {S}/notes.md",
              f"rm {S}/workspace_entries.txt"]
    (r,), _ = run(tmp_path, EvalMode.PRESKILL, commands=mutate, authoring_commands=WRITE_SKILL)[0].results, None
    assert r.score.details["skills"]["mutations"] == {"added": ["word-stats/notes.md"],
                                                      "modified": ["word-stats/SKILL.md"],
                                                      "deleted": ["word-stats/workspace_entries.txt"]}
    assert r.score.details["skills_mutated"] is True


def test_preskill_without_authored_skills_is_like_baseline(tmp_path: Path):
    (r,), _ = run(tmp_path, EvalMode.PRESKILL)[0].results, None  # no authoring_commands: the phase writes nothing
    assert r.score.score == pytest.approx(PARTIAL) and r.score.details["skills"]["files"] == {}


def test_postskill_first_run_summary_then_a_fresh_second_run(tmp_path: Path):
    summarise = [*WRITE_SKILL, f"ls -A .. | wc -l > {S}/parent_entries.txt"]
    outcome, out = run(tmp_path, EvalMode.POSTSKILL, summary_commands=summarise)
    (r,) = outcome.results
    d = out / "trials" / TASK.id / "0"
    first = r.score.details["first_run"]
    assert first["score"]["score"] == pytest.approx(PARTIAL)  # first run: no skills yet
    assert r.score.score == 1.0 and r.mode == "postskill"  # second run: with the summary's skills
    for name in ("transcript.jsonl", "workspace.tar.gz", "score.json", "context.txt"):
        assert (d / "first_run" / name).exists(), name
    context = (d / "first_run" / "context.txt").read_text()
    assert "score 0.400" in context and "stats.json" in context and '"words": 94' in context
    summary_prompt = json.loads((d / "summary" / "transcript.jsonl").read_text().splitlines()[0])["content"]
    assert "Record of the first attempt" in summary_prompt and context.strip() in summary_prompt
    assert (d / "summary" / "skills" / "word-stats" / "workspace_entries.txt").read_text().strip() == "0"
    # the second run started from a fresh workspace: its diff adds stats.json again
    assert json.loads((d / "workspace.diff.json").read_text())["added"] == ["stats.json"]
    pu = r.score.details["phase_usage"]
    assert set(pu) == {"first_run", "summary", "execution"}
    assert r.usage.tool_calls == sum(p["tool_calls"] for p in pu.values()) == 2 * len(EXECUTE) + len(summarise)
    assert r.score.details["execution_usage"]["tool_calls"] == len(EXECUTE)


def test_all_three_modes_in_one_run_folder_with_ratios(tmp_path: Path):
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
        assert m.vs_baseline.time is not None and m.vs_baseline_execution.time is not None
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


def test_first_run_context_is_bounded_and_names_the_outcome(tmp_path: Path):
    (tmp_path / "out.txt").write_text("x" * 5000)
    events = [{"type": "tool_call", "tool": "bash", "arguments": {"command": f"step {i}"}} for i in range(30)]
    events.append({"type": "message", "role": "assistant", "content": "finished"})
    score = Score(score=0.25, passed=False, criteria={"words": 1.0, "lines": 0.0})
    text = first_run_context(score, None, tmp_path, {"added": ["out.txt"], "modified": [], "deleted": []}, events)
    assert len(text) <= LIMIT + 40
    assert "score 0.250, not passed" in text and "lines=0.00" in text and "30 tool call(s)" in text
    assert "step 29" in text and "step 0\n" not in text and "Final message: finished" in text
    assert "more chars" in text  # the 5000-char file is clipped
    assert grade_summary(None, "grading_error: boom") == "Outcome: not graded (grading_error: boom)."


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
