"""Per-trial uids: each trial's sandboxes run as a uid no other live trial (of any runner on this machine) uses,
so trials cannot signal, trace or write to each other even where their views overlap.

A uid is leased by holding an exclusive lock on `<lock dir>/uid-<N>.lock` (flock: released by the kernel when the
holder dies, so a crashed runner frees its uids). Range: CLAWKUBE_SANDBOX_UID_BASE (default 200000) and the
CLAWKUBE_SANDBOX_UID_COUNT (default 10000) uids after it; none of them should be a real account.
"""
from __future__ import annotations

import fcntl
import os
import random
import tempfile
from pathlib import Path

from .spec import SANDBOX_UID

BASE_ENV, COUNT_ENV = "CLAWKUBE_SANDBOX_UID_BASE", "CLAWKUBE_SANDBOX_UID_COUNT"


def _lock_dir() -> Path:
    for d in (Path("/run/lock/clawkube-uids"), Path(tempfile.gettempdir()) / "clawkube-uids"):
        try:
            d.mkdir(mode=0o700, parents=True, exist_ok=True)
            if os.access(d, os.W_OK):
                return d
        except OSError:
            continue
    raise OSError("no writable folder for uid leases")


class UidLease:
    def __init__(self, uid: int, fd: int = -1):
        self.uid, self._fd = uid, fd

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> "UidLease":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def claim_uid() -> UidLease:
    """A free uid from the range (root only); others get the fixed SANDBOX_UID (and no lease)."""
    if os.geteuid() != 0:
        return UidLease(SANDBOX_UID)
    base, count = int(os.environ.get(BASE_ENV, "200000")), int(os.environ.get(COUNT_ENV, "10000"))
    d = _lock_dir()
    start = random.randrange(count)
    for i in range(count):
        uid = base + (start + i) % count
        fd = os.open(d / f"uid-{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        return UidLease(uid, fd)
    raise OSError(f"all {count} sandbox uids from {base} are in use")
