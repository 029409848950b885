"""How the trial lifecycle uses the execution interface (`clawkube.execution`).

- `AgentBox`: the sandbox of one agent-side run (a trial's warmup + agent, or a skill-writing phase). It sees the
  workspace (at the benchmark's mount point, e.g. /tmp_workspace, or where it is), its HOME and skills folders,
  a private /tmp (a tmpfs: what it holds, the mount points of folders under /tmp included, goes with the
  sandbox), read-only system folders and tool folders, nothing else; its network is loopback plus the
  trial's services and the model API. It runs as a uid leased for this run alone. Warmup runs as root inside,
  over a private writable overlay of the system folders, and the servers it starts in the background keep
  running (on the sandbox's loopback) for the agent.
- `run_grading`: a one-shot sandbox for a grader or an env-snapshot probe: unprivileged, seeing its grading
  workspace and the named grading inputs only, with the judge as its only endpoint.
`Isolation` carries the run-level choices: backend (`mode`), resources, endpoints.
"""
from __future__ import annotations

import os
import re
import site
import sys
from pathlib import Path
from typing import Optional, Union

from pydantic import BaseModel, Field

from .. import execution as ex
from ..execution import ExecResult, Limits, Mount, User
from .workspace import chown_tree

SANDBOX_UID = ex.SANDBOX_UID
ALLOW_ENV = "CLAWKUBE_SANDBOX_ALLOW"  # more endpoints agents may reach: comma-separated URLs or host:port
AGENT_PIDS, GRADER_PIDS = 1024, 512
AGENT_OUTPUT = 64 * ex.spec.MiB  # bytes of agent stdout (and of stderr) kept; the rest is counted and dropped
GRADER_OUTPUT = 4 * ex.spec.MiB
WARMUP_TIMEOUT = 120.0
_ALIASES = {"namespace": "bwrap"}  # the sandbox mode of earlier versions


class Isolation(BaseModel):
    """How agent-side and grading processes are run."""

    mode: str = "bwrap"  # the execution backend (execution/base.py): bwrap | none | a registered one
    memory: Optional[int] = None  # bytes per process tree (spec.resources.memory)
    cpu: Optional[float] = None  # cores (spec.resources.cpu)
    pids: int = AGENT_PIDS
    agent_endpoints: list[str] = Field(default_factory=list)  # the model API (besides the trial's services)
    judge_endpoints: list[str] = Field(default_factory=list)  # what graders may reach
    hidden: list[Path] = Field(default_factory=list)  # unused by allowlist backends (kept for older callers)

    @property
    def isolating(self) -> bool:
        return ex.backend(self.mode).isolating


def resolve_mode(requested: str = "auto") -> str:
    """The backend name for `--sandbox` (auto | bwrap | none | namespace = bwrap); RuntimeError if unavailable."""
    return ex.resolve(_ALIASES.get(requested, requested))


def namespace_mode_available() -> bool:
    return ex.backend("bwrap").unavailable() is None


def give_to_sandbox_user(*paths: Path, uid: int = SANDBOX_UID) -> None:
    """Let the sandbox uid write these folders (no-op when not root). Links are changed, never followed."""
    if os.geteuid() != 0:
        return
    for root in paths:
        chown_tree(root, uid)


def base_env(home: Union[Path, str], extra: dict[str, str]) -> dict[str, str]:
    env = {"HOME": str(home), "LANG": "C.UTF-8", "TMPDIR": "/tmp"}
    if os.environ.get(ex.view.LEGACY_PATH_ENV):
        env["PATH"] = os.environ[ex.view.LEGACY_PATH_ENV]
    env.update(extra)
    return env


def _dedup(paths: list[Path]) -> list[Path]:
    out: list[Path] = []
    for p in paths:
        if not ex.view.in_system(p) and not any(p.is_relative_to(o) for o in out):
            out = [o for o in out if not o.is_relative_to(p)] + [p]
    return out


def agent_read_paths(agent) -> list[Path]:
    """Folders an agent adapter's installed harness needs to see (its install), known before it is invoked."""
    installed = getattr(agent, "installed", None)
    if installed is None:
        return []
    try:
        return list(getattr(installed(), "read_paths", []) or [])
    except Exception:  # not installed: the invocation reports it as the agent's error
        return []


def _endpoints(urls: list[str]) -> list[ex.Endpoint]:
    out: list[ex.Endpoint] = []
    for u in urls:
        try:
            e = ex.Endpoint.parse(u)
        except ValueError:
            continue
        if e not in out:
            out.append(e)
    return out


def extra_allowed() -> list[str]:
    return [u.strip() for u in os.environ.get(ALLOW_ENV, "").split(",") if u.strip()]


class AgentBox:
    """One agent-side sandbox (see the module doc). Use as a context manager, or call close()."""

    def __init__(self, iso: Isolation, *, workspace: Path, home: Path, skills: Path, scratch: Path,
                 workspace_mount: Optional[str] = None, services: Optional[dict[str, str]] = None,
                 system_overlay: bool = False, name: str = "agent", read_paths: Optional[list[Path]] = None,
                 skills_in_home: Optional[str] = None, initial: Optional[tuple[Path, str]] = None):
        self.iso = iso
        self.workspace, self.home, self.skills = workspace, home, skills
        self.lease = ex.claim_uid()
        try:
            give_to_sandbox_user(*self.owned(), uid=self.lease.uid)
            self.mounts = [Mount(source=workspace, target=workspace_mount, writable=True),
                           Mount(source=home, writable=True)]
            if initial is not None and initial[0].is_dir():  # the workspace as handed over (read-only)
                self.mounts.append(Mount(source=initial[0], target=initial[1]))
            if skills.is_dir() and not skills.is_relative_to(workspace):  # else: seen through the workspace
                self.mounts.append(Mount(source=skills, writable=True, target=f"{home}/{skills_in_home}"
                                         if skills_in_home else None))
            allow = _endpoints([*iso.agent_endpoints, *(services or {}).values(), *extra_allowed()])
            self.tools = ex.view.tool_folders() + [p.resolve() for p in read_paths or [] if p.is_dir()]
            spec = ex.SandboxSpec(mounts=self.mounts, network=ex.Network(allow=allow), uid=self.lease.uid,
                                  system_overlay=scratch / "system-overlay" if system_overlay else None, name=name,
                                  tools=_dedup(self.tools))
            self.box = ex.open_sandbox(iso.mode, spec)
        except BaseException:
            self.lease.release()
            raise
        self.isolating = self.box.isolating

    def inside(self, host: Path) -> str:
        """Where a host path of one of the mounts appears inside the sandbox."""
        if not self.isolating:
            return str(host)
        for m in self.mounts:
            if host == m.source or host.is_relative_to(m.source):
                rest = host.relative_to(m.source).as_posix()
                return m.inside if rest == "." else f"{m.inside.rstrip('/')}/{rest}"
        raise ValueError(f"{host} is not visible in the sandbox")

    def owned(self) -> list[Path]:
        """The folders the sandbox's uid owns (those that exist)."""
        return [d for d in (self.workspace, self.home, self.skills) if d.is_dir()]

    def missing(self, paths: list[Path]) -> list[Path]:
        """Which of these host folders a process in this sandbox cannot see."""
        if not self.isolating:
            return []
        seen = [*self.tools, *(m.source for m in self.mounts)]
        return [p for p in paths if not ex.view.in_system(p.resolve())
                and not any(p.resolve().is_relative_to(t) for t in seen)]

    @property
    def workdir(self) -> str:
        return self.inside(self.workspace)

    def run(self, argv: list[str], *, env: dict[str, str], timeout: float, user: User = User.SANDBOX,
            stdin: Union[str, bytes, None] = None, stdout: Optional[Path] = None, stderr: Optional[Path] = None,
            keep_background: bool = False, cwd: Optional[str] = None) -> ExecResult:
        limits = Limits(timeout=timeout, memory=self.iso.memory, pids=self.iso.pids, cpu=self.iso.cpu,
                        output=AGENT_OUTPUT)
        data = stdin.encode() if isinstance(stdin, str) else stdin
        return self.box.exec(ex.ExecSpec(argv=argv, cwd=cwd or self.workdir, env=env, user=user, limits=limits,
                                         stdin=data, stdout=stdout, stderr=stderr, keep_background=keep_background))

    def services(self) -> list[ex.Endpoint]:
        """Servers left listening on the sandbox's loopback (by its warmup), reachable from a grader's sandbox."""
        return self.box.services()

    def close(self) -> None:
        try:
            self.box.close()
        finally:
            self.lease.release()

    def __enter__(self) -> "AgentBox":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_TRAP = 'trap \'echo "clawkube-warmup-failed: line $LINENO: $BASH_COMMAND" >&2\' ERR\n'
_FAILED = re.compile(r"clawkube-warmup-failed: line (\d+): (.*)")


def warmup(box: AgentBox, lines: list[str], env: dict[str, str], log: Path,
           timeout: float = WARMUP_TIMEOUT) -> Optional[str]:
    """Run the task's warmup as root inside the agent's sandbox (one bash script, stops at the first failing
    line; background commands keep running). Returns None, or what failed, naming the line."""
    script = _TRAP + "\n".join(lines) + "\n"
    r = box.run(["bash", "-e", "-c", script, "clawkube-warmup"], env=env, timeout=timeout, user=User.ROOT,
                stdout=log.with_suffix(".stdout"), stderr=log, keep_background=True)
    if r.ok:
        return None
    m = None
    for m in _FAILED.finditer(r.stderr):
        pass
    where = ""
    if m is not None:
        n = int(m.group(1)) - 1  # the trap is line 1
        text = lines[n - 1] if 1 <= n <= len(lines) else m.group(2)
        where = f" at line {n}: {text.strip()!r}"
    detail = r.stderr
    detail = _FAILED.sub("", detail).strip()[-500:]
    return f"warmup failed{where} ({r.describe()}){': ' + detail if detail else ''}"


def run_grading(iso: Isolation, argv: list[str], *, cwd: str, env: dict[str, str], timeout: float,
                workspace: Path, workspace_mount: Optional[str], inputs: list[Path], writable: list[Path],
                stdout: Optional[Path] = None, stderr: Optional[Path] = None,
                name: str = "grader", views: list[Mount] = (), reach: list[ex.Endpoint] = ()) -> ExecResult:
    """A grader or probe in a one-shot sandbox: `workspace` (writable, at `workspace_mount` or where it is),
    `inputs` read-only and `writable` folders at their host paths, a private /tmp (the backend's own), the Python
    that runs clawkube and the clawkube package (for the grading process), the judge as the only endpoint.
    `views`: more read-only folders at fixed paths (the benchmark's trial mounts); `reach`: servers in the agent's
    still open sandbox (Sandbox.services) the grader may query, at the same loopback addresses."""
    with ex.claim_uid() as lease:
        give_to_sandbox_user(workspace, *writable, uid=lease.uid)
        mounts = [Mount(source=workspace, target=workspace_mount, writable=True),
                  *(Mount(source=p) for p in inputs if p.exists()),
                  *(Mount(source=p, writable=True) for p in writable),
                  *(v for v in views if v.source.exists())]
        allow = _endpoints(iso.judge_endpoints)
        allow += [e for e in reach if all(a.port != e.port or not a.loopback for a in allow)]
        spec = ex.SandboxSpec(mounts=mounts, network=ex.Network(allow=allow),
                              uid=lease.uid, name=name)
        limits = Limits(timeout=timeout, memory=iso.memory, pids=GRADER_PIDS, cpu=iso.cpu, output=GRADER_OUTPUT)
        if not ex.backend(iso.mode).isolating:  # host paths only
            cwd = str(_host_cwd(cwd, workspace, workspace_mount))
        return ex.run_once(iso.mode, spec, ex.ExecSpec(argv=argv, cwd=cwd, env=env, limits=limits, stdout=stdout,
                                                        stderr=stderr))


def _host_cwd(cwd: str, workspace: Path, mount: Optional[str]) -> Path:
    if mount and (cwd == mount or cwd.startswith(mount.rstrip("/") + "/")):
        return workspace / cwd[len(mount):].lstrip("/")
    return Path(cwd)


def workspace_inside(iso: Isolation, workspace: Path, mount: Optional[str]) -> str:
    """The grading workspace's path as a grader of this backend sees it."""
    return mount if mount and ex.backend(iso.mode).isolating else str(workspace)


def package_mount() -> tuple[Path, str]:
    """The clawkube package folder and the PYTHONPATH entry under which a sandboxed process imports it."""
    pkg = Path(__file__).resolve().parents[1]
    return pkg, str(pkg.parent)


def site_paths() -> list[str]:
    """The import folders `site` gave this interpreter (site-packages and the folders its .pth files name), in
    order: the PYTHONPATH of a process started with `python -S`, which then imports the same packages without
    running the .pth files' start-up code (a large part of an interpreter's start: the grading process starts
    once per trial). Packages that need a .pth file's code at start-up (old-style namespace packages) are not
    supported in grading processes."""
    sites = [*site.getsitepackages(), site.getusersitepackages()]
    first = next((i for i, p in enumerate(sys.path) if p in sites), len(sys.path))
    return [p for p in sys.path[first:] if p and os.path.isdir(p)]


def run(argv: list[str], *, cwd: Path, env: dict[str, str], timeout: float, mode: str = "auto",
        hidden: list[Path] = (), stdin: Optional[str] = None, read_paths: Optional[list[Path]] = None) -> ExecResult:
    """One process in a one-shot sandbox with only the system and tool folders (+ `read_paths`, and the folders
    on env's PATH) visible, `cwd` writable: for checks such as `clawkube doctor` running a harness as the sandbox
    user. (`hidden` is ignored: nothing outside the allowlist is visible anyway.)"""
    name = resolve_mode(mode)
    seen = [Path(p) for p in env.get("PATH", "").split(os.pathsep) if p and Path(p).is_dir()]
    if argv and os.path.isabs(argv[0]):
        seen += [Path(argv[0]).parent, Path(os.path.realpath(argv[0])).parent]
    tools = _dedup(ex.view.tool_folders() + [p.resolve() for p in read_paths or []] +
                   [_install_root(p.resolve()) for p in seen])
    with ex.claim_uid() as lease:
        mounts = [] if cwd == Path("/tmp") else [Mount(source=cwd, writable=True)]  # /tmp: the sandbox's own
        spec = ex.SandboxSpec(mounts=mounts, uid=lease.uid, tools=tools, name="check")
        data = stdin.encode() if stdin is not None else None
        return ex.run_once(name, spec, ex.ExecSpec(argv=argv, cwd=str(cwd), env=env, stdin=data,
                                                    limits=Limits(timeout=timeout, pids=AGENT_PIDS,
                                                                  output=GRADER_OUTPUT)))


def _install_root(p: Path) -> Path:
    """The install a bin folder belongs to: the prefix holding node_modules, a virtualenv above bin/."""
    if "node_modules" in p.parts:
        return Path(*p.parts[:p.parts.index("node_modules")])
    return p.parent if p.name == "bin" else p
