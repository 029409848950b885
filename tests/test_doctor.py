"""`clawkube doctor` on a fake harness home: missing, out-of-range, unreadable-by-the-sandbox-user harnesses."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from clawkube.agents import doctor, install
from clawkube.lifecycle import sandbox

needs_sandbox = pytest.mark.skipif(not sandbox.namespace_mode_available(),
                                   reason="needs root and util-linux unshare/setpriv for the sandbox user check")


def _script(path: Path, body: str, mode: int = 0o755) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(mode)


def _npm(home: Path, name: str, version: str) -> None:
    pkg = install.PACKAGES[name]
    meta = home / name / "node_modules" / pkg.name / "package.json"
    meta.parent.mkdir(parents=True, exist_ok=True)
    meta.write_text(json.dumps({"name": pkg.name, "version": version}))
    _script(home / name / "node_modules" / ".bin" / pkg.bin, f"echo '{version}'\n")


def _node(home: Path, version: str) -> None:
    _script(home / "node" / "node_modules" / install.NODE.name / "bin" / "node", f"echo v{version}\n")


@pytest.fixture()
def home(monkeypatch):
    """A harness home the sandbox user can reach (pytest's tmp_path is under a 0700 folder)."""
    root = Path(tempfile.mkdtemp(prefix="clawkube-doctor-", dir="/tmp"))
    os.chmod(root, 0o755)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no harness of the machine's own PATH
    yield root
    shutil.rmtree(root, ignore_errors=True)


def test_missing_and_out_of_range_harnesses_are_problems(home):
    _node(home, "24.1.0")
    _npm(home, "codex", "0.171.0")
    _npm(home, "claude-code", "2.0.1")
    rep = doctor.diagnose(["codex", "claude-code", "hermes"], home)
    by = {h.name: h for h in rep.harnesses}
    assert by["codex"].version == "0.171.0" and by["codex"].in_range and by["codex"].runs
    assert by["claude-code"].in_range is False and "outside the tested range" in by["claude-code"].problems[0]
    assert not by["hermes"].installed and "clawkube harness install hermes" in by["hermes"].problems[0]
    assert not rep.ok
    text = doctor.render(rep)
    assert "problem: hermes: hermes is not installed" in text and "codex" in text


def test_openclaw_needs_node_24(home):
    _node(home, "20.20.2")
    _npm(home, "openclaw", "2026.9.6")
    rep = doctor.diagnose(["openclaw"], home)
    h = rep.harnesses[0]
    assert h.node == "20.20.2" and h.node_ok is False
    assert any("needs Node >= 24" in p for p in h.problems)


@needs_sandbox
def test_the_sandbox_user_must_be_able_to_run_it(home):
    _node(home, "24.22.3")
    _npm(home, "codex", "0.171.0")
    _npm(home, "claude-code", "2.1.332")
    os.chmod(home / "codex", 0o700)  # root can, the sandbox user cannot: the exit-126 case
    rep = doctor.diagnose(["codex", "claude-code"], home)
    by = {h.name: h for h in rep.harnesses}
    assert by["codex"].runs is True and by["codex"].sandbox_runs is False
    assert any("sandbox user cannot run it" in p for p in by["codex"].problems)
    assert by["claude-code"].sandbox_runs is True and by["claude-code"].ok


def test_cli_doctor_exit_code_and_json(home):
    _node(home, "24.22.3")
    _npm(home, "codex", "0.171.0")
    r = subprocess.run([sys.executable, "-m", "clawkube", "doctor", "codex", "--home", str(home), "--json"],
                       capture_output=True, text=True, timeout=120)
    out = json.loads(r.stdout)
    assert out["harnesses"][0]["name"] == "codex" and out["harnesses"][0]["installed"]
    assert r.returncode == (0 if out["harnesses"][0]["problems"] == [] and not out["sandbox_problems"] else 1)
    r = subprocess.run([sys.executable, "-m", "clawkube", "doctor", "nanobot", "--home", str(home)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "nanobot is not installed" in r.stdout
    r = subprocess.run([sys.executable, "-m", "clawkube", "doctor", "gemini"], capture_output=True, text=True)
    assert r.returncode == 2 and "unknown harness gemini" in r.stderr
