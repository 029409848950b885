"""EvoClawBench as a plugin: tasks read as the benchmark's runner reads them (load.py, taskfile.py), the
workspace it gives agents, its grading, and its three-mode metrics.

Workspace: the task's files at their own relative paths (`assets/<dir>/...`), an empty `outputs/`, and the skills
folder `skills/` inside the workspace (the authored skills in PreSkill/PostSkill executions; `skills/skill-creator`
seeded into the skill-writing phases, from `skills/skill-creator` beside the benchmark's folder).

Grading (in the grading process): the task's `grade(transcript, workspace_path)` is called as the runner calls it
(positionally), with the transcript in OpenClaw's session format (transcript.py); numbers (and booleans) it returns
are its criteria, anything else is ignored, a non-dict return is no criteria. Score by `grading_type`:
- automated: the mean of the criteria (0 without any);
- llm_judge: the judge's total (judge.py);
- hybrid:    (automated mean x w_a + judge total x w_j) / (w_a + w_j), with `grading_weights: {automated: w_a,
             llm_judge: w_j}` (each 0.5 when absent); criteria `automated.<k>` and `llm_judge.<k>`.
Sub-problem scores: the mean of each `sub_N_*` group of automated criteria (`sub_01_x` and `sub_1_y` are
sub-problem 1). The judge is the run's `spec.judge`; a task with a judge share and no judge configured is a grading
error that says so (the benchmark's runner would count the share as 0).

Run summary: the mean score and sub-problem means, and the benchmark's three-mode metrics under the field names of
its runner's results JSON (metrics.py): execution_only / end_to_end mean scores, ratios and efficiency
against baseline, PostSkill first/second pass, created skills, skill quality, skill mutation violations.
"""
from __future__ import annotations

import json
import re
from math import inf
from pathlib import Path
from statistics import mean as stat_mean
from typing import Any, Optional

from pydantic import BaseModel

from ...contracts.grading import GradeRequest, GraderResult
from ...contracts.judge import Judge
from ...contracts.manifests import GradingManifest
from ...results.grouping import graded, key_means, mode_of, score_of
from ...results.metrics import mean
from ...results.model import Score, TrialResult
from ...results.tables import num, table
from ...services.evidence import Evidence
from ...tasks import markdown
from ...tasks.model import TaskSpec
from ..base import Benchmark, GradingError, WorkspaceLayout, check_range
from . import load as loader
from . import metrics as mode_metrics
from . import protocol, taskfile
from .grading import AUTO, JUDGE, JUDGE_TOTAL

_SUB = re.compile(r"^sub_(\d+)_")
_KEYS = ("grading_type", "sub_problems")
JUDGE_TYPES = ("hybrid", "llm_judge")
SKILL_CREATOR = "skill-creator"


def sub_problem_means(criteria: dict[str, float]) -> dict[str, float]:
    groups: dict[int, list[float]] = {}
    for k, v in criteria.items():
        m = _SUB.match(k)
        if m:
            groups.setdefault(int(m.group(1)), []).append(v)
    return {f"sub_{i}": stat_mean(groups[i]) for i in sorted(groups)}


def _mean0(values: dict[str, float]) -> float:
    return sum(values.values()) / len(values) if values else 0.0


def _sub_order(name: str) -> tuple:
    n = name.removeprefix("sub_")
    return (int(n) if n.isdigit() else inf, name)


def skill_creator_for(task_path: Path) -> Optional[Path]:
    """`skills/skill-creator` beside the benchmark's folder (the repository layout the runner expects)."""
    found = taskfile.benchmark_root(task_path).parent / "skills" / SKILL_CREATOR
    return found if (found / "SKILL.md").is_file() else None


class EvoClawSummary(BaseModel):
    tasks: int
    trials_finished: int
    trials_graded: int
    mean_score: Optional[float]  # failed trials count 0
    sub_problems: dict[str, float]  # "sub_N" -> mean over the graded trials that report it
    modes: list[str] = []
    metrics: Optional[mode_metrics.ThreeModeMetrics] = None  # the runner's `metrics` block
    results: dict[str, dict[str, mode_metrics.TaskModeEntry]] = {}  # {mode: {task_id: entry}}


def trial_facts(r: TrialResult) -> mode_metrics.TrialFacts:
    d = r.score.details if r.score is not None else {}
    execution = d.get("execution_usage") or r.usage.model_dump()
    first = (d.get("first_run") or {}).get("score") or {}
    return mode_metrics.TrialFacts(
        task_id=r.task_id, mode=mode_of(r), score=score_of(r), execution_usage=mode_metrics.from_usage(execution),
        end_to_end_usage=mode_metrics.from_usage(r.usage.model_dump()),
        first_pass_score=first.get("score", 0.0) if mode_of(r) == "postskill" else None,
        skill_quality=float(d.get("skill_quality") or 0.0),
        skill_mutation_violation=bool(d.get("skill_mutation_violation")),
        created_skills=[s.get("name", "") for s in d.get("created_skills") or []])


_FRONT: dict[tuple[str, int, int], Optional[dict]] = {}
_TOP_KEY = re.compile(r"^(" + "|".join(_KEYS) + r")[ \t]*:", re.M)
_TOP_ID = re.compile(r"^id[ \t]*:[ \t]*(['\"]?)([A-Za-z0-9_.-]+)\1[ \t]*(?:#.*)?$", re.M)
_ANY_ID = re.compile(r"^['\"]?id['\"]?[ \t]*:", re.M)


def _quick(path: Path) -> Optional[tuple[bool, Optional[str]]]:
    """(does the frontmatter name an EvoClawBench key at the top level, its plain `id:` if it has exactly one)
    from the text alone, without parsing YAML: a run's selector passes over a whole corpus (100 files, 0.1 s
    of YAML) to find a few tasks. None when the text does not settle it (no frontmatter block, no key line):
    then the YAML decides, as it does for every file that is loaded."""
    text = markdown.read_text(path).lstrip("\ufeff")
    if not text.startswith("---"):
        return None
    end = re.search(r"^(---|\.\.\.)[ \t]*$", text[3:], re.M)
    if text[:4].strip() != "---" or end is None:
        return None
    front = text[3:3 + end.start()]
    if not _TOP_KEY.search(front):
        return None
    ids = _TOP_ID.findall(front)
    return True, ids[0][1] if len(ids) == 1 and len(_ANY_ID.findall(front)) == 1 else None


def _frontmatter(path: Path) -> Optional[dict]:
    """A file's frontmatter, read once per version of the file (detect and task_id both need it while a run's
    selector passes over a corpus)."""
    st = path.stat()
    key = (str(path), st.st_mtime_ns, st.st_size)
    if key not in _FRONT:
        if len(_FRONT) > 4096:
            _FRONT.clear()
        _FRONT[key] = markdown.read_frontmatter(path)
    return _FRONT[key]


class EvoClawBench(Benchmark):
    name = loader.NAME
    title = "EvoClawBench"
    detect_priority = 10
    grader_requirements = ("openpyxl", "docx", "yaml")  # task_09 (Excel), task_12 (Word), task_20 (YAML)
    grader_packages = {"docx": "python-docx", "yaml": "pyyaml"}
    criteria_in_unit_range = False  # checked in `score`: a judge may score its own criteria on another scale
    light_grader = "clawkube.benchmarks.evoclaw.grading"  # the grading process's fast path (no pydantic)
    summary_model = EvoClawSummary

    # --- tasks -----------------------------------------------------------------------------------------------------
    def detect(self, path: Path) -> bool:
        if path.suffix.lower() != ".md" or not path.is_file():
            return False
        if _quick(path) is not None:
            return True
        front = _frontmatter(path)
        return front is not None and any(k in front for k in _KEYS)

    def is_template(self, path: Path) -> bool:
        """`TASK_TEMPLATE.md` (the benchmark's runner loads only `task_*.md`)."""
        return "template" in path.stem.lower()

    def task_id(self, path: Path) -> Optional[str]:
        quick = _quick(path)
        if quick is not None and quick[1] is not None:
            return quick[1]
        front = _frontmatter(path)
        value = front.get("id") if front else None
        return value if isinstance(value, str) else None

    def load(self, path: Path) -> TaskSpec:
        return loader.load(path)

    # --- workspace and agent side -------------------------------------------------------------------------------------
    def workspace_layout(self, task: TaskSpec) -> WorkspaceLayout:
        return WorkspaceLayout(mount=self.workspace_mount, agent_files=list(task.workspace),
                               grading_files=list(task.grading_files), dirs=[protocol.OUTPUTS_DIR],
                               skills_path=protocol.SKILLS_DIR)

    def authoring_skills(self, task: TaskSpec) -> list[Path]:
        found = skill_creator_for(task.source_path)
        return [found] if found is not None else []

    def agent_data(self, task: TaskSpec) -> dict[str, Any]:
        """What the PostSkill summary phase's first-run context says of the task (the runner shows it too)."""
        return {"task_name": task.name, "expected_behavior": task.expected_behavior,
                "grading_criteria": taskfile.criteria_lines(task.grading_criteria), "grading_type": task.grading_type}

    def grading_data(self, task: TaskSpec) -> dict[str, Any]:
        return {"grading_type": task.grading_type,
                "judge": {"prompt": task.prompt, "expected_behavior": task.expected_behavior,
                          "rubric": task.judge_rubric, "workspace_files": [m.dest for m in task.workspace]}}

    def phase_prompt(self, phase: str, prompt: str) -> str:
        return protocol.phase_prompt(phase, prompt)  # every phase, baseline included, as the runner does

    def needs_judge(self, task: TaskSpec) -> bool:
        return task.grading_type in JUDGE_TYPES

    # --- grading process ------------------------------------------------------------------------------------------------
    def run_grader(self, req: GradeRequest, judge: Optional[Judge]) -> GraderResult:
        """Criteria (and the judge's verdict) as numbers; `grading_type` and the judge's `notes` as details
        (grading.py, which the grading process also runs directly: `light_grader`)."""
        from . import grading

        return GraderResult(**grading.run(req.model_dump(), judge))

    # --- score -------------------------------------------------------------------------------------------------------
    def score(self, m: GradingManifest, raw: dict[str, float], evidence: Optional[Evidence]) -> Score:
        # the grader's criteria and the judge's total must lie in 0..1; the judge's own per-criterion scores are
        # kept as it gave them (the runner reads only its total)
        check_range({k: v for k, v in raw.items() if not k.startswith(JUDGE) or k == JUDGE_TOTAL})
        kind = m.benchmark_data.get("grading_type", "automated")
        details: dict[str, Any] = {"grading_type": kind}
        if kind == "automated":
            s, criteria, subs = _mean0(raw), dict(raw), sub_problem_means(raw)
        else:
            if JUDGE_TOTAL not in raw:
                raise GradingError(f"a {kind} task's grading gave no judge verdict ({JUDGE_TOTAL})")
            verdict = raw[JUDGE_TOTAL]
            details["judge_score"] = verdict
            if kind == "llm_judge":
                s = verdict
                criteria = {k[len(JUDGE):]: v for k, v in raw.items() if k.startswith(JUDGE) and k != JUDGE_TOTAL}
                subs = {}
            else:
                auto = {k[len(AUTO):]: v for k, v in raw.items() if k.startswith(AUTO)}
                w = m.grading_weights or {"automated": 0.5, "llm_judge": 0.5}
                wa, wj = float(w.get("automated", 0.5)), float(w.get("llm_judge", 0.5))
                if wa + wj <= 0:
                    wa = wj = 0.5
                details["automated_score"] = _mean0(auto)
                s = (details["automated_score"] * wa + verdict * wj) / (wa + wj)
                criteria = {k: v for k, v in raw.items() if k != JUDGE_TOTAL}
                subs = sub_problem_means(auto)
        return Score(score=s, passed=s >= m.pass_threshold, criteria=criteria, sub_problems=subs, details=details)

    # --- run summary ---------------------------------------------------------------------------------------------------
    def summarize(self, seen: list[TrialResult], finished: list[TrialResult]) -> Optional[EvoClawSummary]:
        good = graded(finished)
        modes = sorted({mode_of(r) for r in finished}, key=lambda m: mode_metrics.MODES.index(m)
                       if m in mode_metrics.MODES else 99)
        facts = [trial_facts(r) for r in finished]
        return EvoClawSummary(
            tasks=len({r.task_id for r in seen}), trials_finished=len(finished), trials_graded=len(good),
            mean_score=mean(score_of(r) for r in finished),
            sub_problems=key_means((r.score.sub_problems for r in good), _sub_order), modes=modes,
            metrics=mode_metrics.three_mode_metrics(facts) if facts else None,
            results=mode_metrics.task_entries(facts))

    def report_lines(self, section: dict[str, Any]) -> list[str]:
        e = EvoClawSummary.model_validate(section)
        lines = [f"EvoClawBench: {e.tasks} tasks, {e.trials_finished} trials finished, {e.trials_graded} graded; "
                 f"mean score {num(e.mean_score)}"]
        if e.sub_problems:
            lines += table(["sub-problem", "mean"], [[s, num(v)] for s, v in e.sub_problems.items()])
        if e.metrics is not None and len(e.modes) > 1:
            x, ee = e.metrics.execution_only, e.metrics.end_to_end
            rows = []
            for mode in mode_metrics.MODES:
                if mode not in e.modes:
                    continue
                ratio = "-" if mode == "baseline" else str(x.ratios_vs_baseline.get(mode))
                rows.append([mode, num(x.mean_scores[mode]), ratio, str(x.usage[mode].total_tokens),
                             str(ee.usage[mode].total_tokens), f"{x.usage[mode].total_execution_time_seconds:.1f}",
                             f"{ee.usage[mode].total_execution_time_seconds:.1f}"])
            lines += table(["mode", "mean score", "vs baseline", "tokens (exec)", "tokens (e2e)", "time s (exec)",
                            "time s (e2e)"], rows)
            if "postskill" in e.modes:
                p = e.metrics.postskill
                lines.append(f"PostSkill: first pass {num(p.first_pass_mean)}, second pass {num(p.second_pass_mean)} "
                             f"(delta {p.second_vs_first_delta:+.4f}, ratio {p.second_vs_first_ratio})")
            v = e.metrics.skill_mutation_violations
            lines.append(f"skills created: preskill {e.metrics.created_skills.get('preskill_count', 0)}, postskill "
                         f"{e.metrics.created_skills.get('postskill_count', 0)}; skill mutation violations: "
                         f"preskill {v.get('preskill', 0)}, postskill {v.get('postskill', 0)}")
        return lines
