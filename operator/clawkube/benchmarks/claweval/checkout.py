"""Where a run finds CLAW-Eval's code: a checkout of claw-eval/claw-eval (the *benchmark root*).

The root holds `tasks/<id>/` (task.yaml, grader.py, fixtures/), `src/claw_eval/` (the package graders import)
and `mock_services/` (the services tasks start). Task specs alone (e.g. ../shared/benchmarks/claw-eval) load
and validate without it; running them needs it: named by the run (`--claw-eval DIR`, `spec.clawEval.checkout`,
`$CLAWKUBE_CLAWEVAL_CHECKOUT`), or found above the tasks folder when the tasks come from a checkout.

Its code runs under the *benchmark Python*, the interpreter that has the checkout's requirements (FastAPI,
uvicorn, openai, httpx, ...): `$CLAWKUBE_CLAWEVAL_PYTHON`, else the checkout's own `.venv` (what its README
sets up), else the interpreter running clawkube.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Optional

CHECKOUT_ENV = "CLAWKUBE_CLAWEVAL_CHECKOUT"
IMAGE_CHECKOUT = "/opt/claw-eval"  # where images/build.sh --claw-eval puts the checkout (and sets CHECKOUT_ENV)
PYTHON_ENV = "CLAWKUBE_CLAWEVAL_PYTHON"


def is_checkout(root: Path) -> bool:
    return (root / "src" / "claw_eval" / "__init__.py").is_file() and (root / "mock_services").is_dir()


def missing_parts(root: Path) -> list[str]:
    return [p for p in ("src/claw_eval/__init__.py", "mock_services", "tasks") if not (root / p).exists()]


def find_checkout(task_path: Path) -> Optional[Path]:
    """The checkout a task folder lives in (tasks/<id>/ under a root with the code), if any."""
    for parent in Path(task_path).resolve().parents:
        if is_checkout(parent):
            return parent
    return None


def resolve_checkout(explicit: Optional[str], task_path: Optional[Path] = None) -> Optional[Path]:
    """The run's checkout: the explicit setting, else $CLAWKUBE_CLAWEVAL_CHECKOUT, else the one the tasks are in."""
    named = explicit or os.environ.get(CHECKOUT_ENV)
    if named:
        return Path(named).expanduser().resolve()
    return find_checkout(task_path) if task_path is not None else None


def benchmark_python(root: Optional[Path], explicit: Optional[str] = None) -> str:
    if explicit:
        return explicit
    if os.environ.get(PYTHON_ENV):
        return os.environ[PYTHON_ENV]
    if root is not None and (Path(root) / ".venv" / "bin" / "python").exists():
        return str(Path(root) / ".venv" / "bin" / "python")
    return sys.executable
