"""An EvoClawBench task file read as the benchmark's runner reads it, so that agents, graders and the judge get
the very same text.

- Frontmatter: the YAML between a first `---` line and the next `---` line.
- Sections: each `## Title` line starts one, up to the next `## ` line; its text is stripped of surrounding
  blank lines but otherwise kept as written (including `---` rules and `###` sub-headings inside it). The prompt
  the agent gets is the `Prompt` section's text.
- `Grading Criteria`: the `- [ ] criterion` lines. `Sub-Problems`: `### Sub-Problem N: title` headings.
- `Automated Checks`: the first ```python block (`grade(transcript, workspace_path) -> dict`).
- Workspace files: a plain entry `assets/x/y.csv` is copied from the benchmark's root (the folder above `tasks/`)
  to the same relative path in the workspace; `{source|src, dest|dst}` copies to dest (default: the source path).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Optional

import yaml
from pydantic import BaseModel, Field

from ...tasks.model import TaskLoadError

_FRONT = re.compile(r"^---\s*\n(.*?)\n---\s*\n(.*)$", re.S)
_HEADER = re.compile(r"^##\s+(.+)$")
_CRITERION = re.compile(r"^-\s+\[[ x]\]\s+(.+)$")
SUB_HEADING = re.compile(r"^###\s+Sub-Problem\s+(\d+):\s*(.+)$")
_CODE = re.compile(r"```python\s*(.*?)\s*```", re.S)
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class SubProblemText(BaseModel):
    index: int
    title: str
    description: str = ""


class TaskFile(BaseModel):
    path: Path
    frontmatter: dict[str, Any]
    sections: dict[str, str]
    sub_problems: list[SubProblemText] = Field(default_factory=list)

    def section(self, title: str) -> Optional[str]:
        return self.sections.get(title)

    @property
    def prompt(self) -> str:
        return self.sections.get("Prompt", "").strip()

    @property
    def criteria(self) -> list[str]:
        return criteria_lines(self.sections.get("Grading Criteria", ""))

    @property
    def grader_code(self) -> str:
        checks = self.sections.get("Automated Checks")
        m = _CODE.search(checks) if checks else None
        return m.group(1) if m else ""

    @property
    def judge_rubric(self) -> str:
        """What the judge is given as the rubric: the `LLM Judge Rubric` section, else the criteria as a list."""
        rubric = self.sections.get("LLM Judge Rubric")
        if rubric is not None:
            return rubric
        return "\n".join(f"- {c}" for c in self.criteria)


def criteria_lines(text: str) -> list[str]:
    return [m.group(1) for line in text.split("\n") if (m := _CRITERION.match(line.strip()))]


def read_frontmatter(text: str) -> Optional[dict[str, Any]]:
    """The frontmatter mapping, or None when the text has none (not an error: the file is not a task)."""
    m = _FRONT.match(text)
    if not m:
        return None
    try:
        data = yaml.load(m.group(1), Loader=_Loader)
    except yaml.YAMLError:
        return None
    return data if isinstance(data, dict) else None


def sections(body: str) -> dict[str, str]:
    found: dict[str, str] = {}
    title: Optional[str] = None
    lines: list[str] = []
    for line in body.split("\n"):
        h = _HEADER.match(line)
        if h:
            if title is not None:
                found[title] = "\n".join(lines).strip()
            title, lines = h.group(1), []
        elif title is not None:
            lines.append(line)
    if title is not None:
        found[title] = "\n".join(lines).strip()
    return found


def sub_problems(text: str) -> list[SubProblemText]:
    found: list[SubProblemText] = []
    title: Optional[str] = None
    index = 0
    lines: list[str] = []
    for line in text.split("\n"):
        h = SUB_HEADING.match(line)
        if h:
            if title is not None:
                found.append(SubProblemText(index=index, title=title, description="\n".join(lines).strip()))
            index, title, lines = int(h.group(1)), h.group(2).strip(), []
        else:
            lines.append(line)
    if title is not None:
        found.append(SubProblemText(index=index, title=title, description="\n".join(lines).strip()))
    return found


def read(path: Path) -> TaskFile:
    text = path.read_text(encoding="utf-8")
    m = _FRONT.match(text)
    if not m:
        raise TaskLoadError(path, "frontmatter", "no YAML frontmatter (a first line '---', then YAML, then '---')")
    try:
        front = yaml.load(m.group(1), Loader=_Loader)
    except yaml.YAMLError as e:
        raise TaskLoadError(path, "frontmatter", f"invalid YAML: {e}") from None
    if not isinstance(front, dict):
        raise TaskLoadError(path, "frontmatter", f"must be a mapping, got {type(front).__name__}")
    secs = sections(m.group(2))
    return TaskFile(path=path, frontmatter=front, sections=secs, sub_problems=sub_problems(secs.get("Sub-Problems", "")))


def benchmark_root(task_path: Path) -> Path:
    """The folder workspace files are named from: the one above `tasks/` (the benchmark's repository layout)."""
    return task_path.resolve().parent.parent


def workspace_entry(entry: Any, path: Path, field: str) -> tuple[str, str]:
    """(source relative to the benchmark root, destination relative to the workspace)."""
    if isinstance(entry, str):
        src, dest = entry, entry
    elif isinstance(entry, dict):
        if "content" in entry:
            raise TaskLoadError(path, field, "inline 'content' entries are not supported: put the file on disk")
        src = entry.get("source", entry.get("src", ""))
        dest = entry.get("dest", entry.get("dst", src))
    else:
        raise TaskLoadError(path, field, f"entry must be a path or a mapping, got {type(entry).__name__}")
    if not isinstance(src, str) or not src.strip() or not isinstance(dest, str) or not dest.strip():
        raise TaskLoadError(path, field, f"needs a source and destination path, got {entry!r}")
    return src.strip(), dest.strip()
