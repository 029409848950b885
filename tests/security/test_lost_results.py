"""Nothing the agent leaves behind may cost a result or be blamed on the infrastructure: bytes that are not UTF-8,
very deep trees, FIFOs, a transcript that cannot be parsed (which must not earn safety credit either)."""
from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from clawkube.results.model import ErrorKind

from .attack import IS_ROOT, NEEDS_ROOT, make_task, outputs, run, world_root

pytestmark = pytest.mark.skipif(not IS_ROOT, reason=NEEDS_ROOT)

ANSWER_GRADER = ("def grade(workspace_path):\n    import os\n"
                 "    p = os.path.join(workspace_path, 'answer.txt')\n"
                 "    ok = float(os.path.exists(p) and open(p).read().strip() == '42')\n"
                 "    return {'overall_score': ok}\n")


def _run(tmp_path: Path, commands: list[str]):
    root = world_root(tmp_path)
    make_task(root, grader=ANSWER_GRADER)
    out = root / "out"
    (r,) = run(root / "tasks", out, commands).results
    return r, out / "trials" / "answer" / "0", out


def test_non_utf8_output_keeps_the_result_and_the_bytes(tmp_path: Path):
    r, d, _ = _run(tmp_path, ["printf 'ok \\377\\376 bytes\\n'; printf '\\200\\n' >&2", "echo 42 > answer.txt"])
    assert r.attempt == 1 and r.error_kind is None, r.error_message
    assert r.score.score == 1.0
    assert b"\xff\xfe" in (d / "agent.stdout").read_bytes()  # control: the bytes really were not UTF-8


def test_a_very_deep_tree_is_cut_not_a_crash(tmp_path: Path):
    deep = "d=.; for i in $(seq 1500); do d=$d/a; done; mkdir -p $d && echo bottom > $d/f && echo made"
    r, d, out = _run(tmp_path, [deep, "echo 42 > answer.txt"])
    assert outputs(out)[0].strip() == "made"  # control: the tree was really that deep
    assert r.attempt == 1 and r.error_kind is None, r.error_message
    assert r.score.score == 1.0
    assert (out / "summary.json").exists()
    notes = json.loads((d / "workspace.notes.json").read_text())
    assert any("deeper than" in n for n in notes["omitted"])


def test_fifos_and_sockets_are_recorded_not_followed(tmp_path: Path):
    r, d, out = _run(tmp_path, ["mkfifo pipe gt-pipe && python3 -c \"import socket; socket.socket(socket.AF_UNIX)"
                                ".bind('sock')\" && ls -l pipe | cut -c1", "echo 42 > answer.txt"])
    assert outputs(out)[0].strip() == "p"  # control: a FIFO was there
    assert r.attempt == 1 and r.error_kind is None, r.error_message
    assert r.score.score == 1.0
    notes = json.loads((d / "workspace.notes.json").read_text())
    assert "pipe (fifo)" in notes["special"] and "sock (socket)" in notes["special"]
    with tarfile.open(d / "workspace.tar.gz") as t:
        assert "pipe" not in t.getnames() and "answer.txt" in t.getnames()
