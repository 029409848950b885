"""The README's commands, run verbatim in a fresh clone, so the README cannot drift from what works.

A fresh clone (`git clone` of this repository's HEAD) goes into a temporary folder, with a throwaway venv
(`--system-site-packages`, so the machine's own install is left alone and no dependency is downloaded again) first
on PATH. Every command of the README then runs there, in README order, through bash:
- every line of a ```sh / ```bash block (comments skipped, `\\` continuations joined);
- every `$ ` line of any other block; the lines after it up to the next `$ ` line are the output the README shows,
  and each of them (except `...`) must appear in what the command printed.
Left out: the test command (`bash tests/run-tests.sh`: it runs this very test; `.ci/run` runs it), and blocks
preceded by `<!-- readme-test: skip REASON -->` (the reason is printed). A command that exits non-zero fails.
The README's first command must be the local quick start and score 1.0 on every sample task.
The README's commands use fixed ports (the model server's `--port 8765`): one README run per machine at a time
(a lock file in the temporary folder), and a port that another program holds fails the test with its name.
"""
from __future__ import annotations

import fcntl
import json
import os
import re
import socket
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import pytest

from clawkube.benchmarks.loader import load_tasks

REPO = Path(__file__).resolve().parents[1]
TEST_COMMAND = "bash tests/run-tests.sh"
SKIP_MARK = re.compile(r"<!--\s*readme-test:\s*skip\s+(.+?)\s*-->")
SHELL_LANGS = {"sh", "bash", "shell", "console"}
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
PORT_OPTION = re.compile(r"--port[ =](\d+)")
README_LOCK = Path(tempfile.gettempdir()) / "clawkube-readme-test.lock"


@dataclass
class Command:
    line: str
    block: int  # index of its code block in the README
    expected: list[str] = field(default_factory=list)  # output lines the README shows for it
    skip: Optional[str] = None  # why it is not run


def readme_commands(text: str) -> list[Command]:
    """The commands of a README's code blocks, in order (see the module docstring for the rules)."""
    commands: list[Command] = []
    lines = text.splitlines()
    i, block = 0, -1
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        block += 1
        lang = m.group(2).lower()
        before = next((ln for ln in reversed(lines[:i]) if ln.strip()), "")
        skip = SKIP_MARK.search(before)
        body: list[str] = []
        i += 1
        while i < len(lines) and not FENCE.match(lines[i]):
            body.append(lines[i])
            i += 1
        i += 1  # the closing fence
        commands += _block_commands(body, lang, block, skip.group(1) if skip else None)
    return commands


def _block_commands(body: list[str], lang: str, block: int, skip: Optional[str]) -> list[Command]:
    out: list[Command] = []
    pending = ""
    for raw in body:
        line = raw.rstrip()
        prompt = line.startswith("$ ")
        if prompt or (lang in SHELL_LANGS and not pending and line.strip() and not line.lstrip().startswith("#")):
            pending = line[2:] if prompt else line.strip()
        elif pending:  # a continuation line
            pending += "\n" + line
        elif out and lang not in SHELL_LANGS and line.strip():
            out[-1].expected.append(line)
            continue
        else:
            continue
        if pending.endswith("\\"):
            continue
        out.append(Command(pending, block, skip=skip))
        pending = ""
    return out


# ---- the parser itself (cheap, no clone)

def test_parser_reads_shell_blocks_prompts_and_expected_output():
    text = "\n".join([
        "```sh", "# a comment", "pip install -e . && tool run \\", "  --x 1", "", "bash tests/run-tests.sh", "```",
        "```", "$ tool report out/", "line one", "...", "$ tool again   # note", "```",
        "```yaml", "key: value", "```",
        "<!-- readme-test: skip needs a cluster -->", "```bash", "kubectl get pods", "```",
        "```", "clawkube run [run.yaml] --tasks DIR", "```",
    ])
    cmds = readme_commands(text)
    assert [c.line for c in cmds] == ["pip install -e . && tool run \\\n  --x 1", "bash tests/run-tests.sh",
                                      "tool report out/", "tool again   # note", "kubectl get pods"]
    assert cmds[2].expected == ["line one", "..."] and cmds[3].expected == []
    assert cmds[4].skip == "needs a cluster" and all(c.skip is None for c in cmds[:4])


# ---- the README, verbatim, in a fresh clone

@pytest.fixture(scope="module")
def fresh_clone(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    if shutil.which("git") is None:
        pytest.skip("git is not installed: cannot make a fresh clone")
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        pytest.skip(f"{REPO} is not a git checkout: {head.stderr.strip()}")
    root = tmp_path_factory.mktemp("readme")
    clone = root / "clawkube"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True, timeout=300)
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=300)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", VIRTUAL_ENV=str(venv),
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    return clone, env


def _run(cmd: Command, clone: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", cmd.line], cwd=clone, env=env, capture_output=True, text=True, timeout=1800)


def _printed_lines(p: subprocess.CompletedProcess) -> set[str]:
    return {ln.rstrip() for ln in re.split(r"[\r\n]", p.stdout + "\n" + p.stderr)}


def test_fixed_ports_and_background_processes_of_the_readme(tmp_path: Path):
    assert fixed_ports(["tool serve --port 8765 &", "tool x --port=9000", "tool y --portal 1", "tool serve --port 8765"]) \
        == [8765, 9000]
    here = subprocess.Popen(["sleep", "60"], cwd=tmp_path)
    elsewhere = subprocess.Popen(["sleep", "60"], cwd="/")
    (tmp_path / "a.pid").write_text(f"{here.pid}\n")
    (tmp_path / "b.pid").write_text(f"{elsewhere.pid}\n")  # a reused pid: not started in the clone, left alone
    (tmp_path / "c.pid").write_text("not a pid\n")
    try:
        stop_background(tmp_path)
        assert here.wait(10) == -signal.SIGTERM and elsewhere.poll() is None
    finally:
        elsewhere.kill()
        here.kill()
        elsewhere.wait()


@pytest.mark.slow
def test_readme_commands_work_verbatim_in_a_fresh_clone(fresh_clone):
    clone, env = fresh_clone
    commands = readme_commands((clone / "README.md").read_text())
    lines = [c.line for c in commands]
    assert TEST_COMMAND in lines, "the README must state the test command"
    quick_start = commands[0]
    assert quick_start.line.startswith("pip install -e . && clawkube run "), \
        f"the README's first command must be the local quick start, not {quick_start.line!r}"
    assert any(ln.startswith("clawkube validate ") for ln in lines), "the README shows no `clawkube validate`"
    assert any(ln.startswith("clawkube report ") for ln in lines), "the README shows no `clawkube report`"

    with README_LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another README run (another checkout's tests) would hold the same ports
        taken = [port for port in fixed_ports(lines) if port_taken(port)]
        assert not taken, f"port(s) {taken} that the README's commands listen on are held by another program here"
        try:
            ran = _run_all(commands, quick_start, clone, env)
        finally:
            stop_background(clone)
    print("ran:\n  " + "\n  ".join(ran))


def fixed_ports(lines: list[str]) -> list[int]:
    return sorted({int(m) for ln in lines for m in PORT_OPTION.findall(ln)})


def stop_background(clone: Path) -> None:
    """Stop what the README started in the background (`& echo $! > NAME.pid`) when a command failed before the
    README's own `kill`: it would hold its port for the next run."""
    for pid_file in clone.glob("*.pid"):
        try:
            pid = int(pid_file.read_text().strip())
            if Path(f"/proc/{pid}/cwd").resolve() == clone.resolve():  # still that process, not a reused pid
                os.kill(pid, signal.SIGTERM)
        except (ValueError, OSError):  # gone already
            pass


def port_taken(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _run_all(commands: list[Command], quick_start: Command, clone: Path, env: dict[str, str]) -> list[str]:
    ran: list[str] = []
    for cmd in commands:
        if cmd.line == TEST_COMMAND or cmd.skip:
            print(f"not run: {cmd.line!r}: {cmd.skip or 'the test command itself (.ci/run runs it)'}")
            continue
        p = _run(cmd, clone, env)
        assert p.returncode == 0, f"README command {cmd.line!r} exited {p.returncode}:\n{p.stdout[-3000:]}\n" \
                                  f"{p.stderr[-3000:]}"
        printed = _printed_lines(p)
        missing = [ln for ln in cmd.expected if ln.strip() != "..." and ln.rstrip() not in printed]
        assert not missing, f"README shows output that {cmd.line!r} does not print: {missing}\n{p.stdout[-3000:]}"
        ran.append(cmd.line)
        if cmd is quick_start:
            _check_quick_start(clone, env)
    return ran


def _check_quick_start(clone: Path, env: dict[str, str]) -> None:
    # the clone's own package is what ran (not the machine's editable install)
    where = subprocess.run(["python", "-c", "import clawkube; print(clawkube.__file__)"], env=env, cwd="/",
                           capture_output=True, text=True, check=True).stdout.strip()
    assert Path(where).resolve().is_relative_to(clone.resolve()), where
    report = load_tasks(clone / "tasks")
    assert report.tasks and not report.errors, report.errors
    results = [json.loads(f.read_text()) for f in sorted((clone / "results" / "trials").glob("*/*/result.json"))]
    by_task: dict[str, list[float]] = {}
    for r in results:
        assert r["score"] is not None, f"{r['task_id']} #{r['trial_index']}: {r['error_kind']}: {r['error_message']}"
        by_task.setdefault(r["task_id"], []).append(r["score"]["score"])
    assert set(by_task) == {t.id for t in report.tasks}, "every sample task must have run"
    low = {t: s for t, s in by_task.items() if min(s) != 1.0}
    assert not low, f"the quick start must score 1.0 on every sample task: {low}"
    summary = json.loads((clone / "results" / "summary.json").read_text())
    assert summary["overall"]["mean_score"] == 1.0 and summary["overall"]["trials_failed"] == 0
