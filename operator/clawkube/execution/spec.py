"""The typed contract of the execution interface: what a sandbox looks like (`SandboxSpec`), what runs in it
(`ExecSpec`) and what came out (`ExecResult`).

A sandbox is one filesystem view + one network, alive from `open` to `close` (like a container): a trial's
warmup and agent run in the same sandbox, so a server the warmup starts in the background is still there (on the
sandbox's loopback) when the agent runs. Each `exec` is one process tree with its own user, limits and output
capture; at its end every process it started is killed, unless it asked to leave background processes running
(`keep_background`, the warmup), which then end with the sandbox.
"""
from __future__ import annotations

import ipaddress
from enum import Enum
from pathlib import Path
from typing import Optional
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

MiB = 1024 * 1024
SANDBOX_UID = 65534  # nobody: the unprivileged user when no per-trial uid was claimed


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Mount(_Model):
    """A host folder or file visible inside the sandbox."""

    source: Path  # on the host
    target: Optional[str] = None  # absolute path inside the sandbox; None = the same path as on the host
    writable: bool = False

    @field_validator("target")
    @classmethod
    def _absolute(cls, v: Optional[str]) -> Optional[str]:
        if v is not None and (not v.startswith("/") or ".." in v.split("/")):
            raise ValueError(f"mount target {v!r} must be an absolute path without '..'")
        return v

    @property
    def inside(self) -> str:
        return self.target or str(self.source)


class Endpoint(_Model):
    """A TCP endpoint the sandbox may reach (a trial's service, the model API, the judge)."""

    host: str = Field(min_length=1)
    port: int = Field(ge=1, le=65535)
    # A loopback endpoint of another open sandbox: reached inside that sandbox's network namespace (this file,
    # e.g. /proc/PID/ns/net) instead of the host's (a grader querying the mock services a warmup started).
    netns: Optional[str] = None

    @classmethod
    def parse(cls, value: str) -> "Endpoint":
        """`http[s]://host[:port][/path]` or `host:port`."""
        u = urlsplit(value if "://" in value else f"tcp://{value}")
        if not u.hostname:
            raise ValueError(f"endpoint {value!r} names no host")
        port = u.port or {"http": 80, "https": 443}.get(u.scheme)
        if port is None:
            raise ValueError(f"endpoint {value!r} names no port")
        return cls(host=u.hostname, port=port)

    @property
    def loopback(self) -> bool:
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


class Network(_Model):
    """The sandbox has its own network namespace with only loopback. Each allowed endpoint is reachable from inside:
    a loopback endpoint (127.0.0.1:P) at the same address inside; any other host through an HTTP(S) proxy on the
    sandbox's loopback that admits exactly these endpoints (HTTPS_PROXY/HTTP_PROXY are set for every exec)."""

    allow: list[Endpoint] = Field(default_factory=list)


class Limits(_Model):
    timeout: float = Field(gt=0)  # seconds of wall time; then every process of the exec is killed
    memory: Optional[int] = Field(default=None, gt=0)  # bytes (RAM, no swap), for the whole process tree
    pids: Optional[int] = Field(default=None, gt=0)  # processes + threads of the tree
    cpu: Optional[float] = Field(default=None, gt=0)  # cores
    output: int = Field(default=16 * MiB, gt=0)  # bytes of stdout and of stderr kept; the rest is counted, dropped


class User(str, Enum):
    SANDBOX = "sandbox"  # the sandbox's unprivileged uid, no capabilities, no_new_privs
    ROOT = "root"  # uid 0 inside with a container root's file capabilities (chown, dac_override, fowner, fsetid,
    # setuid, setgid, kill), no_new_privs; system folders are a per-sandbox writable overlay (SandboxSpec)


class SandboxSpec(_Model):
    """The view and the network of a sandbox, fixed while it is open."""

    mounts: list[Mount] = Field(default_factory=list)
    network: Network = Field(default_factory=Network)
    uid: int = Field(default=SANDBOX_UID, ge=1)  # the uid of User.SANDBOX (a per-trial uid keeps trials apart)
    # A folder (on the host, private to this sandbox) that receives what root writes over the system folders; the
    # same folder given to a later sandbox shows it those changes. None: system folders are read-only.
    system_overlay: Optional[Path] = None
    tools: Optional[list[Path]] = None  # folders visible read-only at the same path; None = tools.tool_folders()
    name: str = "sandbox"  # for messages, cgroup names and the hostname


class ExecSpec(_Model):
    argv: list[str] = Field(min_length=1)
    cwd: str  # inside the sandbox
    env: dict[str, str] = Field(default_factory=dict)  # the whole environment (PATH is added when missing)
    user: User = User.SANDBOX
    limits: Limits
    stdin: Optional[bytes] = None
    stdout: Optional[Path] = None  # host file that receives stdout (capped at limits.output); None: memory only
    stderr: Optional[Path] = None
    keep_background: bool = False  # processes left behind live on until the sandbox closes (warmup servers)


class ExecResult(_Model):
    exit_code: Optional[int]  # None: killed by a signal (see `signal`) or never started
    signal: Optional[int] = None
    timed_out: bool = False
    oom_killed: bool = False  # the memory limit was hit and the kernel killed a process
    wall_seconds: float = 0.0
    stdout: str = ""  # what was kept, decoded as UTF-8 with replacement characters
    stderr: str = ""
    stdout_bytes: int = 0  # everything written, including what was dropped
    stderr_bytes: int = 0
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    start_error: Optional[str] = None  # the process could not be started (not the command's fault)
    backend: str = ""
    limits_enforced: list[str] = Field(default_factory=list)  # which of memory/pids/cpu the backend applied

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    def describe(self) -> str:
        """One line for error messages."""
        if self.start_error:
            return f"could not start: {self.start_error}"
        if self.timed_out:
            return "timed out"
        if self.oom_killed:
            return "killed at its memory limit"
        if self.signal is not None:
            return f"killed by signal {self.signal}"
        return f"exit code {self.exit_code}"
