"""WildClawBench as the benchmark's own runner runs it (internlm/WildClawBench, eval/run_batch.py).

- Tasks: load.py (the benchmark's task parser's rules; templates skipped; a task whose workspace is not downloaded
  loads and every trial of it is a setup error).
- Workspace: the agent and the grader see it at /tmp_workspace (the benchmark's container path); both have
  the agent's HOME with its skills at ~/skills (the container's /root/skills), and the workspace as handed over
  read-only at /app.
- Warmup: as root in the agent's sandbox; servers it leaves running stay up through grading, and the grader
  reaches them on its loopback (the graders query the mock services' audit endpoints).
- Grader: the task's `Automated Checks` run as upstream's grading script runs them (as `__main__`, `json` imported),
  called as `grade(transcript=<the OpenClaw session rows>, workspace_path=<the mount>)`; its result goes through
  JSON as upstream's does (printed, parsed back).
- Score: the grader's numeric fields (bools count, as in Python) are the criteria; the trial score is
  `overall_score` when numeric, else their mean (upstream's summary rule); non-numeric fields (judge reasons,
  methods, paths) are kept in the score's details and never fail grading; no numeric field at all is a grading
  error (upstream's summary counts that task as 0).
- Judge: graders that read OPENROUTER_API_KEY call an LLM judge; they get the run's `spec.judge` as
  OPENROUTER_API_KEY, OPENROUTER_BASE_URL and JUDGE_MODEL, and without one the trial is
  `grading_error: no judge configured`.
"""
from __future__ import annotations

import inspect
import json
import math
import os
from pathlib import Path
from typing import Any, Optional

from ...agents.transcript import read_jsonl
from ...contracts.grading import GradeRequest, GraderResult
from ...contracts.judge import Judge
from ...contracts.manifests import GradingManifest, TrialMounts
from ...results.model import Score
from ...services.evidence import Evidence
from ...tasks import markdown
from ...tasks.model import TaskLoadError, TaskSpec
from ..base import Benchmark, GradingError
from . import load as loader
from . import session

JUDGE_ENV_MARK = "OPENROUTER_API_KEY"  # a grader that reads this calls the judge
OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1"  # the benchmark's default judge endpoint (.env.example)


def split_fields(result: dict[str, Any]) -> GraderResult:
    """Numeric fields (int, float, bool; not NaN) -> scores, in the grader's order; everything else -> details."""
    scores: dict[str, float] = {}
    details: dict[str, Any] = {}
    for k, v in result.items():
        if isinstance(v, (int, float)) and not (isinstance(v, float) and math.isnan(v)):
            scores[str(k)] = float(v)
        else:
            details[str(k)] = v
    return GraderResult(scores=scores, details=details)


def final_score(scores: dict[str, float]) -> Optional[float]:
    """Upstream's per-task score: `overall_score`, else the mean of the numeric fields; None without any."""
    if not scores:
        return None
    if "overall_score" in scores:
        return scores["overall_score"]
    return sum(scores.values()) / len(scores)


class WildClawBench(Benchmark):
    name = loader.NAME
    title = "WildClawBench"
    detect_priority = 90  # every other Markdown task format is asked first: this one takes the rest
    workspace_mount = "/tmp_workspace"
    # The benchmark's container: skills in ~/skills (/root/skills, setup_skills), graders run there as the same
    # user (they look in Path.home()), exec/ mounted read-only at /app.
    trial_mounts = TrialMounts(skills_in_home="skills", grader_home=True, initial_workspace="/app")
    grader_requirements = ("openai",)  # the judge-calling graders import it
    criteria_in_unit_range = False  # graders also report counts (e.g. tool calls); upstream scores them as they are

    def detect(self, path: Path) -> bool:
        if path.suffix.lower() != ".md" or not path.is_file():
            return False
        if markdown.read_frontmatter(path) is not None:
            return True
        if path.name.lower() == "readme.md":
            return False
        raise TaskLoadError(path, "frontmatter", "Markdown file has no YAML frontmatter, so it is not a task "
                                                 "(only README.md files may lack one)")

    def is_template(self, path: Path) -> bool:
        return loader.is_template(path)

    def load(self, path: Path) -> TaskSpec:
        return loader.load(path)

    # --- judge ------------------------------------------------------------------------------------------------------
    def needs_judge(self, task: TaskSpec) -> bool:
        """The benchmark's graders read OPENROUTER_API_KEY; graders of this project's own format may instead
        require a `judge` argument (the default rule)."""
        return JUDGE_ENV_MARK in (task.grader.inline_code or "") or super().needs_judge(task)

    def judge_env(self, judge: Judge) -> dict[str, str]:
        return {"OPENROUTER_API_KEY": judge.api_key or "", "OPENROUTER_BASE_URL": judge.base_url or OPENROUTER_BASE_URL,
                "JUDGE_MODEL": judge.model}

    # --- grading process ----------------------------------------------------------------------------------------------
    def run_grader(self, req: GradeRequest, judge: Optional[Judge] = None) -> GraderResult:
        if judge is not None:
            os.environ.update(self.judge_env(judge))
        rows = session.to_session(read_jsonl(Path(req.transcript_path)), cwd=req.workspace_path)
        session_file = Path(req.output_path).with_name("openclaw_session.jsonl")
        session.write(rows, session_file)
        transcript = session.read(session_file)
        code = Path(req.grader_file).read_text(encoding="utf-8")
        namespace: dict[str, Any] = {"__name__": "__main__", "__file__": req.grader_file, "json": json,
                                     "_transcript": transcript}
        exec(compile(code, req.grader_file, "exec"), namespace)  # noqa: S102 - the task's grader, as upstream runs it
        grade = namespace.get(req.entry)
        if not callable(grade):
            raise AttributeError(f"grader defines no callable {req.entry}()")
        result = json.loads(json.dumps(grade(**self._grade_kwargs(grade, transcript, req, judge))))
        if not isinstance(result, dict):
            raise TypeError(f"grade() returned {type(result).__name__}, expected a dict")
        return split_fields(result)

    def _grade_kwargs(self, grade, transcript: list, req: GradeRequest, judge: Optional[Judge]) -> dict[str, Any]:
        """Upstream calls `grade(transcript=..., workspace_path=...)`: so do we for the benchmark's graders (they
        name both or take **kwargs). A grader of this project's own format gets the arguments it names."""
        params = inspect.signature(grade).parameters
        upstream = {"transcript": transcript, "workspace_path": req.workspace_path}
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
            return upstream
        more = {k: make for k, make in self.grader_kwargs(req, judge).items() if k in params and k not in upstream}
        return {**{k: v for k, v in upstream.items() if k in params}, **{k: make() for k, make in more.items()}}

    # --- score ---------------------------------------------------------------------------------------------------------
    def score(self, m: GradingManifest, raw: dict[str, float], evidence: Optional[Evidence]) -> Score:
        s = final_score(raw)
        if s is None:
            raise GradingError("grader returned no numeric field (the benchmark's summary counts this task as 0)")
        if not 0.0 <= s <= 1.0:
            raise GradingError(f"overall score {s} is outside 0..1")
        criteria = {k: v for k, v in raw.items() if k != "overall_score"}
        return Score(score=s, passed=s >= m.pass_threshold, criteria=criteria,
                     details={} if "overall_score" in raw else {"score_rule": "mean of numeric fields"})
