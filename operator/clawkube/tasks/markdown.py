"""Markdown task files (WildClawBench, EvoClawBench): YAML frontmatter, `## ` sections, fenced code blocks.

Pure parsing, no task semantics: `parse(path)` returns a `MarkdownDoc` whose sections keep the file
line numbers, so errors (bad YAML, grader code that does not compile) can point into the file.
Headings inside fenced code blocks are text, not headings.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Optional

import yaml

from .. import safeyaml
from pydantic import BaseModel, Field

from .model import TaskLoadError


_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})\s*([\w+.-]*)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_EMPTY_MARKERS = {"none", "n/a", "na", "-", "(none)", "nothing"}


class CodeBlock(BaseModel):
    lang: str  # lower-case info string ("" when untagged)
    code: str
    line: int  # file line of the first code line (1-based)


class Section(BaseModel):
    title: str
    level: int
    line: int  # file line of the heading
    body: str  # text under the heading, up to the next heading of the same or a higher level
    body_line: int  # file line of the first body line
    subsections: list["Section"] = Field(default_factory=list)

    def code_blocks(self) -> list[CodeBlock]:
        return code_blocks(self.body, self.body_line)

    def items(self) -> list[str]:
        """The body as a list: fenced block lines if there is a fence, else non-empty lines without bullets/backticks."""
        blocks = self.code_blocks()
        if blocks:
            lines = [ln for b in blocks for ln in b.code.splitlines()]
        else:
            lines = [_BULLET.sub("", ln).strip().strip("`").strip() for ln in self.body.splitlines()]
        lines = [ln.rstrip() for ln in lines if ln.strip()]
        if len(lines) == 1 and lines[0].strip().lower() in _EMPTY_MARKERS:
            return []
        return lines


class MarkdownDoc(BaseModel):
    path: Path
    frontmatter: dict[str, Any]
    sections: list[Section]  # the `## ` sections, in file order

    def section(self, title: str) -> Optional[Section]:
        """The `## title` section (case- and space-insensitive), or None. Duplicates are rejected by parse()."""
        key = _norm(title)
        return next((s for s in self.sections if _norm(s.title) == key), None)

    def text(self, title: str) -> str:
        """The body of an optional section ("" when absent)."""
        sec = self.section(title)
        return sec.body.strip() if sec is not None else ""

    def require(self, title: str) -> Section:
        sec = self.section(title)
        if sec is None or not sec.body.strip():
            problem = "section is empty" if sec is not None else f"missing section '## {title}'"
            raise TaskLoadError(self.path, title, problem)
        return sec


def _norm(title: str) -> str:
    """Section titles match case-insensitively, ignoring '-' vs ' ' and a trailing ':'."""
    return " ".join(title.rstrip().rstrip(":").replace("-", " ").lower().split())


def split_frontmatter(path: Path, text: str) -> tuple[Optional[str], int, str]:
    """(frontmatter YAML or None, file line where the YAML starts, rest of the text)."""
    text = text.lstrip("\ufeff")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return None, 0, text
    for i in range(1, len(lines)):
        if lines[i].strip() in ("---", "..."):
            return "".join(lines[1:i]), 2, "".join(lines[i + 1:])
    raise TaskLoadError(path, "frontmatter", "opening '---' has no closing '---' line")


def read_frontmatter(path: Path, text: Optional[str] = None) -> Optional[dict[str, Any]]:
    """The frontmatter mapping, or None when the file has none. Bad YAML raises with the file line number."""
    if text is None:
        text = read_text(path)
    raw, first_line, _ = split_frontmatter(path, text)
    if raw is None:
        return None
    return load_yaml(path, raw, "frontmatter", first_line)


def load_yaml(path: Path, raw: str, field: str, first_line: int = 1) -> dict[str, Any]:
    try:
        data = safeyaml.load(raw)  # size, node and depth limits (libyaml when safe): a YAML bomb is refused at once
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + first_line}: " if mark is not None else ""
        what = getattr(e, "problem", None) or str(e)
        raise TaskLoadError(path, field, f"invalid YAML: {where}{what}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise TaskLoadError(path, field, f"must be a YAML mapping, got {type(data).__name__}")
    return data


MAX_TASK_FILE = 16 * 1024 * 1024  # bytes: a bigger task file is refused before it is read


def read_text(path: Path) -> str:
    try:
        size = path.stat().st_size
        if size > MAX_TASK_FILE:
            raise TaskLoadError(path, "file", f"{size} bytes, more than the {MAX_TASK_FILE} a task file may have")
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise TaskLoadError(path, "file", f"not UTF-8 text: {e}") from None
    except OSError as e:
        raise TaskLoadError(path, "file", f"cannot read: {e.strerror or e}") from None


def parse(path: Path) -> MarkdownDoc:
    text = read_text(path)
    raw, first_line, _ = split_frontmatter(path, text)
    if raw is None:
        raise TaskLoadError(path, "frontmatter", "file has no YAML frontmatter ('---' block at the top)")
    front = load_yaml(path, raw, "frontmatter", first_line)
    body_start = first_line + len(raw.splitlines()) + 1  # line after the closing '---'
    lines = text.lstrip("\ufeff").splitlines()[body_start - 1:]
    sections = _sections(lines, body_start, level=2)
    seen: dict[str, Section] = {}
    for s in sections:
        key = _norm(s.title)
        if key in seen:
            raise TaskLoadError(path, s.title, f"section appears twice (lines {seen[key].line} and {s.line})")
        seen[key] = s
    return MarkdownDoc(path=path, frontmatter=front, sections=sections)


def _headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """(index, level, title) of every heading outside fenced code blocks."""
    out: list[tuple[int, int, str]] = []
    fence: Optional[str] = None
    for i, line in enumerate(lines):
        m = _FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
            continue
        if fence is not None:
            if line.strip().startswith(fence[0] * len(fence)) and not line.strip().strip(fence[0]):
                fence = None
            continue
        h = _HEADING.match(line)
        if h:
            out.append((i, len(h.group(1)), h.group(2)))
    return out


def _sections(lines: list[str], first_line: int, level: int) -> list[Section]:
    heads = _headings(lines)
    out: list[Section] = []
    for n, (i, lvl, title) in enumerate(heads):
        if lvl != level:
            continue
        end = next((j for j, l2, _ in heads[n + 1:] if l2 <= level), len(lines))
        body_lines = lines[i + 1:end]
        lead = 0
        while lead < len(body_lines) and not body_lines[lead].strip():
            lead += 1
        sec = Section(title=title, level=level, line=first_line + i,
                      body="\n".join(body_lines[lead:]).rstrip(), body_line=first_line + i + 1 + lead)
        sec.subsections = _sections(body_lines, first_line + i + 1, level + 1)
        out.append(sec)
    return out


def code_blocks(body: str, first_line: int) -> list[CodeBlock]:
    """Fenced code blocks in `body` (whose first line is file line `first_line`)."""
    blocks: list[CodeBlock] = []
    lines = body.split("\n")
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang = m.group(1), m.group(2).lower()
        start = i + 1
        j = start
        while j < len(lines):
            s = lines[j].strip()
            if s.startswith(fence[0] * len(fence)) and not s.strip(fence[0]):
                break
            j += 1
        blocks.append(CodeBlock(lang=lang, code="\n".join(lines[start:j]) + "\n", line=first_line + start))
        i = j + 1
    return blocks


def pick_block(path: Path, section: Section, langs: tuple[str, ...]) -> CodeBlock:
    """The first fenced block tagged with one of `langs` (or untagged) in a section."""
    blocks = section.code_blocks()
    for b in blocks:
        if b.lang in langs:
            return b
    for b in blocks:
        if b.lang == "":
            return b
    raise TaskLoadError(path, section.title,
                        f"no fenced ```{langs[0]} code block (line {section.line})")


def strip_inline(text: str) -> str:
    """A one-value section body ('`fixtures/x`', '- fixtures/x', or a fenced block) as the bare value."""
    blocks = code_blocks(text, 1)
    if blocks:
        text = blocks[0].code
    for line in text.splitlines():
        value = _BULLET.sub("", line).strip().strip("`").strip()
        if value:
            return value
    return ""
