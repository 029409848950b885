"""EvoClawBench's LLM judge, inside the grading process (`llm_judge` and `hybrid` tasks).

The prompt, the transcript summary, the agent-output context and the reading of the verdict follow the benchmark's
runner: the judge sees the task prompt, the expected behaviour, the agent's `outputs/*.json` (first 10, 3000
characters each) and text sources among the task's workspace files, a summary of the transcript (tool calls, tool
results, user messages), and the rubric (the task's `LLM Judge Rubric`, else its grading criteria), and answers
`{"scores": {...}, "total": x, "notes": "..."}`. One chat-completions request at temperature 0 to the run's judge
(`spec.judge`: an OpenAI-compatible base URL, model, key); transient failures (5xx, timeouts, rate limits) are
retried after 15, 30, 60 and 90 s as the runner does.

Deliberate difference: the benchmark's runner scores a judge it cannot reach as 0 for the judge's share; here an
unreachable judge (or none configured) is a grading error that says so. A judge that answers but not with JSON
gets 0, as in the benchmark.
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Protocol

DEFAULT_BASE_URL = "https://api.openai.com/v1"  # a judge without a base URL: OpenAI's API

RETRY_DELAYS = (15.0, 30.0, 60.0, 90.0)
CALL_TIMEOUT = 180.0
_TRANSIENT = ("502", "503", "504", "timeout", "timed out", "temporarily", "rate limit", "quota", "upstream_error",
              "429")


class Judge(Protocol):
    """The run's judge in the grading process (contracts.judge.Judge has these; this module imports no pydantic,
    so the grading process starts fast)."""

    model: str
    base_url: Optional[str]
    api_key: Optional[str]


class JudgeUnavailable(Exception):
    """The judge could not be asked (not configured, unreachable, HTTP error after the retries)."""


@dataclass(frozen=True)
class JudgeTask:
    """The task's parts the judge prompt is made of (in the grading manifest)."""

    prompt: str
    expected_behavior: str = ""
    rubric: str = ""  # the `LLM Judge Rubric` section, else "- criterion" lines of the grading criteria
    workspace_files: list[str] = field(default_factory=list)  # the task's workspace_files entries (paths)


@dataclass(frozen=True)
class Verdict:
    score: float
    breakdown: dict[str, float]
    notes: str


# --- the prompt -----------------------------------------------------------------------------------------------------

def transcript_summary(records: list[dict[str, Any]]) -> str:
    """Tool calls, tool results (first 200 characters of the first content block) and user messages."""
    parts: list[str] = []
    for rec in records:
        if rec.get("type") != "message":
            continue
        msg = rec.get("message") or {}
        role = msg.get("role")
        content = msg.get("content") or []
        if role == "assistant":
            for item in content if isinstance(content, list) else []:
                if isinstance(item, dict) and item.get("type") == "toolCall":
                    parts.append(f"Tool: {item.get('name')}({json.dumps(item.get('arguments', {}))})")
        elif role == "toolResult" and content:
            parts.append(f"Result: {str(content[0])[:200]}")
        elif role == "user" and content:
            parts.append(f"User: {content[0]}")
    return "\n".join(parts)


def workspace_context(task: JudgeTask, workspace: Path, per_file: int = 3000) -> str:
    parts: list[str] = []
    outputs = workspace / "outputs"
    if outputs.exists():
        for f in sorted(outputs.glob("*.json"))[:10]:
            try:
                parts.append(f"--- Output: {f.name} ---\n{f.read_text(encoding='utf-8', errors='replace')[:per_file]}")
            except OSError:
                pass
    budget = per_file
    sources = [w for w in task.workspace_files if w.endswith((".txt", ".py", ".js", ".go"))]
    for rel in sources[:5]:
        src = workspace / rel
        if src.exists():
            try:
                text = src.read_text(encoding="utf-8", errors="replace")[:budget]
            except OSError:
                continue
            parts.append(f"--- Source: {rel} ---\n{text}")
            budget = max(500, budget - len(text) // 2)
    return "\n\n".join(parts)


def prompt(task: JudgeTask, summary: str, context: str) -> str:
    files = f"## Agent Output Files\n{context}\n\n" if context else ""
    return (
        "You are a grading function. Your ONLY job is to output a single JSON object.\n\n"
        "CRITICAL RULES:\n"
        "- Do NOT use any tools\n"
        "- Respond with ONLY a JSON object \u2014 nothing else\n\n"
        "Be a strict evaluator. Reserve 1.0 for genuinely excellent performance. "
        "An average acceptable completion should score around 0.6-0.7.\n\n"
        f"## Task\n{task.prompt}\n\n"
        f"## Expected Behavior\n{task.expected_behavior}\n\n"
        f"{files}"
        f"## Agent Transcript (summarized)\n{summary}\n\n"
        f"## Grading Rubric\n{task.rubric}\n\n"
        "Score each criterion from 0.0 to 1.0.\n\n"
        "Respond with ONLY this JSON structure (no markdown, no code fences):\n"
        '{"scores": {"criterion_name": 0.0}, "total": 0.0, "notes": "brief justification"}'
    )


# --- the verdict ----------------------------------------------------------------------------------------------------

def _numeric_mean(values: dict[str, Any]) -> float:
    nums = [float(v) for v in values.values() if isinstance(v, (int, float))]
    return sum(nums) / len(nums) if nums else 0.0


def parse_reply(text: str) -> dict[str, Any]:
    """The judge's reply as a flat dict of criteria plus `total` / `notes` when given."""
    text = text.strip()
    if text.startswith("```"):
        lines = text.splitlines()
        text = "\n".join(lines[1:-1] if lines[-1].strip() == "```" else lines[1:])
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        m = re.search(r"\{.*\}", text, re.S)
        try:
            parsed = json.loads(m.group()) if m else None
        except json.JSONDecodeError:
            parsed = None
        if parsed is None:
            return {"total": 0.0, "notes": "unparseable response"}
    if not isinstance(parsed, dict):
        return {"total": 0.0, "notes": "unexpected response type"}
    flat: dict[str, Any] = {}
    if isinstance(parsed.get("scores"), dict):
        flat.update(parsed["scores"])
    else:
        flat.update({k: v for k, v in parsed.items() if k not in ("total", "notes")})
    for k in ("total", "notes"):
        if k in parsed:
            flat[k] = parsed[k]
    return flat


def numeric_breakdown(values: dict[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for k, v in values.items():
        try:
            out[str(k)] = float(v)
        except (TypeError, ValueError):
            continue
    return out


def verdict(reply: str) -> Verdict:
    flat = parse_reply(reply)
    default = _numeric_mean(flat)
    try:
        total = float(flat.pop("total", default))
    except (TypeError, ValueError) as e:
        return Verdict(score=0.0, breakdown={}, notes=f"LLM judge failed: {e}")
    notes = str(flat.pop("notes", ""))
    return Verdict(score=max(0.0, min(1.0, total)), breakdown=numeric_breakdown(flat), notes=notes)


# --- the call -------------------------------------------------------------------------------------------------------

def transient(message: str) -> bool:
    low = message.lower()
    return any(m in low for m in _TRANSIENT)


def chat(cfg: Judge, text: str, timeout: float = CALL_TIMEOUT) -> str:
    """One chat-completions request; the reply's text. Raises JudgeUnavailable."""
    import urllib.error  # here, not at the top: the grading process of an automated task never loads urllib/http
    import urllib.request
    url = (cfg.base_url or DEFAULT_BASE_URL).rstrip("/") + "/chat/completions"
    body = json.dumps({"model": cfg.model, "messages": [{"role": "user", "content": text}],
                       "temperature": 0.0}).encode()
    headers = {"Content-Type": "application/json"}
    if cfg.api_key:
        headers["Authorization"] = f"Bearer {cfg.api_key}"
    req = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            data = json.loads(r.read().decode("utf-8", errors="replace"))
    except urllib.error.HTTPError as e:
        detail = e.read().decode("utf-8", errors="replace")[:300]
        raise JudgeUnavailable(f"judge {url} answered HTTP {e.code}: {detail}") from None
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise JudgeUnavailable(f"judge {url}: {e}") from None
    try:
        return data["choices"][0]["message"].get("content") or ""
    except (KeyError, IndexError, TypeError, AttributeError):
        raise JudgeUnavailable(f"judge {url}: no choices[0].message in the reply") from None


def ask(cfg: Optional[Judge], text: str, delays: tuple[float, ...] = RETRY_DELAYS,
        sleep: Callable[[float], None] = time.sleep) -> str:
    if cfg is None:
        raise JudgeUnavailable("no judge configured (spec.judge): this task's score has an LLM-judge share")
    for attempt in range(len(delays) + 1):
        try:
            return chat(cfg, text)
        except JudgeUnavailable as e:
            if attempt == len(delays) or not transient(str(e)):
                raise
            sleep(delays[attempt])
    raise AssertionError("unreachable")


def judge(cfg: Optional[Judge], task: JudgeTask, records: list[dict[str, Any]], workspace: Optional[Path],
          **kw: Any) -> Verdict:
    """Ask the judge about one trial (records: the OpenClaw-format transcript). Raises JudgeUnavailable."""
    context = workspace_context(task, workspace) if workspace else ""
    return verdict(ask(cfg, prompt(task, transcript_summary(records), context), **kw))
