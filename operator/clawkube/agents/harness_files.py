"""Reading what a harness left in its HOME (session files, SQLite databases) without trusting it.

The agent wrote that folder, so everything is checked: only regular files inside HOME (no symlink anywhere
on the way out), at most MAX_BYTES each. SQLite files are copied (with their -wal journal) to a private temp
folder before they are opened, so a planted file never reaches sqlite in place and the WAL is replayed.
"""
from __future__ import annotations

import os
import shutil
import sqlite3
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

MAX_BYTES = 256 * 1024 * 1024


class UnsafeFile(ValueError):
    pass


def _checked(home: Path, rel: Path) -> Path:
    """`home/rel` when it is a regular file reached without any symlink and not larger than MAX_BYTES."""
    home = Path(os.path.abspath(home))
    path = home
    for part in rel.parts:
        if part in ("", ".", ".."):
            raise UnsafeFile(f"{rel}: not a plain relative path")
        path = path / part
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            raise UnsafeFile(f"{rel}: {path.relative_to(home)} is a symlink")
    if not stat.S_ISREG(st.st_mode):
        raise UnsafeFile(f"{rel}: not a regular file")
    if st.st_size > MAX_BYTES:
        raise UnsafeFile(f"{rel}: {st.st_size} bytes, more than {MAX_BYTES}")
    return path


def glob(home: Path, pattern: str) -> list[Path]:
    """Paths relative to `home` matching `pattern`, newest first (symlinked ones left out)."""
    out = []
    for p in Path(home).glob(pattern):
        try:
            _checked(home, p.relative_to(home))
        except (UnsafeFile, OSError):
            continue
        out.append(p.relative_to(home))
    return sorted(out, key=lambda r: -os.lstat(Path(home) / r).st_mtime)


def read_text(home: Path, rel: Path | str) -> Optional[str]:
    """The file's text, or None when it is missing or unsafe."""
    try:
        path = _checked(home, Path(rel))
        with open(path, "rb") as f:
            return f.read(MAX_BYTES).decode("utf-8", errors="replace")
    except (UnsafeFile, OSError):
        return None


@contextmanager
def sqlite(home: Path, rel: Path | str) -> Iterator[Optional[sqlite3.Connection]]:
    """A read connection to a private copy of the database `home/rel` (None when missing or unsafe)."""
    try:
        src = _checked(home, Path(rel))
    except (UnsafeFile, OSError):
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="clawkube-harness-db-") as tmp:
        dst = Path(tmp) / "db.sqlite"
        shutil.copyfile(src, dst)
        for suffix in ("-wal",):
            try:
                shutil.copyfile(_checked(home, Path(str(rel) + suffix)), str(dst) + suffix)
            except (UnsafeFile, OSError):
                pass
        conn = sqlite3.connect(str(dst))
        try:
            conn.row_factory = sqlite3.Row
            yield conn
        finally:
            conn.close()
