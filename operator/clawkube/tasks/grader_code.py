"""Load-time checks of grader code: it compiles, defines `grade`, and asks only for arguments we pass.

Graders are called with the keyword arguments they declare among `GRADER_ARGS` (docs/DESIGN.md).
"""
from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Optional

from .model import TaskLoadError

GRADER_ARGS = frozenset({"transcript", "workspace_path", "audit", "task", "env_snapshot", "judge"})


def check_grader(code: str, path: Path, field: str, first_line: int = 1, entry: str = "grade") -> None:
    """Raise TaskLoadError unless `code` compiles and defines a top-level `entry` we can call.

    `first_line` is the file line of the code's first line (for code embedded in Markdown).
    """
    try:
        compile(code, str(path), "exec", dont_inherit=True)  # no Python AST objects: several times faster
    except SyntaxError as e:
        line = (e.lineno or 1) + first_line - 1
        raise TaskLoadError(path, field, f"grader code does not compile: {e.msg} (line {line})") from None
    fn = _entry_def(code, entry)
    if fn is None:
        raise TaskLoadError(path, field, f"grader code defines no top-level function '{entry}'")
    args = fn.args
    required = _required(args)
    unknown = [a for a in required if a not in GRADER_ARGS]
    if unknown:
        raise TaskLoadError(path, field, f"{entry}() requires {unknown}; graders are called with keyword "
                                         f"arguments among {sorted(GRADER_ARGS)}")
    if [a.arg for a in args.posonlyargs if a.arg in GRADER_ARGS]:
        raise TaskLoadError(path, field, f"{entry}() takes grader arguments positional-only; they are passed "
                                         "by keyword")


def _required(args: ast.arguments) -> list[str]:
    positional = args.posonlyargs + args.args
    required = [a.arg for a in positional[:len(positional) - len(args.defaults)]]
    return required + [a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is None]


def _entry_def(code: str, entry: str) -> Optional[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The top-level `def entry(...)` of code that compiles: its signature parsed alone (cheap), or, when the
    header cannot be cut out cleanly, from the whole module."""
    lines = code.split("\n")
    start = re.compile(rf"^(async\s+)?def\s+{re.escape(entry)}\s*\(")
    for i, line in enumerate(lines):
        if not start.match(line):
            continue
        for j in range(i, min(len(lines), i + 40)):  # the header ends at the first line that parses as one
            try:
                tree = ast.parse("\n".join(lines[i:j + 1]) + "\n    pass\n")
            except SyntaxError:
                continue
            node = tree.body[0] if tree.body else None
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == entry:
                return node
        break
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    return next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == entry),
                None)


def required_args(code: str, entry: str = "grade") -> list[str]:
    """The arguments `entry` requires (no default), for code that passed `check_grader`; [] when not found."""
    fn = _entry_def(code, entry)
    return [] if fn is None else _required(fn.args)
