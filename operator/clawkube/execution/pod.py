"""Backend `pod`: inside a trial pod, where the container itself is the view (only the agent bundle is mounted)
and the supervisor (`clawkube pod agent`) runs unprivileged, as the pod's command.

Each exec runs as the `none` backend does (time limit, capped output, cgroups where writable, parent-death
signal), and in addition in new user, pid and mount namespaces with a /proc of its own (util-linux `unshare`;
no privilege needed where the kernel allows unprivileged user namespaces): the process tree cannot see or signal
the supervisor (it is not in its pid namespace) and cannot outlive the exec: when its first process ends, the
kernel kills every process of the namespace (`setsid` and double forks do not leave a pid namespace), and
`--kill-child` kills it if the supervisor dies. So the transcript, the workspace snapshot and the termination
message are taken after every agent process is gone. The network stays the pod's (its NetworkPolicy limits it).
Execs that must leave servers running (WildClawBench warmup: `keep_background`) run without the namespaces.
Where user namespaces are refused, and the supervisor is the container's init (pid 1), each exec is followed by a
sweep that kills every other process of its uid in the container; results say so in `limits_enforced`
("sweep"). (Anywhere else a sweep would hit the user's own processes, so none is made.)
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Optional

from .base import register
from .host import HostSandbox
from .spec import ExecResult, ExecSpec

_probe: Optional[str] = None
_own_proc = True  # False: the container refuses a fresh /proc (masked paths); the pid namespace still holds


def _unshare() -> list[str]:
    """A user namespace only when unprivileged (root needs none, and inside one it would lose access to the
    files it handed to other uids); a /proc of its own where the container allows one."""
    user = [] if os.geteuid() == 0 else ["--user", "--map-current-user"]
    proc = ["--mount", "--mount-proc"] if _own_proc else []
    return ["unshare", *user, "--pid", "--fork", "--kill-child", *proc, "--"]


def namespaces_available() -> Optional[str]:
    """Why pid (+user) namespaces cannot be made here (None: they can). Probed once per process: first with a
    /proc of its own, then without (a process in a child pid namespace still cannot name the supervisor's pid
    to signal it, and still dies with the namespace)."""
    global _probe, _own_proc
    if _probe is None:
        if shutil.which("unshare") is None:
            _probe = "util-linux unshare not found"
        else:
            for own in (True, False):
                _own_proc = own
                try:
                    r = subprocess.run([*_unshare(), "true"], capture_output=True, text=True, timeout=30)
                    _probe = "" if r.returncode == 0 else (r.stderr.strip() or f"exit code {r.returncode}")
                except (OSError, subprocess.TimeoutExpired) as e:
                    _probe = str(e)
                if not _probe:
                    break
    return _probe or None


def sweep(keep: int) -> int:
    """Kill every process of our uid but `keep` and its ancestors; returns how many were signalled."""
    uid = os.getuid()
    spare = {keep}
    p = keep
    while p > 1:
        try:
            p = int(Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
        spare.add(p)
    n = 0
    for _ in range(50):
        victims = []
        for d in Path("/proc").iterdir():
            if not d.name.isdigit() or int(d.name) in spare:
                continue
            try:
                if d.stat().st_uid == uid:
                    victims.append(int(d.name))
            except OSError:
                continue
        if not victims:
            break
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
                n += 1
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.02)
    return n


@register
class PodSandbox(HostSandbox):
    name = "pod"
    isolating = False  # paths are the container's own: the pod spec mounts the workspace where it belongs

    def exec(self, spec: ExecSpec) -> ExecResult:
        if spec.keep_background:
            return super().exec(spec)
        if namespaces_available() is None:
            r = super().exec(spec.model_copy(update={"argv": [*_unshare(), *spec.argv]}))
            r.limits_enforced.append("pid-namespace")
            return r
        r = super().exec(spec)
        if os.getpid() == 1:
            sweep(os.getpid())
            r.limits_enforced.append("sweep")
        return r

    def close(self) -> None:
        try:
            super().close()
        finally:
            if namespaces_available() is not None and os.getpid() == 1:
                sweep(os.getpid())
