"""Links an agent leaves in its workspace: never followed into ground truth, never written through.

Each attack is followed by its control: the same trial's snapshot assembled naively (extract the tar, copy the
ground truth over it, follow links), which does hand the ground truth to the grader, so the attack is real."""
from __future__ import annotations

import shutil
import tarfile
from pathlib import Path

import pytest

from clawkube.results.model import ErrorKind

from .attack import SECRET, make_task, run, world_root


def _naive_grading_view(out: Path, fixtures: Path, tmp: Path) -> str:
    """What a grader reading answer.txt saw before: the snapshot unpacked with tarfile, ground truth copied over it
    with shutil (following links), answer.txt read through links."""
    ws = tmp / "naive"
    with tarfile.open(out / "trials" / "answer" / "0" / "workspace.tar.gz") as t:
        for m in t.getmembers():
            if m.isdev() or m.isfifo():
                continue
            t.extract(m, ws, filter="fully_trusted") if hasattr(tarfile, "data_filter") else t.extract(m, ws)
    shutil.copytree(fixtures / "gt", ws / "gt", dirs_exist_ok=True)
    p = ws / "answer.txt"
    return p.read_text() if p.exists() else ""


ATTACKS = {
    "symlink_to_ground_truth": ["ln -s gt/answer.txt answer.txt"],
    "symlink_chain_through_folder": ["ln -s gt g", "ln -s g/answer.txt answer.txt"],
    "hardlink_planted_at_ground_truth_path": ["echo guess > answer.txt", "mkdir gt", "ln answer.txt gt/answer.txt"],
    "symlink_planted_at_ground_truth_path": ["echo guess > answer.txt", "mkdir gt",
                                             "ln -s ../answer.txt gt/answer.txt"],
    "ground_truth_folder_is_a_link": ["ln -s . gt"],
}


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_planted_links_do_not_score_or_leak(tmp_path: Path, name: str):
    root = world_root(tmp_path)
    make_task(root)
    out = root / "out"
    (r,) = run(root / "tasks", out, ATTACKS[name]).results
    assert r.error_kind is None, r.error_message
    assert r.score is not None and r.score.score == 0.0, f"{name}: a planted link scored {r.score}"
    # control: assembled the naive way, the same workspace does hand the ground truth over
    assert _naive_grading_view(out, root / "fixtures" / "answer", tmp_path).strip() == SECRET


def test_absolute_and_dangling_links_are_evidence_not_infra_errors(tmp_path: Path):
    """An absolute link, a link out of the workspace and a dangling one: the trial is graded on its work at the
    first attempt, and the links are kept in the snapshot as links."""
    root = world_root(tmp_path)
    make_task(root, grader="def grade(workspace_path):\n    import os\n"
                           "    ok = float(open(os.path.join(workspace_path, 'answer.txt')).read().strip() == '42')\n"
                           "    return {'overall_score': ok}\n")
    out = root / "out"
    (r,) = run(root / "tasks", out, ["ln -s /etc/passwd abs", "ln -s ../../../../outside out", "ln -s nowhere dang",
                                     "echo 42 > answer.txt"]).results
    assert r.attempt == 1 and r.error_kind is None, r.error_message
    assert r.score is not None and r.score.score == 1.0
    with tarfile.open(out / "trials" / "answer" / "0" / "workspace.tar.gz") as t:
        links = {m.name: m.linkname for m in t.getmembers() if m.issym()}
    assert links == {"abs": "/etc/passwd", "out": "../../../../outside", "dang": "nowhere"}
    assert ErrorKind.INFRA not in {r.error_kind}
