"""A CLAW-Eval task's environment snapshot, in the benchmark's own shape, over the agent's /workspace.

The benchmark's sandboxed runner, after the agent and after injecting `sandbox_grader_files`, runs each of the
task's `env_snapshot_commands` in the agent's container (shell, /workspace) and then reads each of its
`env_snapshot_files` (globs allowed), and hands the grader a dict:
- `"cmd:<command>"`: `{"exit_code", "stdout", "stderr"}` (a command over its time limit: exit_code -1);
- `"file:<path>"`: text files `{"content", "mime_type", "encoding": "utf-8"}`, others (images included)
  `{"content": <base64>, "mime_type", "encoding": "base64"}`, a missing one `{"error": "File not found: ..."}`;
- `"local_file:<path>"`: each `local_grader_files` entry of the task folder, base64 (read on the grading side).
Without any of these the grader gets no snapshot (None), as from the benchmark's runner without a container.

Here the commands are the grading side's probes (lifecycle/phases.py env_snapshot, through the execution
backend): the grading copy of the agent's workspace at /workspace, nothing else of the trial (no grader, no
checkout), no network, `python` = the Python that runs clawkube; their results reach this module through the
grading request's env_snapshot.json. Differences from the benchmark's runner: the probes run before the
`sandbox_grader_files` are placed and with this project's probe time limit, and the benchmark image's extra
tools (Playwright/Chromium, ffmpeg) exist here only when the machine has them.
"""
from __future__ import annotations

import base64
import glob as _glob
import mimetypes
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from .taskyaml import TaskYaml

WORKSPACE = "/workspace"
MAX_GLOB_FILES = 50
_TEXT_MIMES = {"application/json", "application/xml", "application/yaml", "application/x-yaml",
               "application/javascript"}
_TEXT_EXT = {".txt", ".md", ".csv", ".json", ".yaml", ".yml", ".xml", ".html", ".htm", ".js", ".ts", ".py", ".sh",
             ".bash", ".cfg", ".ini", ".toml", ".log", ".sql", ".r", ".rmd"}
_PDF_OR_MEDIA = {".pdf"}


def _host(path: str, ws: Path) -> Optional[Path]:
    """A /workspace path on the grading copy (None for anything outside /workspace)."""
    p = Path(path)
    if not p.is_absolute():
        p = Path(WORKSPACE) / p
    try:
        rel = p.relative_to(WORKSPACE)
    except ValueError:
        return None
    if ".." in rel.parts:
        return None
    return ws / rel


def read_entry(path: str, ws: Path) -> dict[str, Any]:
    host = _host(path, ws)
    if host is None or not host.is_file() or host.is_symlink():
        return {"error": f"File not found: {path}"}
    mime, _ = mimetypes.guess_type(str(host))
    ext = host.suffix.lower()
    is_text = mime in _TEXT_MIMES or (mime or "").startswith("text/") or (mime is None and ext in _TEXT_EXT)
    if is_text and ext not in _PDF_OR_MEDIA:
        return {"content": host.read_text(encoding="utf-8", errors="replace"), "mime_type": mime or "text/plain",
                "encoding": "utf-8"}
    data = host.read_bytes()
    return {"content": base64.b64encode(data).decode("ascii"), "mime_type": mime or "application/octet-stream",
            "encoding": "base64", "size_bytes": len(data)}


def glob_paths(pattern: str, ws: Path) -> list[str]:
    host = _host(pattern, ws)
    if host is None:
        return []
    out = []
    for m in sorted(_glob.glob(str(host), recursive=True))[:MAX_GLOB_FILES]:
        p = Path(m)
        if p.is_file() and not p.is_symlink():
            out.append(str(Path(WORKSPACE) / p.relative_to(ws)))
    return out


def command_entry(probe: Optional[dict[str, Any]]) -> dict[str, Any]:
    """One command's entry in the benchmark's shape, from this project's probe record (lifecycle/phases.py)."""
    if probe is None:
        return {"error": "the command was not run"}
    if probe.get("timed_out"):
        return {"exit_code": -1, "stdout": probe.get("stdout", ""), "stderr": "Timed out"}
    return {"exit_code": probe.get("exit_code"), "stdout": probe.get("stdout", ""), "stderr": probe.get("stderr", "")}


def env_snapshot(task: TaskYaml, ws: Path, task_dir: Path,
                 probes: Optional[dict[str, Any]] = None) -> Optional[dict[str, Any]]:
    """The snapshot the task's grader gets, or None when the task declares nothing to snapshot. `probes`: the
    commands' results as this project's grading side recorded them (env_snapshot.json "commands")."""
    if not (task.env_snapshot_commands or task.env_snapshot_files or task.local_grader_files):
        return None
    snap: dict[str, Any] = {}
    if task.env_snapshot_commands or task.env_snapshot_files:
        if not Path(ws).is_dir():
            raise FileNotFoundError(f"grading workspace {ws} is missing")
        for cmd in task.env_snapshot_commands:
            snap[f"cmd:{cmd}"] = command_entry((probes or {}).get(cmd))
        for pattern in task.env_snapshot_files:
            if "*" in pattern or "?" in pattern:
                for f in glob_paths(pattern, Path(ws)):
                    snap[f"file:{f}"] = read_entry(f, Path(ws))
            else:
                snap[f"file:{pattern}"] = read_entry(pattern, Path(ws))
    for rel in task.local_grader_files:
        p = Path(task_dir) / rel
        snap[f"local_file:{rel}"] = ({"encoding": "base64", "content": base64.b64encode(p.read_bytes()).decode()}
                                     if p.is_file() else {"error": f"not found: {p}"})
    return snap
