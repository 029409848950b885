"""Load-time checks of grader code: it compiles, defines `grade`, and asks only for arguments we pass.

Graders are called with the keyword arguments they declare among `GRADER_ARGS` (docs/DESIGN.md).
"""
from __future__ import annotations

import ast
from pathlib import Path

from .model import TaskLoadError

GRADER_ARGS = frozenset({"transcript", "workspace_path", "audit", "task", "env_snapshot", "judge"})


def check_grader(code: str, path: Path, field: str, first_line: int = 1, entry: str = "grade") -> None:
    """Raise TaskLoadError unless `code` compiles and defines a top-level `entry` we can call.

    `first_line` is the file line of the code's first line (for code embedded in Markdown).
    """
    try:
        tree = ast.parse(code, filename=str(path))
        compile(tree, str(path), "exec")
    except SyntaxError as e:
        line = (e.lineno or 1) + first_line - 1
        raise TaskLoadError(path, field, f"grader code does not compile: {e.msg} (line {line})") from None
    fn = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == entry),
              None)
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


def required_args(code: str, entry: str = "grade") -> list[str]:
    """The arguments `entry` requires (no default), for code that passed `check_grader`; [] when not found."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    fn = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == entry),
              None)
    return [] if fn is None else _required(fn.args)
