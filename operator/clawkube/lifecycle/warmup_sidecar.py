"""A task's Warmup on a cluster: in the agent pod's "svc-warmup" sidecar, as root, before the agent starts.

Agent containers run as a non-root uid on a read-only root filesystem, so the Warmup lines of WildClawBench
(`pip install`, `apt-get install`, servers started with `&`) cannot run there as upstream runs them (as root in the
task's container). The agent pod gets a sidecar instead (k8s/podspec.py): the agent image, root in its own
container with a writable root filesystem and only a container root's file capabilities, sharing the workspace
volume (at the benchmark's mount point), the agent's HOME and the pod's network.

    supervisor (pod agent)                         sidecar (pod warmup)
    lays out workspace, HOME, skills
    writes request.json  ------------------------> runs the lines as one bash script (sandbox.warmup_script),
                                                   the first failing line named; gives what it made in the
                                                   agent's folders to the agent's uid
    waits for status.json <----------------------- writes status.json (+ warmup.log, warmup.stdout)
    a failure: setup_error naming the line         keeps the servers the warmup started, and relays them
    else runs the agent                            (execution/relay.py) to the grading pod until the operator
                                                   deletes the agent pod after grading
The contract is contracts/warmup.py. What differs from upstream: the installs land in the sidecar's filesystem,
not the agent container's (the agent image must already hold what the agent itself runs); the servers and the
files the lines write in the workspace and HOME are shared, as upstream.
"""
from __future__ import annotations

import os
import shutil
import signal
import threading
import time
from pathlib import Path
from typing import Optional

from .. import execution as ex
from ..contracts import warmup as contract
from ..contracts.warmup import WarmupRequest, WarmupStatus
from ..execution import Limits, User
from ..execution.forward import listening_ports
from ..execution.relay import RELAY_PORT, RelayServer
from . import sandbox
from .workspace import chown_tree

POLL = 0.2
WAIT_SLACK = 60.0  # the supervisor waits this much longer than the warmup's own time limit for the sidecar


class _RootBox:
    """What sandbox.warmup needs of a box, in the sidecar: this container is the sandbox (root, its own fs)."""

    def __init__(self, cwd: str):
        self.cwd = cwd
        self.box = ex.open_sandbox("none", ex.SandboxSpec(name="warmup"))

    def run(self, argv: list[str], *, env: dict[str, str], timeout: float, user: User = User.ROOT,
            stdout: Optional[Path] = None, stderr: Optional[Path] = None, keep_background: bool = False,
            **_: object) -> ex.ExecResult:
        return self.box.exec(ex.ExecSpec(argv=argv, cwd=self.cwd, env=env, user=user, stdout=stdout, stderr=stderr,
                                         keep_background=keep_background,
                                         limits=Limits(timeout=timeout, output=sandbox.AGENT_OUTPUT)))


def _wait_for(path: Path, timeout: Optional[float]) -> bool:
    end = None if timeout is None else time.monotonic() + timeout
    while not path.is_file():
        if end is not None and time.monotonic() > end:
            return False
        time.sleep(POLL)
    return True


def serve(bundle: Path, control: Path, relay_port: int = RELAY_PORT, request_timeout: Optional[float] = None,
          until: Optional[threading.Event] = None) -> int:
    """The sidecar: wait for the request, run the warmup, report, then relay its servers until terminated
    (SIGTERM: the operator deletes the agent pod once grading is done; `until`: for tests)."""
    from .bundle import read_agent_manifest

    status_dir = control / Path(contract.STATUS).parent
    if not _wait_for(control / contract.REQUEST, request_timeout):
        return 0  # the agent never got as far as its warmup (the task cannot run): nothing to do
    try:
        req = WarmupRequest.model_validate_json((control / contract.REQUEST).read_text())
        m = read_agent_manifest(bundle)
        box = _RootBox(req.cwd)
    except Exception as e:  # said to the supervisor (an infra fault), not left to its timeout
        contract.write(control / contract.STATUS, WarmupStatus(infra_error=f"{type(e).__name__}: {e}"[:2000]))
        return 1
    failed = sandbox.warmup(box, m.warmup, req.env, status_dir / "warmup.log")
    if not failed:
        for d in req.owned:  # what root made in the agent's folders is the agent's to change, as in a container
            if os.path.isdir(d):
                chown_tree(Path(d), req.owner_uid, req.owner_gid)
    ports = [p for p in listening_ports(os.getpid()) if p != relay_port] if not failed else []
    relay = RelayServer(ports, port=relay_port) if ports else None
    contract.write(control / contract.STATUS, WarmupStatus(failed=failed, ports=ports))
    if relay is None:
        return 0  # a failed warmup (a setup error), or one that left no server running: the pod may complete
    if until is not None:
        until.wait()
    else:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
        signal.sigwait({signal.SIGTERM, signal.SIGINT})
    relay.close()
    return 0


def run_remote(control: Path, req: WarmupRequest, log: Path, timeout: float = sandbox.WARMUP_TIMEOUT
               ) -> WarmupStatus:
    """The supervisor's side: hand the sidecar its request, wait for its status (what failed, naming the line;
    the ports of the servers it left running). The sidecar's output is copied next to `log` as a local warmup leaves it. RuntimeError when the sidecar
    never answers (an infra fault, not the task's)."""
    contract.write(control / contract.REQUEST, req)
    status = control / contract.STATUS
    if not _wait_for(status, timeout + WAIT_SLACK):
        raise RuntimeError(f"the warmup sidecar did not report within {timeout + WAIT_SLACK:g}s")
    st = WarmupStatus.model_validate_json(status.read_text())
    if st.infra_error:
        raise RuntimeError(f"the warmup sidecar could not run the warmup: {st.infra_error}")
    for name, dest in (("warmup.log", log), ("warmup.stdout", log.with_suffix(".stdout"))):
        src = status.parent / name
        if src.is_file():
            log.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest)
    return st
