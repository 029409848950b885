"""workspace.rmtree: what an agent left behind goes, nothing it points at does."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from clawkube.lifecycle import workspace


def _hostile_tree(root: Path, outside: Path) -> None:
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "f.txt").write_text("x")
    (root / "top.txt").write_text("y")
    (root / "a" / "to_outside_dir").symlink_to(outside, target_is_directory=True)
    (root / "a" / "b" / "to_outside_file").symlink_to(outside / "keep.txt")
    (root / "dangling").symlink_to(root / "nowhere")
    os.link(outside / "keep.txt", root / "hardlink.txt")
    os.mkfifo(root / "fifo")
    locked = root / "locked"
    (locked / "inner").mkdir(parents=True)
    (locked / "inner" / "g").write_text("z")
    os.chmod(locked / "inner", 0)
    os.chmod(locked, 0)


@pytest.mark.parametrize("remove", [workspace.rmtree, workspace._remove_in_process], ids=["rmtree", "in_process"])
def test_removes_the_tree_and_never_what_its_links_point_at(tmp_path: Path, remove):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    root = tmp_path / "ws"
    root.mkdir()
    _hostile_tree(root, outside)
    remove(root)
    assert not os.path.lexists(root)
    assert (outside / "keep.txt").read_text() == "keep" and sorted(os.listdir(outside)) == ["keep.txt"]


def test_a_tree_deeper_than_the_in_process_limit_is_removed_too(tmp_path: Path):
    root = tmp_path / "deep"
    d = root
    for _ in range(workspace.RMTREE_DEPTH * 3):
        d = d / "d"
    d.mkdir(parents=True)
    (d / "leaf").write_text("x")
    try:
        workspace._remove_in_process(root)
        raise AssertionError("the in-process path should refuse a tree past its depth limit")
    except OSError:
        pass
    assert root.exists()
    workspace.rmtree(root)  # falls back to coreutils rm
    assert not os.path.lexists(root)


def test_a_link_or_a_file_given_as_the_path_is_removed_itself(tmp_path: Path):
    target = tmp_path / "target"
    (target / "x").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(target, target_is_directory=True)
    workspace.rmtree(link)
    assert not os.path.lexists(link) and (target / "x").is_dir()
    f = tmp_path / "file"
    f.write_text("x")
    workspace.rmtree(f)
    assert not f.exists()
    workspace.rmtree(tmp_path / "missing")  # nothing there: nothing to do
