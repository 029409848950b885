"""EvoClawBench's grading inside the grading process, on the standard library only (no pydantic, no registry):
the process starts in a fraction of the time the general path takes, which is most of a trial's overhead.

`run(request, judge)` takes the grading request as a dict (contracts.grading.GradeRequest's fields) and returns
{"scores": {...}, "details": {...}} (contracts.grading.GraderResult's fields); `main` is the process entry the
general grader entry point (lifecycle/grader_main.py) hands a request to when the plugin names this module
(`Benchmark.light_grader`). What it computes is the plugin's `run_grader` (plugin.py calls `run` too):
- the task's `grade(transcript, workspace_path)` called positionally, as the benchmark's runner calls it, with the
  transcript in OpenClaw's session format (transcript.py); numbers and booleans of a dict it returns are the
  criteria, anything else is ignored (a non-dict: no criteria);
- `hybrid` / `llm_judge` tasks: the judge's verdict (judge.py) as `llm_judge.<criterion>` and `llm_judge.total`,
  a hybrid task's own criteria as `automated.<criterion>`; details: `grading_type` and the judge's `notes`.
"""
from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path
from .transcript import to_openclaw

TYPE_CHECKING = False  # (typing's, without importing typing: this process starts once per trial)
if TYPE_CHECKING:
    from typing import Any, Optional

    from . import judge as judging

KEY_ENV = "CLAWKUBE_JUDGE_API_KEY"  # contracts.judge.KEY_ENV (a test keeps them equal)
AUTO, JUDGE = "automated.", "llm_judge."
JUDGE_TOTAL = "llm_judge.total"  # the judge's overall verdict (never a criterion: the runner takes it out)


class _Judge:
    def __init__(self, model: str, base_url: Optional[str], api_key: Optional[str]):
        self.model, self.base_url, self.api_key = model, base_url, api_key


def numeric_criteria(out: Any) -> dict[str, float]:
    """A grader's return value as the runner reads it: numbers and booleans of a dict; anything else ignored."""
    if not isinstance(out, dict):
        return {}
    return {str(k): float(v) for k, v in out.items() if isinstance(v, (int, float))}


def read_events(path: Path) -> list[dict[str, Any]]:
    """The normalised transcript (agents/transcript.py writes one event per line, defaults included)."""
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def load_grader(path: str, entry: str):
    spec = importlib.util.spec_from_file_location("clawkube_task_grader", path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(Path(path).parent))
    spec.loader.exec_module(module)
    fn = getattr(module, entry, None)
    if not callable(fn):
        raise AttributeError(f"grader defines no callable {entry}()")
    return fn


def run(req: dict[str, Any], judge: Optional[judging.Judge]) -> dict[str, Any]:
    data = json.loads(Path(req["task_manifest_path"]).read_text()).get("benchmark_data") or {}
    kind = data.get("grading_type", "automated")
    records = to_openclaw(read_events(Path(req["transcript_path"])))
    auto: dict[str, float] = {}
    if kind != "llm_judge" or Path(req["grader_file"]).read_text().strip():
        fn = load_grader(req["grader_file"], req.get("entry", "grade"))
        auto = numeric_criteria(fn(records, req["workspace_path"]))
    details: dict[str, Any] = {"grading_type": kind, "notes": ""}
    if kind == "automated":
        return {"scores": auto, "details": details}
    from . import judge as judging  # only a judged task's grading loads it (dataclasses, inspect: ~10 ms)

    verdict = judging.judge(judge, judging.JudgeTask(**data.get("judge", {})), records, Path(req["workspace_path"]))
    details["notes"] = verdict.notes
    raw = {f"{JUDGE}{k}": v for k, v in verdict.breakdown.items()}
    raw[JUDGE_TOTAL] = verdict.score
    if kind == "hybrid":
        raw.update({f"{AUTO}{k}": v for k, v in auto.items()})
    return {"scores": raw, "details": details}


def main(req: dict[str, Any]) -> int:
    """The grading process for one request: writes the GradeOutput JSON to the request's output path."""
    j = req.get("judge")
    judge = None if not j else _Judge(j["model"], j.get("base_url"), os.environ.get(KEY_ENV))
    try:
        out = {"ok": True, **run(req, judge)}
    except BaseException as e:  # the grader's own failure, reported, never a score
        import traceback

        out = {"ok": False, "error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}
        print(out["traceback"], file=sys.stderr)
    Path(req["output_path"]).write_text(json.dumps(out))
    return 0 if out["ok"] else 1
