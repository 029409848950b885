"""A grader's sandbox may reach the servers left on another open sandbox's loopback (Sandbox.services), and only
those: the agent's sandbox keeps its own network, and its model-API forwards are not offered."""
from __future__ import annotations

import socket

import pytest

from clawkube import execution as ex

from .attack import IS_ROOT, NEEDS_ROOT

pytestmark = pytest.mark.skipif(not IS_ROOT, reason=NEEDS_ROOT)

FETCH = "import urllib.request,sys; print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(box, argv, user=ex.User.SANDBOX, keep=False):
    return box.exec(ex.ExecSpec(argv=argv, cwd="/", user=user, limits=ex.Limits(timeout=30), keep_background=keep))


def test_grader_reaches_the_warmup_server_of_an_open_sandbox_and_nothing_else():
    port, model = _free_port(), _free_port()
    with socket.socket() as host_server:  # a server on the host's loopback, forwarded into the agent's sandbox
        host_server.bind(("127.0.0.1", model))
        host_server.listen(1)
        agent = ex.open_sandbox("bwrap", ex.SandboxSpec(
            name="agent", network=ex.Network(allow=[ex.Endpoint(host="127.0.0.1", port=model)])))
        try:
            r = _run(agent, ["bash", "-c", f"cd /tmp && echo served > f.txt && "
                                           f"python3 -m http.server {port} --bind 127.0.0.1 >/dev/null 2>&1 &"
                                           "sleep 1"], user=ex.User.ROOT, keep=True)
            assert r.ok, r.describe()
            offered = agent.services()
            assert [e.port for e in offered] == [port]  # the model forward is the agent's, not a service
            assert offered[0].netns and offered[0].host == "127.0.0.1"
            grader = ex.SandboxSpec(name="grader", network=ex.Network(allow=offered))
            with ex.open_sandbox("bwrap", grader) as g:
                r = _run(g, ["python3", "-c", FETCH, f"http://127.0.0.1:{port}/f.txt"])
                assert r.ok and r.stdout.strip() == "served", r.stderr[-300:]
                r = _run(g, ["python3", "-c", FETCH, f"http://127.0.0.1:{model}/"])
                assert not r.ok  # not offered, not reachable
            with ex.open_sandbox("bwrap", ex.SandboxSpec(name="other")) as o:  # control: no reach, no server
                r = _run(o, ["python3", "-c", FETCH, f"http://127.0.0.1:{port}/f.txt"])
                assert not r.ok and "served" not in r.stdout
        finally:
            agent.close()
        assert agent.services() == []  # closed: nothing left to offer
