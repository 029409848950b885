"""The import layers of .importlinter hold (no cycles between packages, no upward imports), and the check really
catches a violation."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LINT = [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
                              "sys.exit(lint_imports_command())"]


def _lint(operator_dir: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(operator_dir))
    return subprocess.run([*LINT, "--no-cache"], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_the_layers_hold():
    p = _lint(REPO / "operator", REPO)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "0 broken" in p.stdout


def test_an_upward_import_breaks_the_check(tmp_path: Path):
    shutil.copytree(REPO / "operator" / "clawkube", tmp_path / "operator" / "clawkube",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / ".importlinter", tmp_path / ".importlinter")
    model = tmp_path / "operator" / "clawkube" / "results" / "model.py"
    model.write_text(model.read_text() + "\nfrom ..reporting import summary  # upward: results is below reporting\n")
    p = _lint(tmp_path / "operator", tmp_path)
    assert p.returncode != 0 and "clawkube.results.model -> clawkube.reporting.summary" in p.stdout, p.stdout
