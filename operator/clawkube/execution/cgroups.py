"""cgroups for sandboxed process trees: limits (memory, pids, cpu), kill-everything, and out-of-memory detection.

Every process tree gets a group in each usable hierarchy, under one group per runner process
(`clawkube-<pid>-<random>`), nested as runner / sandbox / exec. Hierarchies:
- cgroup v2 (the unified mount, /sys/fs/cgroup or /sys/fs/cgroup/unified): `cgroup.kill` kills a whole tree at
  once; memory.max / pids.max / cpu.max when those controllers are enabled there;
- cgroup v1 `memory`, `pids`, `cpu` mounts (hybrid hosts): memory.limit_in_bytes (+ memsw), pids.max,
  cpu.cfs_quota_us.
A process joins its groups before it executes anything (`Group.enter_argv`: a tiny `sh` prelude writes its own pid
into each `cgroup.procs`, then execs the command), so nothing it starts can escape them. Without write access to
any hierarchy (not root, or a container without cgroup access) `Group` objects are inert and results say which
limits were not enforced.
The runner's group is removed by a reaper process when the runner dies (execution/reaper.py).
"""
from __future__ import annotations

import os
import secrets
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from .spec import Limits

CPU_PERIOD_US = 100_000


@dataclass(frozen=True)
class Hierarchy:
    kind: str  # "v2" | "memory" | "pids" | "cpu"
    base: Path  # our own group in this hierarchy: new groups go below it
    controllers: frozenset[str]  # limits this hierarchy can apply

    def usable(self) -> bool:
        return os.access(self.base, os.W_OK)


def _own_paths() -> dict[str, str]:
    """hierarchy key ("" for v2, else a controller name) -> this process's group path."""
    out: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        _, ctrls, path = line.split(":", 2)
        for c in ctrls.split(",") if ctrls else [""]:
            out[c] = path
    return out


def _mounts() -> list[tuple[str, Path, set[str]]]:
    """(fstype, mount point, options) of cgroup mounts."""
    out = []
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        parts = line.split()
        if len(parts) >= 4 and parts[2] in ("cgroup", "cgroup2"):
            out.append((parts[2], Path(parts[1]), set(parts[3].split(","))))
    return out


def discover() -> list[Hierarchy]:
    own = _own_paths()
    found: list[Hierarchy] = []
    for fstype, mnt, opts in _mounts():
        if fstype == "cgroup2":
            base = mnt / own.get("", "/").lstrip("/")
            try:
                enabled = set((base / "cgroup.subtree_control").read_text().split())
            except OSError:
                enabled = set()
            found.append(Hierarchy("v2", base, frozenset(enabled & {"memory", "pids", "cpu"})))
        else:
            for c in ("memory", "pids", "cpu"):
                if c in opts:
                    found.append(Hierarchy(c, mnt / own.get(c, "/").lstrip("/"), frozenset({c})))
    return [h for h in found if h.base.is_dir()]


_lock = threading.Lock()
_root: Optional["Group"] = None


def runner_group() -> Optional["Group"]:
    """This process's top group (created on first use, with its reaper); None when no hierarchy is writable."""
    global _root
    with _lock:
        if _root is None:
            hs = [h for h in discover() if h.usable()]
            if not hs:
                return None
            name = f"clawkube-{os.getpid()}-{secrets.token_hex(3)}"
            g = Group(hs, {h.kind: h.base / name for h in hs})
            if not g.create():
                return None
            from .reaper import start_reaper

            start_reaper([str(p) for p in g.paths.values()])
            _root = g
        return _root


class Group:
    """One process tree's group in every usable hierarchy."""

    def __init__(self, hierarchies: list[Hierarchy], paths: dict[str, Path]):
        self.hierarchies, self.paths = hierarchies, paths
        self.enforced: list[str] = []

    def child(self, name: str, limits: Optional[Limits] = None) -> "Group":
        g = Group(self.hierarchies, {k: p / name for k, p in self.paths.items()})
        if g.create() and limits is not None:
            g.apply(limits)
        return g

    def create(self) -> bool:
        made = {}
        for k, p in self.paths.items():
            try:
                p.mkdir()
                made[k] = p
            except FileExistsError:
                made[k] = p
            except OSError:
                continue
        self.paths = made
        return bool(made)

    def _write(self, kind: str, file: str, value: str) -> bool:
        p = self.paths.get(kind)
        if p is None:
            return False
        try:
            (p / file).write_text(value)
            return True
        except OSError:
            return False

    def apply(self, limits: Limits) -> None:
        v2 = next((h for h in self.hierarchies if h.kind == "v2"), None)
        v2c = v2.controllers if v2 else frozenset()
        if limits.memory is not None:
            ok = (self._write("v2", "memory.max", str(limits.memory)) and
                  (self._write("v2", "memory.swap.max", "0") or True)) if "memory" in v2c else False
            if not ok and self._write("memory", "memory.limit_in_bytes", str(limits.memory)):
                self._write("memory", "memory.memsw.limit_in_bytes", str(limits.memory))
                ok = True
            if ok:
                self.enforced.append("memory")
        if limits.pids is not None:
            if ("pids" in v2c and self._write("v2", "pids.max", str(limits.pids))) or \
                    self._write("pids", "pids.max", str(limits.pids)):
                self.enforced.append("pids")
        if limits.cpu is not None:
            quota = max(1000, int(limits.cpu * CPU_PERIOD_US))
            if ("cpu" in v2c and self._write("v2", "cpu.max", f"{quota} {CPU_PERIOD_US}")) or \
                    (self._write("cpu", "cpu.cfs_period_us", str(CPU_PERIOD_US)) and
                     self._write("cpu", "cpu.cfs_quota_us", str(quota))):
                self.enforced.append("cpu")

    def procs_files(self) -> list[str]:
        return [str(p / "cgroup.procs") for p in self.paths.values()]

    def enter_argv(self, argv: list[str]) -> list[str]:
        """argv prefixed so that the process joins this group before it runs anything."""
        files = self.procs_files()
        if not files:
            return list(argv)
        script = 'for f; do shift; [ "$f" = -- ] && break; echo $$ > "$f" || exit 125; done; exec "$@"'
        return ["/bin/sh", "-c", script, "clawkube-cgroup", *files, "--", *argv]

    def pids(self) -> set[int]:
        out: set[int] = set()
        for p in self.paths.values():
            out |= _read_pids(p)
        return out

    def kill(self, wait: float = 5.0) -> None:
        """SIGKILL every process of the group (and of its children), and wait until they are gone."""
        v2 = self.paths.get("v2")
        deadline = time.monotonic() + wait
        pause = 0.0005
        while True:
            if v2 is not None and (v2 / "cgroup.kill").exists():
                try:
                    (v2 / "cgroup.kill").write_text("1")
                except OSError:
                    pass
            left = self._tree_pids()
            if not left:
                return
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            if time.monotonic() > deadline:
                return
            time.sleep(pause)
            pause = min(pause * 2, 0.02)

    def _tree_pids(self) -> set[int]:
        out: set[int] = set()
        for p in self.paths.values():
            for d in _subdirs(p):
                out |= _read_pids(d)
        return out

    def oom_killed(self) -> bool:
        v2 = self.paths.get("v2")
        if v2 is not None:
            ev = _kv(v2 / "memory.events")
            if ev.get("oom_kill", 0) > 0:
                return True
        mem = self.paths.get("memory")
        if mem is not None:
            if _kv(mem / "memory.oom_control").get("oom_kill", 0) > 0:
                return True
            try:
                return int((mem / "memory.failcnt").read_text()) > 0 and \
                    int((mem / "memory.max_usage_in_bytes").read_text()) >= int(
                        (mem / "memory.limit_in_bytes").read_text()) - 4096 * 16
            except (OSError, ValueError):
                return False
        return False

    def remove(self) -> None:
        """Kill what is left and remove the group (children first)."""
        self.kill()
        for p in self.paths.values():
            remove_tree(p)


def _read_pids(d: Path) -> set[int]:
    try:
        return {int(x) for x in (d / "cgroup.procs").read_text().split()}
    except (OSError, ValueError):
        return set()


def _kv(f: Path) -> dict[str, int]:
    out = {}
    try:
        for line in f.read_text().splitlines():
            k, _, v = line.partition(" ")
            if v.strip().isdigit():
                out[k] = int(v)
    except OSError:
        pass
    return out


def _subdirs(p: Path) -> list[Path]:
    """p and every folder below it, parents first (iterative; scandir's d_type, no stat per file)."""
    order: list[Path] = []
    stack = [p]
    while stack:
        d = stack.pop()
        order.append(d)
        try:
            with os.scandir(d) as it:
                stack.extend(Path(e.path) for e in it if e.is_dir(follow_symlinks=False))
        except OSError:
            pass
    return order


def remove_tree(p: Path) -> None:
    """rmdir a group and its descendants, deepest first (cgroup dirs hold no files of their own)."""
    for d in reversed(_subdirs(p)):
        pause = 0.0005
        for _ in range(200):
            try:
                d.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:  # busy: processes still exiting
                time.sleep(pause)
                pause = min(pause * 2, 0.02)
