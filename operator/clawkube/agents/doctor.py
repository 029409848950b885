"""`clawkube doctor`: can this machine run each real harness through the sandbox?

For every harness: where it is, its version against the tested range, whether its program answers `--version`
when run as the sandbox user inside the sandbox (the exit-126 case: an install the sandbox user cannot read),
Node's version where the harness needs a minimum (OpenClaw: >= 24); plus adapters that fail to load, and which
sandbox backend is available.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Optional

from pydantic import BaseModel

from . import install
from .registry import broken_adapters


class HarnessReport(BaseModel):
    name: str
    package: str
    tested: str  # the tested range, as text
    installed: bool = False
    location: Optional[str] = None
    managed: bool = False  # under the harness home
    version: Optional[str] = None
    in_range: Optional[bool] = None
    runs: Optional[bool] = None  # `--version` works for the invoking user
    sandbox_runs: Optional[bool] = None  # ... and as the sandbox user inside the sandbox (None: no sandbox here)
    node: Optional[str] = None  # Node version the harness runs on (npm harnesses)
    node_ok: Optional[bool] = None
    problems: list[str] = []

    @property
    def ok(self) -> bool:
        return not self.problems


class DoctorReport(BaseModel):
    harness_home: str
    sandbox: str  # the local sandbox backend that would be used
    sandbox_problems: list[str] = []
    harnesses: list[HarnessReport]
    broken_adapters: dict[str, str] = {}

    @property
    def ok(self) -> bool:
        return all(h.ok for h in self.harnesses) and not self.broken_adapters and not self.sandbox_problems


def _sandbox_backend() -> tuple[str, list[str]]:
    """The backend `clawkube run --sandbox auto` picks, and what is missing for an isolating one."""
    try:
        from ..execution import registry as exec_registry  # the execution interface, where it exists

        name = exec_registry.default_backend_name()  # type: ignore[attr-defined]
        return name, [] if name != "none" else ["no isolating sandbox backend: agents would run unisolated"]
    except Exception:
        pass
    from ..lifecycle import sandbox

    if sandbox.namespace_mode_available():
        return "namespace", []
    return "none", ["no namespace sandbox (needs root and util-linux unshare/setpriv): agents would run "
                    "unisolated, as the invoking user"]


def _run_as_sandbox_user(inst: install.Installed, backend: str) -> Optional[tuple[bool, str]]:
    if backend == "none":
        return None
    from ..lifecycle import sandbox

    env = {"PATH": ":".join([str(d) for d in inst.path_dirs] + install.SYSTEM_PATH), "HOME": "/tmp", "LANG": "C.UTF-8"}
    r = sandbox.run([str(inst.bin), "--version"], cwd=Path("/tmp"), env=env, timeout=90, mode="namespace")
    line = next((l.strip() for l in (r.stdout + "\n" + r.stderr).splitlines() if l.strip()), "")
    return r.exit_code == 0, line if r.exit_code == 0 else f"exit {r.exit_code}: {line}"


def _node_version(node_bin_dir: Optional[Path]) -> Optional[str]:
    node = (node_bin_dir / "node") if node_bin_dir else None
    if node is None or not node.exists():
        found = shutil.which("node")
        node = Path(found) if found else None
    if node is None:
        return None
    try:
        r = subprocess.run([str(node), "--version"], capture_output=True, text=True, timeout=30)
        return r.stdout.strip().lstrip("v") if r.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired):
        return None


def check_harness(name: str, backend: str, home: Optional[Path] = None) -> HarnessReport:
    pkg = install.PACKAGES[name]
    rep = HarnessReport(name=name, package=f"{pkg.registry}:{pkg.name}", tested=f">={pkg.supported[0]} <{pkg.supported[1]}")
    try:
        inst = install.find(name, home)
    except install.NotInstalled as e:
        rep.problems.append(str(e))
        return rep
    rep.installed, rep.location, rep.managed = True, str(inst.bin), inst.managed
    rep.runs, line = install.probe(inst)
    version = inst.version
    if version is None and rep.runs:
        found = [w for w in line.replace("v", " ").split() if w[:1].isdigit()]
        version = found[0] if found else None
    rep.version = version
    rep.in_range = install.in_range(version, pkg.supported) if version else None
    if not rep.runs:
        rep.problems.append(f"`{pkg.bin} --version` fails: {line}")
    if rep.in_range is False:
        rep.problems.append(f"version {version} is outside the tested range {rep.tested} "
                            f"(`clawkube harness install {name}` installs {pkg.version})")
    if pkg.node_min:
        node_dirs = [d for d in inst.path_dirs if (d / "node").exists()]
        rep.node = _node_version(node_dirs[0] if node_dirs else None)
        rep.node_ok = rep.node is not None and install.version_tuple(rep.node)[:1] >= (pkg.node_min,)
        if not rep.node_ok:
            rep.problems.append(f"needs Node >= {pkg.node_min}, found {rep.node or 'none'} "
                                f"(`clawkube harness install` brings Node {install.NODE.version} from npm)")
    as_sandbox = _run_as_sandbox_user(inst, backend) if rep.runs else None
    if as_sandbox is not None:
        rep.sandbox_runs = as_sandbox[0]
        if not rep.sandbox_runs:
            rep.problems.append(f"the sandbox user cannot run it ({as_sandbox[1]}): its folders must be readable "
                                f"and traversable by all users (see docs/harnesses.md)")
    return rep


def diagnose(names: Optional[list[str]] = None, home: Optional[Path] = None) -> DoctorReport:
    backend, sandbox_problems = _sandbox_backend()
    return DoctorReport(harness_home=str(home or install.harness_home()), sandbox=backend,
                        sandbox_problems=sandbox_problems,
                        harnesses=[check_harness(n, backend, home) for n in (names or list(install.PACKAGES))],
                        broken_adapters=broken_adapters())


def render(rep: DoctorReport) -> str:
    def yn(v: Optional[bool]) -> str:
        return "-" if v is None else "yes" if v else "NO"

    rows = [("harness", "version", "tested", "in range", "runs", "as sandbox user", "node", "location")]
    for h in rep.harnesses:
        rows.append((h.name, h.version or ("-" if h.installed else "missing"), h.tested, yn(h.in_range), yn(h.runs),
                     yn(h.sandbox_runs), h.node or "-", h.location or "-"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [f"harness home: {rep.harness_home}", f"sandbox backend: {rep.sandbox}", ""]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    problems = [f"{h.name}: {p}" for h in rep.harnesses for p in h.problems]
    problems += [f"adapter {n}: {msg}" for n, msg in rep.broken_adapters.items()] + rep.sandbox_problems
    lines += [""] + ([f"problem: {p}" for p in problems] or ["all harnesses ready"])
    return "\n".join(lines)
