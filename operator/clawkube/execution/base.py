"""The sandbox backend interface and its registry.

A backend is a `Sandbox` subclass registered under a name. The trial logic only ever calls `open_sandbox(name,
SandboxSpec)` -> `Sandbox.exec(ExecSpec)` -> `Sandbox.close()` (or `run_once`), so a new backend (a remote sandbox
service, an OCI runtime) is a new module that registers itself: either imported by `execution/__init__.py`, or
named in the `clawkube.sandboxes` entry-point group of an installed package (`name = "module:Class"`).
Built in: `bwrap` (execution/bwrap.py), `none` (execution/host.py).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar, Optional

from .spec import Endpoint, ExecResult, ExecSpec, SandboxSpec

AUTO = "auto"
PREFERENCE = ("bwrap", "none")  # what `auto` picks: the first available


class SandboxUnavailable(RuntimeError):
    """The requested backend cannot run here (the message says why)."""


class Sandbox(ABC):
    name: ClassVar[str]
    isolating: ClassVar[bool] = True  # False: no view/network isolation (results record firewall: none)

    def __init__(self, spec: SandboxSpec):
        self.spec = spec

    @classmethod
    def unavailable(cls) -> Optional[str]:
        """Why this backend cannot run on this machine; None when it can."""
        return None

    @abstractmethod
    def open(self) -> None:
        """Create the sandbox (namespaces, mounts, network); raises SandboxUnavailable or OSError."""

    @abstractmethod
    def exec(self, spec: ExecSpec) -> ExecResult:
        """Run one process tree in the open sandbox. Never raises for the command's own failure."""

    @abstractmethod
    def close(self) -> None:
        """Kill every process still in the sandbox and release it. Idempotent."""

    def run_one(self, spec: ExecSpec) -> ExecResult:
        """Open, run one process tree, close (`run_once`). A backend may do it in fewer steps."""
        with self:
            return self.exec(spec)

    def services(self) -> list[Endpoint]:
        """TCP servers listening on the open sandbox's own loopback (e.g. started by its warmup), as endpoints
        another sandbox may be allowed to reach (`Endpoint.netns`); the sandbox's own forwards are not among them.
        [] for a backend without its own network."""
        return []

    def __enter__(self) -> "Sandbox":
        self.open()
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_BACKENDS: dict[str, type[Sandbox]] = {}
_entry_points_loaded = False


def register(cls: type[Sandbox]) -> type[Sandbox]:
    """Class decorator: make a backend available under `cls.name`."""
    _BACKENDS[cls.name] = cls
    return cls


def _load_entry_points() -> None:
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    from importlib.metadata import entry_points

    for ep in entry_points(group="clawkube.sandboxes"):
        cls = ep.load()
        if isinstance(cls, type) and issubclass(cls, Sandbox):
            _BACKENDS.setdefault(ep.name, cls)


def backends() -> dict[str, type[Sandbox]]:
    _load_entry_points()
    return dict(_BACKENDS)


def backend(name: str) -> type[Sandbox]:
    known = backends()
    if name not in known:
        raise SandboxUnavailable(f"unknown sandbox backend {name!r} (known: {', '.join(sorted(known))}, or auto)")
    return known[name]


def resolve(requested: str = AUTO) -> str:
    """The backend name to use: `auto` = the first available of PREFERENCE; a named one must be available."""
    if requested == AUTO:
        for name in PREFERENCE:
            if backend(name).unavailable() is None:
                return name
        raise SandboxUnavailable("no sandbox backend is available")
    why = backend(requested).unavailable()
    if why:
        raise SandboxUnavailable(f"sandbox backend {requested!r} is not available here: {why}")
    return requested


def open_sandbox(name: str, spec: SandboxSpec) -> Sandbox:
    sb = backend(name)(spec)
    sb.open()
    return sb


def run_once(name: str, sandbox: SandboxSpec, spec: ExecSpec) -> ExecResult:
    """Open a sandbox, run one process tree in it, close it."""
    return backend(name)(sandbox).run_one(spec)
