"""Backend `bwrap`: a sandbox made by bubblewrap (Debian `bubblewrap`), entered with util-linux `nsenter`/`setpriv`.

`open` starts `bwrap` with new mount, pid, network, ipc and uts namespaces and the allowlist view
(execution/view.py), holding the namespaces with a `sleep` that does nothing else; `--die-with-parent` ties it to
the runner. Each `exec` enters those namespaces with `nsenter`, changes to the sandbox's uid (or uid 0) with
`setpriv` (no capabilities, no_new_privs, no supplementary groups) and runs the command, in a cgroup of its own
that carries its limits and is killed at its end (execution/cgroups.py). `close` kills the sandbox's cgroup: every
process ever started in it. A one-shot sandbox (`run_once`: graders, probes, checks) without network forwards runs
its command as bwrap's own child instead (`run_one`): same view, namespaces and uid switch, one cgroup, and three
fewer processes to start.

With `SandboxSpec.system_overlay`, /usr, /etc and the tool folders are overlayfs mounts (lower: the host folder,
upper: a folder under `system_overlay`), mounted by util-linux `unshare` + `mount` in a private mount namespace
around bwrap (bubblewrap 0.8 has no overlay option), so root inside can install packages without touching the
host, and a later sandbox given the same folder sees what it installed.

Needs root (the per-trial uid switch, the cgroups and the network forwarding all do).
"""
from __future__ import annotations

import itertools
import json
import os
import secrets
import select
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Optional

from . import view
from .base import Sandbox, SandboxUnavailable, register
from .cgroups import Group, runner_group
from .forward import Forwarder, listening_ports
from .process import run_tree
from .spec import Endpoint, ExecResult, ExecSpec, User

START_TIMEOUT = 30.0
ROOT_CAPS = "+chown,+dac_override,+fowner,+fsetid,+setuid,+setgid,+kill"
HOLDER = ["/bin/sh", "-c", "echo ready && exec sleep infinity"]
SETPRIV_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP")  # a one-shot command's setpriv: uid switch, bounding set
_probe: Optional[str] = None


def _probe_bwrap() -> Optional[str]:
    """Run a trivial sandbox once; the reason it failed, or None."""
    global _probe
    if _probe is None:
        try:
            r = subprocess.run(["bwrap", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--die-with-parent",
                                *_system_args(None), "--proc", "/proc", "--dev", "/dev", "--", "true"],
                               capture_output=True, text=True, timeout=30)
            _probe = "" if r.returncode == 0 else (r.stderr.strip() or f"exit code {r.returncode}")
        except (OSError, subprocess.TimeoutExpired) as e:
            _probe = str(e)
    return _probe or None


def _parents(targets: list[Path], made: Optional[set[str]] = None) -> list[str]:
    """`--dir` (mode 0755) for every missing ancestor of the targets: bwrap would make them 0700, which the
    sandbox uid could not pass through."""
    made = made if made is not None else set()
    args: list[str] = []
    for t in targets:
        for a in reversed(t.parents):
            s = str(a)
            if s == "/" or s in made or view.in_system(a):
                continue
            made.add(s)
            args += ["--perms", "0755", "--dir", s]
    return args


def _escaped(p: Path) -> str:
    return str(p).strip("/").replace("/", "_") or "root"


def _system_args(merged: Optional[dict[str, Path]]) -> list[str]:
    """The read-only system view; `merged` maps folders to their overlay mounts (root writes there)."""
    args: list[str] = []
    for d in view.SYSTEM_LINKS:
        p = Path(d)
        if p.is_symlink():
            args += ["--symlink", os.readlink(p), d]
        elif p.is_dir():
            args += ["--ro-bind", d, d]
    for d in view.SYSTEM_DIRS:
        if merged and d in merged:
            args += ["--bind", str(merged[d]), d]
        elif Path(d).is_dir():
            args += ["--ro-bind", d, d]
    for m in view.ETC_MASKED:
        p = Path(m)
        if p.is_dir() and not p.is_symlink():
            args += ["--tmpfs", m, "--remount-ro", m]
        elif os.path.lexists(m):
            args += ["--ro-bind", "/dev/null", m]
    return args


def _proc_covers() -> list[str]:
    """Kernel knobs a uid-0 process may write without any capability (sysctls, sysrq): read-only / absent.
    (bubblewrap means to cover them itself but does not on every kernel.)"""
    args = ["--ro-bind", "/proc/sys", "/proc/sys"] if Path("/proc/sys").is_dir() else []
    if Path("/proc/sysrq-trigger").exists():
        args += ["--ro-bind", "/dev/null", "/proc/sysrq-trigger"]
    return args


def _tool_args(merged: Optional[dict[str, Path]], tools: list[Path], made: set[str]) -> list[str]:
    """The tool folders, read-only (or their overlays) at their own paths; after /tmp, which may hold one."""
    args: list[str] = []
    for t in tools:
        d = str(t)
        if not t.is_dir():
            continue
        args += _parents([t], made)
        args += ["--bind", str(merged[d]), d] if merged and d in merged else ["--ro-bind", d, d]
        made.add(d)
    return args


@register
class BwrapSandbox(Sandbox):
    name = "bwrap"

    @classmethod
    def unavailable(cls) -> Optional[str]:
        if os.geteuid() != 0:
            return "needs root (each sandbox runs as its own uid, in its own cgroup and network namespace)"
        for tool, pkg in (("bwrap", "bubblewrap"), ("nsenter", "util-linux"), ("setpriv", "util-linux"),
                          ("unshare", "util-linux")):
            if shutil.which(tool) is None:
                return f"{tool} not found (Debian package {pkg})"
        return _probe_bwrap()

    def __init__(self, spec):
        super().__init__(spec)
        self._proc: Optional[subprocess.Popen] = None
        self._pid: Optional[int] = None
        self._dir: Optional[Path] = None
        self._group: Optional[Group] = None
        self._fwd: Optional[Forwarder] = None
        self._counter = itertools.count(1)
        self.tools = spec.tools if spec.tools is not None else view.tool_folders()
        self.path = view.sandbox_path(self.tools)

    # ---- open
    def open(self) -> None:
        if self._pid is not None:
            return
        self._dir = Path(tempfile.mkdtemp(prefix="clawkube-sandbox-"))
        root = runner_group()
        self._group = root.child(f"{self.spec.name}-{secrets.token_hex(4)}") if root is not None else None
        try:
            self._start()
            if self.spec.network.allow:
                self._fwd = Forwarder(f"/proc/{self._pid}/ns/net", self.spec.network.allow)
        except BaseException:
            self.close()
            raise

    def _files(self) -> list[str]:
        """passwd/group that know the sandbox uid."""
        uid = self.spec.uid
        (self._dir / "passwd").write_text(view.passwd_with(uid, "/tmp"))
        (self._dir / "group").write_text(view.group_with(uid))
        return ["--ro-bind", str(self._dir / "passwd"), "/etc/passwd", "--ro-bind", str(self._dir / "group"),
                "/etc/group"]

    def _overlays(self) -> tuple[dict[str, Path], list[str]]:
        """Overlay mount points and the `unshare` prelude that mounts them ({} and [] without an overlay)."""
        ov = self.spec.system_overlay
        if ov is None:
            return {}, []
        merged: dict[str, Path] = {}
        spec: list[str] = []
        for d in [*view.SYSTEM_DIRS, *map(str, self.tools)]:
            if not Path(d).is_dir():
                continue
            if any(c in d for c in ",:\\"):
                raise SandboxUnavailable(f"cannot overlay {d}: ',', ':' or '\\' in its path")
            upper, work = ov / "upper" / _escaped(Path(d)), ov / "work" / _escaped(Path(d))
            mnt = self._dir / "merged" / _escaped(Path(d))
            for p in (upper, work, mnt):
                p.mkdir(parents=True, exist_ok=True)
            merged[d] = mnt
            spec += [d, str(upper), str(work), str(mnt)]
        script = ('while [ "$1" != -- ]; do mount -t overlay clawkube -o "lowerdir=$1,upperdir=$2,workdir=$3" "$4" '
                  '|| exit 125; shift 4; done; shift; exec "$@"')
        return merged, ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", script,
                        "clawkube-overlay", *spec, "--"]

    def _bwrap_args(self, merged: dict[str, Path], keep_caps: tuple[str, ...] = (), chdir: str = "/") -> list[str]:
        args = ["--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net", "--unshare-ipc",
                "--unshare-uts", "--hostname", self.spec.name[:63] or "sandbox", "--cap-drop", "ALL",
                *(a for c in keep_caps for a in ("--cap-add", c)),
                *_system_args(merged), *self._files(),
                "--proc", "/proc", *_proc_covers(), "--dev", "/dev", "--perms", "1777", "--tmpfs", "/dev/shm"]
        tmp = [m for m in self.spec.mounts if m.inside == "/tmp"]
        if tmp:
            args += ["--bind" if tmp[0].writable else "--ro-bind", str(tmp[0].source), "/tmp"]
        else:
            args += ["--perms", "1777", "--tmpfs", "/tmp"]
        made: set[str] = {"/tmp"}
        args += _tool_args(merged, self.tools, made)
        rest = [m for m in self.spec.mounts if m.inside != "/tmp"]
        for m in sorted(rest, key=lambda m: m.inside.count("/")):  # parents before children
            if not m.source.exists():
                raise SandboxUnavailable(f"mount source {m.source} does not exist")
            args += _parents([Path(m.inside)], made)
            args += ["--bind" if m.writable else "--ro-bind", str(m.source), m.inside]
            made.add(m.inside)
        return args + ["--chdir", chdir]

    def _start(self) -> None:
        merged, prelude = self._overlays()
        info_r, info_w = os.pipe()
        argv = [*prelude, "bwrap", *self._bwrap_args(merged), "--info-fd", str(info_w), "--", *HOLDER]
        if self._group is not None:
            argv = self._group.enter_argv(argv)
        self._proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      env={"PATH": view.DEFAULT_PATH}, pass_fds=(info_w,), start_new_session=True)
        os.close(info_w)
        try:
            info = _read_all(info_r, START_TIMEOUT)
            ready = _read_line(self._proc.stdout, START_TIMEOUT)
        finally:
            os.close(info_r)
        if ready != b"ready\n":
            self._proc.kill()
            err = self._proc.stderr.read().decode(errors="replace").strip()
            self._proc.wait()
            raise SandboxUnavailable(f"bwrap could not start the sandbox: {err or 'no output'}")
        self._pid = json.loads(info)["child-pid"]
        self._proc.stdout.close()
        self._proc.stderr.close()

    # ---- one process tree, start to end (run_once: graders, probes, checks)
    def run_one(self, spec: ExecSpec) -> ExecResult:
        """The command is bwrap's own child: no holder process, no `nsenter`, one cgroup (the sandbox's, with
        the exec's limits). The same view, namespaces, uid switch (setpriv inside, as in `exec`; bwrap keeps only
        the capabilities setpriv needs for it, which setpriv then drops) and kill-everything-at-the-end. Sandboxes
        with network forwards (their forwarder needs the namespace before the command runs) or run as root take
        the open/exec/close path."""
        if self.spec.network.allow or spec.user == User.ROOT or spec.keep_background:
            return super().run_one(spec)
        self._dir = Path(tempfile.mkdtemp(prefix="clawkube-sandbox-"))
        root = runner_group()
        group = root.child(f"{self.spec.name}-{secrets.token_hex(4)}", spec.limits) if root is not None else None
        try:
            merged, prelude = self._overlays()
            args = self._bwrap_args(merged, SETPRIV_CAPS, chdir=spec.cwd)
            argv = [*prelude, "bwrap", *args, "--", *self._drop(spec.user), *spec.argv]
            env = {"PATH": self.path, **spec.env}
            r = run_tree(argv, env=env, cwd=Path("/"), limits=spec.limits, group=group, stdin=spec.stdin,
                         stdout=spec.stdout, stderr=spec.stderr, backend=self.name)
        finally:
            if group is not None:
                group.remove()
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
        if r.exit_code == 1 and r.stderr.startswith("bwrap: ") and not r.stdout:
            raise SandboxUnavailable(f"bwrap could not start the sandbox: {r.stderr.strip()[:500]}")
        return r

    def services(self) -> list[Endpoint]:
        if self._pid is None:
            return []
        own = self._fwd.ports if self._fwd is not None else set()
        netns = f"/proc/{self._pid}/ns/net"
        return [Endpoint(host="127.0.0.1", port=p, netns=netns) for p in listening_ports(self._pid) if p not in own]

    # ---- exec
    def _drop(self, user: User) -> list[str]:
        """setpriv to the exec's user. Root keeps the file capabilities a container's root has (Docker's default
        set, minus what touches the network or devices), so it can work on the files of the sandbox's uid; no
        CAP_SYS_ADMIN or anything that reaches beyond the sandbox's own mounts."""
        if user == User.ROOT:
            return ["setpriv", "--reuid=0", "--regid=0", "--clear-groups", "--inh-caps=-all",
                    f"--bounding-set=-all,{ROOT_CAPS}", "--no-new-privs", "--"]
        uid = self.spec.uid
        return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all",
                "--bounding-set=-all", "--no-new-privs", "--"]

    def exec(self, spec: ExecSpec) -> ExecResult:
        if self._pid is None:
            raise RuntimeError("exec on a sandbox that is not open")
        group = self._group.child(f"x{next(self._counter)}", spec.limits) if self._group is not None else None
        argv = ["nsenter", "-t", str(self._pid), "-m", "-n", "-p", "-i", "-u", "--root", f"--wdns={spec.cwd}", "--",
                *self._drop(spec.user), *spec.argv]
        env = {"PATH": self.path, **(self._fwd.env() if self._fwd else {}), **spec.env}
        try:
            return run_tree(argv, env=env, cwd=Path("/"), limits=spec.limits, group=group, stdin=spec.stdin,
                            stdout=spec.stdout, stderr=spec.stderr, keep_background=spec.keep_background,
                            backend=self.name, kill_extra=None if group and group.paths else
                            lambda: self._kill_user(spec.user))
        finally:
            if group is not None and not spec.keep_background:
                group.remove()

    def _kill_user(self, user: User) -> None:
        """Without cgroups: kill every process of the exec's uid in the sandbox (root: the whole sandbox)."""
        if user == User.ROOT:
            self.close()
            return
        subprocess.run(["nsenter", "-t", str(self._pid), "-m", "-p", "--root", "--", *self._drop(user),
                        "kill", "-9", "-1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10)

    # ---- close
    def close(self) -> None:
        if self._fwd is not None:
            self._fwd.close()
            self._fwd = None
        if self._group is not None:
            self._group.remove()
        if self._pid is not None:
            try:
                os.kill(self._pid, signal.SIGKILL)  # the namespace's init: takes every process in it along
            except ProcessLookupError:
                pass
            self._pid = None
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None


def _read_all(fd: int, timeout: float) -> bytes:
    data = b""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return data
        chunk = os.read(fd, 65536)
        if not chunk:
            return data
        data += chunk
        try:
            json.loads(data)
            return data
        except ValueError:
            continue


def _read_line(f, timeout: float) -> bytes:
    if not select.select([f], [], [], timeout)[0]:
        return b""
    return f.readline()
