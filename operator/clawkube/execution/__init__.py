"""The one execution interface: run a process tree with a given filesystem view, network, user and limits.

    from clawkube.execution import open_sandbox, resolve, SandboxSpec, ExecSpec, Limits, Mount
    with open_sandbox(resolve("auto"), SandboxSpec(mounts=[Mount(source=ws, target="/tmp_workspace",
                                                                  writable=True)])) as sb:
        r = sb.exec(ExecSpec(argv=["ls"], cwd="/tmp_workspace", limits=Limits(timeout=10)))

Models: execution/spec.py. Backends and registry: execution/base.py; `bwrap` (bwrap.py), `none` (host.py),
`pod` (pod.py: inside trial pods).
What a sandbox sees: execution/view.py.
"""
from .base import AUTO, Sandbox, SandboxUnavailable, backend, backends, open_sandbox, register, resolve, run_once
from .spec import (SANDBOX_UID, Endpoint, ExecResult, ExecSpec, Limits, Mount, Network, SandboxSpec, User)
from . import bwrap as _bwrap  # noqa: F401  (registers the built-in backends)
from . import host as _host  # noqa: F401
from . import pod as _pod  # noqa: F401
from .output import decode
from .uids import UidLease, claim_uid

__all__ = ["AUTO", "Sandbox", "SandboxUnavailable", "backend", "backends", "open_sandbox", "register", "resolve",
           "run_once", "SANDBOX_UID", "Endpoint", "ExecResult", "ExecSpec", "Limits", "Mount", "Network",
           "SandboxSpec", "User", "decode", "UidLease", "claim_uid"]
