"""What trials must not share: /tmp, /dev/shm, the network (another trial's services, anything on the host's
loopback that is not theirs)."""
from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from .attack import CONTROL, IS_ROOT, NEEDS_ROOT, SANDBOXED, make_task, outputs, run, world_root

pytestmark = pytest.mark.skipif(not IS_ROOT, reason=NEEDS_ROOT)

# Each trial leaves a file in /tmp and /dev/shm, waits for the other, then lists what is there besides its own.
SHARE = ("t=$RANDOM$RANDOM; touch /tmp/clawkube-mark-$t /dev/shm/clawkube-mark-$t; sleep 3; "
         "ls /tmp/clawkube-mark-* /dev/shm/clawkube-mark-* 2>/dev/null | grep -v \"clawkube-mark-$t$\"; "
         "rm -f /tmp/clawkube-mark-$t /dev/shm/clawkube-mark-$t")


def _shared(tmp_path: Path, mode: str) -> list[str]:
    root = world_root(tmp_path)
    make_task(root)
    out = root / "out"
    o = run(root / "tasks", out, [SHARE], trials=2, parallel=2, mode=mode)
    assert len(o.results) == 2
    return [outputs(out, trial=str(i))[0] for i in range(2)]


def test_trials_have_their_own_tmp_and_shm(tmp_path: Path):
    assert _shared(tmp_path, SANDBOXED) == ["", ""]


def test_control_without_the_sandbox_trials_see_each_others_tmp(tmp_path: Path):
    seen = _shared(tmp_path, CONTROL)
    assert any("/tmp/clawkube-mark-" in s for s in seen) and any("/dev/shm/clawkube-mark-" in s for s in seen)


class _Listener:
    """A TCP server on the host's loopback that is no endpoint of the trial (another trial's service, say)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.hits = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.hits += 1
            c.sendall(b"HTTP/1.0 200 OK\r\n\r\nsecret-service\n")
            c.close()

    def close(self):
        self.sock.close()


def _call(tmp_path: Path, mode: str) -> tuple[str, int]:
    root = world_root(tmp_path)
    make_task(root)
    out = root / "out"
    srv = _Listener()
    try:
        probe = (f"python3 -c \"import socket; s=socket.create_connection(('127.0.0.1', {srv.port}), timeout=3); "
                 f"print(s.recv(100))\" 2>&1 | tail -1")
        run(root / "tasks", out, [probe], mode=mode)
        return outputs(out)[0], srv.hits
    finally:
        srv.close()


def test_agent_cannot_reach_what_is_not_its_endpoint(tmp_path: Path):
    seen, hits = _call(tmp_path, SANDBOXED)
    assert hits == 0 and "secret-service" not in seen, seen


def test_control_without_the_sandbox_the_agent_reaches_it(tmp_path: Path):
    seen, hits = _call(tmp_path, CONTROL)
    assert hits == 1 and "secret-service" in seen
