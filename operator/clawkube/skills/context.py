"""The compact first-run context the PostSkill summary phase sees (pure, size-bounded).

It holds: the grade summary (score, pass, dimensions/criteria; or the error), previews of the files the
first run added or modified, and a transcript summary (tool-call count, the last commands, error events,
the final message). Never grader code or ground truth: of a grading failure it says only that there is no
score (a grader's error message can quote ground truth). Built from the first run's agent-side artifacts
(transcript.jsonl, workspace.tar.gz, workspace.diff.json), the same way locally and in the summary pod.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

from ..agents.transcript import as_dicts, read_jsonl
from ..lifecycle import workspace as workspaces
from ..results.model import Score

PREVIEW_FILES = 6
PREVIEW_CHARS = 400
LAST_CALLS = 8
CALL_CHARS = 240
LIMIT = 8000
GRADING_FAILED = "the grader gave no score"


def _clip(text: str, n: int) -> str:
    text = text.strip()
    return text if len(text) <= n else text[:n] + f"... [{len(text) - n} more chars]"


def grade_summary(score: Optional[Score], error: Optional[str]) -> str:
    if score is None:
        return f"Outcome: not graded ({error or 'unknown error'})."
    lines = [f"Outcome: score {score.score:.3f}, {'passed' if score.passed else 'not passed'}."]
    if error:
        lines.append(f"Agent problem: {_clip(error, 300)}")
    for title, values in (("Dimensions", score.dimensions), ("Criteria", score.criteria)):
        if values:
            lines.append(f"{title}: " + ", ".join(f"{k}={v:.2f}" for k, v in sorted(values.items())))
    return "\n".join(lines)


def output_previews(workspace: Path, diff: dict[str, list[str]]) -> str:
    names = [*diff.get("added", []), *diff.get("modified", [])]
    if not names:
        return "Files: the first run added or modified no file."
    lines = [f"Files added: {', '.join(diff.get('added', [])) or '-'}; modified: "
             f"{', '.join(diff.get('modified', [])) or '-'}; deleted: {', '.join(diff.get('deleted', [])) or '-'}"]
    for name in names[:PREVIEW_FILES]:
        p = workspace / name
        if p.is_file() and not p.is_symlink():
            lines.append(f"--- {name} (first {PREVIEW_CHARS} chars)\n{_clip(p.read_text(errors='replace'), PREVIEW_CHARS)}")
    return "\n".join(lines)


def transcript_summary(events: list[dict]) -> str:
    calls = [e for e in events if e.get("type") == "tool_call"]
    errors = [e for e in events if e.get("type") == "error"]
    finals = [e for e in events if e.get("type") == "message" and e.get("role") == "assistant" and e.get("content")]
    lines = [f"Transcript: {len(calls)} tool call(s), {len(errors)} error event(s)."]
    for e in calls[-LAST_CALLS:]:
        args = e.get("arguments") or {}
        shown = args.get("command") if isinstance(args.get("command"), str) else json.dumps(args, ensure_ascii=False)
        lines.append(f"- {e.get('tool') or 'tool'}: {_clip(shown, CALL_CHARS)}")
    for e in errors[-3:]:
        lines.append(f"! error: {_clip(str(e.get('content') or ''), CALL_CHARS)}")
    if finals:
        lines.append(f"Final message: {_clip(str(finals[-1]['content']), 600)}")
    return "\n".join(lines)


def first_run_context(score: Optional[Score], error: Optional[str], workspace: Path, diff: dict[str, list[str]],
                      events: list[dict]) -> str:
    text = "\n\n".join([grade_summary(score, error), output_previews(workspace, diff), transcript_summary(events)])
    return _clip(text, LIMIT)


def problem(agent_error: Optional[str], grading_error: Optional[str]) -> Optional[str]:
    """What the summary phase is told of the first run's problems: the agent's own error, else whether grading
    failed (never the grader's message)."""
    return agent_error or (GRADING_FAILED if grading_error else None)


def context_from_artifacts(artifacts: Path, score: Optional[Score], agent_error: Optional[str],
                           grading_error: Optional[str], scratch: Path) -> str:
    """The context from a first run's agent artifacts folder; its workspace snapshot is restored under scratch."""
    ws = scratch / "first_run_workspace"
    snapshot = artifacts / "workspace.tar.gz"
    if snapshot.is_file():
        workspaces.restore(snapshot, ws)
    diff_file = artifacts / "workspace.diff.json"
    diff = json.loads(diff_file.read_text()) if diff_file.is_file() else {}
    tf = artifacts / "transcript.jsonl"
    events = as_dicts(read_jsonl(tf)) if tf.is_file() else []
    return first_run_context(score, problem(agent_error, grading_error), ws, diff, events)
