"""The PostSkill summary phase's view of the first run: `.evoclawbench/first_run_context.json`, as EvoClawBench's
runner writes it.

Fields: task_id, task_name, prompt, expected_behavior, grading_criteria (the criteria lines), grade (score,
max_score, grading_type, breakdown, notes, sub_problem_scores), outputs (the first 40 files under `outputs/`:
path, size, the first 1000 characters), transcript_summary (the first 12 non-empty messages as "role: text",
600 characters each). Built from the first run's agent-side artifacts (its workspace snapshot and transcript)
and its score, the same way locally and in the cluster's summary pod.
Deliberate difference: when grading failed, the benchmark's runner puts the grader's exception text in the notes;
here they say only "Grading failed" (an exception message can quote ground truth).
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Optional

from pydantic import BaseModel, Field

MAX_OUTPUTS = 40
PREVIEW_CHARS = 1000
MAX_MESSAGES = 12
MESSAGE_CHARS = 600
GRADING_FAILED = "Grading failed"
_CRITERION = re.compile(r"^-\s+\[[ x]\]\s+(.+)$")


class TaskFacts(BaseModel):
    """What the context says of the task (from the agent bundle)."""

    task_id: str
    task_name: str
    prompt: str
    expected_behavior: str = ""
    grading_criteria: list[str] = Field(default_factory=list)
    grading_type: str = "automated"


def criteria_lines(text: str) -> list[str]:
    """The `- [ ] criterion` lines of a Grading Criteria section."""
    return [m.group(1) for line in text.splitlines() if (m := _CRITERION.match(line.strip()))]


def grade_record(task: TaskFacts, score: Optional[dict[str, Any]]) -> dict[str, Any]:
    """The first run's grade as the runner records it; `score` is a Score dump (None: grading failed)."""
    if score is None:
        return {"task_id": task.task_id, "score": 0.0, "max_score": 1.0, "grading_type": task.grading_type,
                "breakdown": {}, "notes": GRADING_FAILED, "sub_problem_scores": []}
    details = score.get("details") or {}
    fields = details.get("grader_fields") or {}  # what the grading kept besides numbers (the judge's notes)
    subs = score.get("sub_problems") or {}
    return {"task_id": task.task_id, "score": score.get("score", 0.0), "max_score": 1.0,
            "grading_type": details.get("grading_type", task.grading_type),
            "breakdown": dict(score.get("criteria") or {}), "notes": fields.get("notes", ""),
            "sub_problem_scores": [subs[k] for k in sorted(subs, key=lambda k: int(k.split("_")[-1]))]}


def output_summaries(workspace: Path) -> list[dict[str, Any]]:
    outputs = workspace / "outputs"
    if not outputs.is_dir() or outputs.is_symlink():
        return []
    items: list[dict[str, Any]] = []
    for p in sorted(q for q in outputs.rglob("*") if q.is_file() and not q.is_symlink())[:MAX_OUTPUTS]:
        item: dict[str, Any] = {"path": p.relative_to(workspace).as_posix(), "size_bytes": p.stat().st_size}
        try:
            item["content_preview"] = p.read_text(encoding="utf-8", errors="ignore")[:PREVIEW_CHARS]
        except OSError as e:
            item["error"] = str(e)
        items.append(item)
    return items


def transcript_lines(records: list[dict[str, Any]]) -> list[str]:
    """OpenClaw-format records -> "role: text" lines."""
    lines: list[str] = []
    for rec in records:
        if rec.get("type") != "message":
            continue
        msg = rec.get("message") or {}
        content = msg.get("content", "")
        if isinstance(content, list):
            text = " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
        else:
            text = str(content)
        text = " ".join(text.split())
        if text:
            lines.append(f"{msg.get('role', 'unknown')}: {text[:MESSAGE_CHARS]}")
        if len(lines) >= MAX_MESSAGES:
            break
    return lines


def context(task: TaskFacts, score: Optional[dict[str, Any]], workspace: Path,
            records: list[dict[str, Any]]) -> dict[str, Any]:
    return {"task_id": task.task_id, "task_name": task.task_name, "prompt": task.prompt,
            "expected_behavior": task.expected_behavior, "grading_criteria": list(task.grading_criteria),
            "grade": grade_record(task, score), "outputs": output_summaries(workspace),
            "transcript_summary": transcript_lines(records)}


def write(path: Path, payload: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, ensure_ascii=False), encoding="utf-8")
