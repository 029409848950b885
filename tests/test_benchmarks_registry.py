"""The benchmark plugin registry: built-ins, loud failures of broken plugins, and a fourth benchmark added as
one plugin (detect, templates, load, bundles, grading, score, summary section, report)."""
from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Any, Optional

import pytest
from pydantic import BaseModel

from clawkube.benchmarks import registry
from clawkube.benchmarks.base import Benchmark, GradingError
from clawkube.benchmarks.loader import load_task, load_tasks
from clawkube.cli import main as cli_main
from clawkube.contracts.grading import GradeRequest
from clawkube.contracts.manifests import GradingManifest
from clawkube.lifecycle import bundle
from clawkube.lifecycle.scoring import to_score
from clawkube.results.model import Score, TrialResult, TrialState
from clawkube.reporting.report import render
from clawkube.reporting.summary import summarize
from clawkube.tasks.model import FileMapping, GraderSpec, TaskLoadError, TaskSpec

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def fresh_registry():
    registry.reset()
    yield
    registry.reset()


def test_builtin_plugins():
    assert registry.names() == ["claw-eval", "evoclawbench", "wildclawbench"]
    assert [p.title for p in registry.all_benchmarks()] == ["CLAW-Eval", "EvoClawBench", "WildClawBench"]
    assert registry.get("claw-eval").workspace_mount == "/workspace"
    assert registry.get("wildclawbench").workspace_mount == "/tmp_workspace"
    with pytest.raises(registry.UnknownBenchmark, match="known: claw-eval, evoclawbench, wildclawbench"):
        registry.get("claw_eval")


def test_an_unimportable_plugin_fails_every_lookup_loudly(monkeypatch):
    monkeypatch.setattr(registry, "BUILTIN", (*registry.BUILTIN, "clawkube.benchmarks.no_such_plugin"))
    with pytest.raises(registry.BrokenPlugin, match="clawkube.benchmarks.no_such_plugin cannot be imported"):
        registry.names()
    # not "no tasks found": loading tasks of the other benchmarks fails too, naming the broken plugin
    with pytest.raises(registry.BrokenPlugin, match="no_such_plugin"):
        load_tasks(REPO / "tasks")


@pytest.mark.parametrize("body,needle", [
    ({}, "defines no PLUGIN"),
    ({"PLUGIN": object()}, "not a clawkube.benchmarks.base.Benchmark"),
    ({"__getattr__": None}, "cannot be imported"),
])
def test_a_plugin_module_without_a_valid_plugin_is_reported(monkeypatch, body, needle):
    name = "clawkube_test_bad_plugin"
    mod = types.ModuleType(name)
    if "__getattr__" in body:  # a module whose import raises
        monkeypatch.setitem(sys.modules, name, None)
    else:
        mod.__dict__.update(body)
        monkeypatch.setitem(sys.modules, name, mod)
    monkeypatch.setattr(registry, "BUILTIN", (*registry.BUILTIN, name))
    with pytest.raises(registry.BrokenPlugin, match=needle):
        registry.get("wildclawbench")


def test_the_cli_reports_a_broken_plugin(monkeypatch, capsys):
    monkeypatch.setattr(registry, "BUILTIN", (*registry.BUILTIN, "clawkube.benchmarks.no_such_plugin"))
    assert cli_main(["validate", "--no-run", str(REPO / "tasks")]) == 2
    assert "no_such_plugin cannot be imported" in capsys.readouterr().err


def test_a_name_cannot_be_taken_twice():
    registry.register(_clone("claw-eval"))
    try:
        with pytest.raises(registry.BrokenPlugin, match="'claw-eval' is already taken"):
            registry.names()
    finally:
        registry.unregister("claw-eval")
    assert registry.get("claw-eval").title == "CLAW-Eval"


def _clone(name: str) -> Benchmark:
    plugin = Toy()
    plugin.name = name
    return plugin


# --- a fourth benchmark: one JSON file per task ------------------------------------------------------------------

class ToySummary(BaseModel):
    trials: int
    best: Optional[float]


class Toy(Benchmark):
    """`*.toy.json`: {"id", "prompt", "answer"}; the workspace gets `question.txt`, the grader sees `answer.txt`
    as grading-only; the grader returns {"right": 0|1}; score = right; templates are named `_template.toy.json`."""

    name = "toybench"
    title = "ToyBench"
    workspace_mount = "/toy"
    grader_requirements = ("json", "clawkube_no_such_grader_dependency")
    summary_model = ToySummary

    def detect(self, path: Path) -> bool:
        return path.is_file() and path.name.endswith(".toy.json")

    def is_template(self, path: Path) -> bool:
        return path.name.startswith("_template")

    def load(self, path: Path) -> TaskSpec:
        raw = json.loads(path.read_text())
        if "answer" not in raw:
            raise TaskLoadError(path, "answer", "missing")
        folder = path.parent / (path.name.removesuffix(".toy.json") + ".files")
        folder.mkdir(exist_ok=True)
        (folder / "question.txt").write_text(raw["prompt"])
        (folder / "answer.txt").write_text(raw["answer"])
        code = ("def grade(workspace_path):\n"
                "    import pathlib\n    p = pathlib.Path(workspace_path)\n"
                "    return {'right': float((p / 'out.txt').read_text() == (p / 'answer.txt').read_text())}\n")
        return TaskSpec(id=raw["id"], name=raw["id"], format=self.name, source_path=path, prompt=raw["prompt"],
                        workspace=[FileMapping(src=folder / "question.txt")],
                        grading_files=[FileMapping(src=folder / "answer.txt")],
                        grader=GraderSpec(inline_code=code))

    def score(self, m: GradingManifest, raw: dict[str, float], evidence) -> Score:
        if "right" not in raw:
            raise GradingError("no 'right'")
        return Score(score=raw["right"], passed=raw["right"] >= m.pass_threshold, criteria=raw)

    def summarize(self, seen: list[TrialResult], finished: list[TrialResult]) -> ToySummary:
        scores = [r.score.score for r in finished if r.score]
        return ToySummary(trials=len(finished), best=max(scores) if scores else None)

    def report_lines(self, section: dict[str, Any]) -> list[str]:
        s = ToySummary.model_validate(section)
        return [f"ToyBench: {s.trials} trials, best {s.best}"]


@pytest.fixture
def toy(tmp_path):
    plugin = registry.register(Toy())
    root = tmp_path / "tasks"
    root.mkdir()
    (root / "q1.toy.json").write_text(json.dumps({"id": "q1", "prompt": "2+2?", "answer": "4"}))
    (root / "_template.toy.json").write_text(json.dumps({"id": "TEMPLATE", "prompt": "?"}))
    (root / "bad.toy.json").write_text(json.dumps({"id": "bad", "prompt": "?"}))
    yield plugin, root
    registry.unregister("toybench")


def test_a_fourth_benchmark_loads_through_its_plugin(toy):
    plugin, root = toy
    report = load_tasks(root)
    assert [(t.id, t.format) for t in report.tasks] == [("q1", "toybench")]
    assert [(e.path.name, e.field) for e in report.errors] == [("bad.toy.json", "answer")]
    assert [(s.path.name, s.benchmark) for s in report.skipped] == [("_template.toy.json", "toybench")]
    with pytest.raises(TaskLoadError, match="template"):
        load_task(root / "_template.toy.json")


def test_a_fourth_benchmark_grades_and_summarises_through_its_plugin(toy, tmp_path):
    plugin, root = toy
    task = load_task(root / "q1.toy.json")
    agent_dir, grading_dir = tmp_path / "agent", tmp_path / "grading"
    bundle.extract(bundle.agent_bundle(task, "nop"), agent_dir)
    bundle.extract(bundle.grading_bundle(task), grading_dir)
    assert sorted(p.name for p in (agent_dir / "workspace").iterdir()) == ["question.txt"]
    gm = bundle.read_grading_manifest(grading_dir)
    assert (gm.format, gm.workspace_mount) == ("toybench", "/toy")
    assert bundle.read_agent_manifest(agent_dir).workspace_mount == "/toy"

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "out.txt").write_text("4")
    (ws / "answer.txt").write_text((grading_dir / "files" / "answer.txt").read_text())
    req = GradeRequest(benchmark="toybench", grader_file=str(grading_dir / "grader.py"), workspace_path=str(ws),
                       transcript_path="-", audit_dir="-", task_manifest_path="-", env_snapshot_path="-",
                       output_path="-")
    raw = registry.get(req.benchmark).run_grader(req, None)
    score = to_score(gm, raw)
    assert (score.score, score.passed) == (1.0, True)

    result = TrialResult(task_id="q1", category="c", task_format="toybench", trial_index=0,
                         state=TrialState.SUCCEEDED, score=score)
    summary = summarize([result], trials_per_task=1)
    assert summary.benchmarks == {"toybench": {"trials": 1, "best": 1.0}}
    assert "ToyBench: 1 trials, best 1.0" in render(summary)
    assert registry.missing_requirements(["toybench"]) == [
        "ToyBench graders need the Python module 'clawkube_no_such_grader_dependency', which is not installed"]


def test_validate_reports_missing_grader_requirements_and_templates(toy, capsys):
    plugin, root = toy
    assert cli_main(["validate", "--no-run", str(root)]) == 1
    out = capsys.readouterr().out
    assert "skipped" in out and "_template.toy.json" in out
    assert "PROBLEM  ToyBench graders need the Python module 'clawkube_no_such_grader_dependency'" in out
