"""Backend `none`: processes run on the host, seeing the whole machine and its network (no firewall; results
record `firewall: none`), as the runner's own user. What it still does: the time limit, capped output, cgroup
limits and kill-everything when cgroups are writable, and `setpriv --pdeathsig` so a process dies with the runner. Mount targets cannot be honoured: the command runs in the mount's host folder, and paths
inside argv and env are the caller's business (the trial code hands host paths to this backend).
"""
from __future__ import annotations

import itertools
import os
import secrets
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Optional

from . import view
from .base import Sandbox, register
from .cgroups import Group, runner_group
from .process import run_tree
from .spec import ExecResult, ExecSpec, User


@register
class HostSandbox(Sandbox):
    name = "none"
    isolating = False

    def __init__(self, spec):
        super().__init__(spec)
        self._group: Optional[Group] = None
        self._counter = itertools.count(1)
        self._open = False

    def open(self) -> None:
        root = runner_group()
        self._group = root.child(f"{self.spec.name}-{secrets.token_hex(4)}") if root is not None else None
        self._open = True

    def _prefix(self, user: User) -> list[str]:
        """Dies with the runner. (The process keeps the runner's uid: without a private view, a lower uid would
        only stop it from reading the folders it is given.)"""
        return ["setpriv", "--pdeathsig", "KILL", "--"] if shutil.which("setpriv") else []

    def exec(self, spec: ExecSpec) -> ExecResult:
        if not self._open:
            raise RuntimeError("exec on a sandbox that is not open")
        group = self._group.child(f"x{next(self._counter)}", spec.limits) if self._group is not None else None
        tools = self.spec.tools if self.spec.tools is not None else view.tool_folders()
        env = {"PATH": view.sandbox_path(tools), **spec.env}
        try:
            return run_tree([*self._prefix(spec.user), *spec.argv], env=env, cwd=Path(spec.cwd),
                            limits=spec.limits, group=group, stdin=spec.stdin, stdout=spec.stdout, stderr=spec.stderr,
                            keep_background=spec.keep_background, backend=self.name)
        finally:
            if group is not None and not spec.keep_background:
                group.remove()

    def close(self) -> None:
        if self._group is not None:
            self._group.remove()
            self._group = None
        self._open = False


class Spawned:
    """A long-running host process started by the runner (a trial's mock service), tied to the runner: it runs in
    a cgroup of its own under the runner's (so the reaper kills it and all it started if the runner dies) with
    SIGKILL as its parent-death signal. `stop()` ends it and everything it started."""

    def __init__(self, argv: list[str], *, name: str, **popen_kwargs):
        root = runner_group()
        self.group = root.child(f"{name}-{secrets.token_hex(4)}") if root is not None else None
        pre = ["setpriv", "--pdeathsig", "KILL", "--"] if shutil.which("setpriv") else []
        full = [*pre, *argv]
        if self.group is not None:
            full = self.group.enter_argv(full)
        self.proc = subprocess.Popen(full, start_new_session=True, **popen_kwargs)

    def stop(self, grace: float = 3.0) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                self.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                pass
        if self.group is not None:
            self.group.remove()
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()
