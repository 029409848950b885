"""Setup and teardown steps around a harness command, as one `sh -c` invocation.

Adapters never run anything themselves; when a harness needs files in place first (its skills under
HOME, a config file) or after (moving a session file out of the workspace), the steps go into a short
POSIX shell script that runs the harness command as "$@". Without steps the command is used as-is.
"""
from __future__ import annotations

import shlex
from pathlib import Path
from typing import Optional

WRAPPER_NAME = "clawkube-harness"  # $0 of the wrapper script, shows up in ps


def quote(path: Path | str) -> str:
    return shlex.quote(str(path))


def copy_tree(src: Path, dst: Path, marker: Optional[Path] = None) -> str:
    """Copy the contents of folder `src` into `dst` when `src` exists.

    With `marker`: only when `dst` does not exist yet, and then touch `marker` (see `remove_tree_if`).
    """
    s, d = shlex.quote(str(src)), shlex.quote(str(dst))
    if marker is None:
        return f"if [ -d {s} ]; then mkdir -p {d} && cp -R {s}/. {d}/; fi"
    m = shlex.quote(str(marker))
    return (f"if [ -d {s} ] && [ ! -e {d} ]; then mkdir -p {d} {shlex.quote(str(marker.parent))} "
            f"&& cp -R {s}/. {d}/ && : > {m}; fi")


def write_file(path: Path, content: str) -> str:
    """Write `content` to `path`, creating its folder."""
    p = shlex.quote(str(path))
    return f"mkdir -p {shlex.quote(str(path.parent))} && printf '%s' {shlex.quote(content)} > {p}"


def move_file(src: Path, dst: Path) -> str:
    """Move `src` to `dst` when it exists."""
    s, d = shlex.quote(str(src)), shlex.quote(str(dst))
    return f"if [ -f {s} ]; then mkdir -p {shlex.quote(str(dst.parent))} && mv -f {s} {d}; fi"


def remove_tree_if(marker: Path, path: Path) -> str:
    """Remove `path` (and `marker`) when `marker` exists: undoes a `copy_tree(..., marker=marker)`."""
    m = shlex.quote(str(marker))
    return f"if [ -f {m} ]; then rm -rf {shlex.quote(str(path))} {m}; fi"


def remove_empty_dir(path: Path) -> str:
    return f"rmdir {shlex.quote(str(path))} 2>/dev/null || true"


def wrap(command: list[str], before: Optional[list[str]] = None, after: Optional[list[str]] = None) -> list[str]:
    """argv running `before` steps, then `command` (its exit status kept), then `after` steps."""
    before, after = before or [], after or []
    if not before and not after:
        return command
    lines = [f"{step} || exit 97" for step in before]  # 97: setup failed before the harness started
    if after:
        lines += ['"$@"', "rc=$?", *(f"{step} || true" for step in after), 'exit "$rc"']
    else:
        lines.append('exec "$@"')
    return ["sh", "-c", "\n".join(lines), WRAPPER_NAME, *command]
