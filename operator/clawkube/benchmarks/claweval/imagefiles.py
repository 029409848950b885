"""Split a CLAW-Eval checkout into the two image layers images/build.sh --claw-eval makes (never committed here):

    python -m clawkube.benchmarks.claweval.imagefiles CHECKOUT SERVICES_DIR GRADING_DIR [--prefix /opt/claw-eval]

- services (the agent pod's "svc-claweval" sidecar): the checkout as it is - `mock_services/`, `src/claw_eval`, the
  tasks' task.yaml and fixtures - minus everything grading-only: each task's `grader.py`, its
  `sandbox_grader_files` and `local_grader_files`;
- grading (added on top for the grading pods): exactly those grading-only files.
Left out of both: `.git`, virtual environments, `__pycache__`. Each file goes under `<DIR><prefix>/`, hard-linked
when the file system allows (else copied).
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path, PurePosixPath

from .checkout import IMAGE_CHECKOUT, missing_parts
from .taskyaml import GRADER_FILE, TASK_FILE

SKIP_DIRS = {".git", ".venv", "venv", "__pycache__", ".mypy_cache", ".pytest_cache"}


def grading_only(root: Path) -> set[str]:
    """Paths (relative to the checkout, posix) that only grading may see."""
    from ...safeyaml import load as load_yaml

    out: set[str] = set()
    tasks = root / "tasks"
    for d in sorted(p for p in tasks.iterdir() if p.is_dir()):
        rel = PurePosixPath("tasks", d.name)
        if (d / GRADER_FILE).is_file():
            out.add(str(rel / GRADER_FILE))
        y = d / TASK_FILE
        if not y.is_file():
            continue
        try:
            raw = load_yaml(y.read_text(encoding="utf-8")) or {}
        except Exception as e:  # a broken task.yaml: keep its whole folder out of the services image
            print(f"imagefiles: {y}: {e}; its folder goes to the grading layer only", file=sys.stderr)
            out.add(str(rel))
            continue
        for key in ("sandbox_grader_files", "local_grader_files"):
            for f in raw.get(key) or []:
                p = PurePosixPath(str(f).strip().replace("\\", "/"))
                if p.parts and not p.is_absolute() and ".." not in p.parts:
                    out.add(str(rel / p))
    return out


def _is_grading(rel: PurePosixPath, hidden: set[str]) -> bool:
    return any(str(p) in hidden for p in (rel, *rel.parents))


def _place(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dest)
    except OSError:
        shutil.copy2(src, dest)


def split(root: Path, services: Path, grading: Path, prefix: str = IMAGE_CHECKOUT) -> tuple[int, int]:
    """Place the checkout's files; returns (services files, grading files)."""
    gaps = missing_parts(root)
    if gaps:
        raise ValueError(f"{root} is not a CLAW-Eval checkout: missing {', '.join(gaps)}")
    hidden = grading_only(root)
    counts = [0, 0]
    base = prefix.strip("/")
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not (Path(dirpath) / d / "pyvenv.cfg").exists())
        for name in sorted(filenames):
            src = Path(dirpath) / name
            if name.endswith(".pyc") or not (src.is_file() or src.is_symlink()):
                continue
            rel = PurePosixPath(src.relative_to(root).as_posix())
            g = _is_grading(rel, hidden)
            _place(src, (grading if g else services) / base / rel)
            counts[1 if g else 0] += 1
    return counts[0], counts[1]


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="imagefiles", description=__doc__.split("\n\n")[0])
    p.add_argument("checkout", type=Path)
    p.add_argument("services", type=Path)
    p.add_argument("grading", type=Path)
    p.add_argument("--prefix", default=IMAGE_CHECKOUT)
    a = p.parse_args(argv)
    try:
        n_s, n_g = split(a.checkout.resolve(), a.services, a.grading, a.prefix)
    except ValueError as e:
        print(f"imagefiles: {e}", file=sys.stderr)
        return 2
    print(f"{n_s} files for the services image, {n_g} grading-only files")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
