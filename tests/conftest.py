"""Shared fixtures: a real kube-apiserver + etcd (session-scoped) and a moto S3 server.

Tests that need a service the machine cannot provide are *skipped with the reason*, never passed.
`pytest -ra` (the default addopts) lists every skip and its reason in the summary.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


_TABLES = pytest.StashKey[list]()


@pytest.fixture
def report_table(request):
    """`report_table(title, text)`: print a result table (conformance, corpus scores) in the run's terminal summary,
    so CI's output shows it without `pytest -s` (a passing test's own prints are captured and dropped)."""
    tables = request.config.stash.setdefault(_TABLES, [])

    def add(title: str, text: str) -> None:
        tables.append((f"{title} ({request.node.nodeid})", text))
    return add


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    for title, text in config.stash.get(_TABLES, []):
        terminalreporter.write_sep("=", title)
        terminalreporter.write_line(text.rstrip("\n"))


@pytest.fixture(scope="session")
def controlplane():
    """A real kube-apiserver + etcd on free loopback ports (no kubelet)."""
    from tests.cluster.controlplane import ControlPlane

    reason = ControlPlane.unavailable_reason()
    if reason:
        if os.environ.get("CLAWKUBE_REQUIRE_APISERVER") == "1":
            pytest.fail(f"CLAWKUBE_REQUIRE_APISERVER=1 but no apiserver can be started: {reason}")
        pytest.skip(f"no real kube-apiserver: {reason}")
    cp = ControlPlane.start()
    yield cp
    cp.stop()


@pytest.fixture(scope="session")
def kubeconfig(controlplane) -> Path:
    return controlplane.kubeconfig


@pytest.fixture(scope="session")
def supervised_controlplane(controlplane):
    """`controlplane` with a watchdog that restarts the apiserver if it crashes (see ApiserverWatchdog)."""
    from tests.cluster.controlplane import ApiserverWatchdog

    dog = ApiserverWatchdog(controlplane)
    controlplane.watchdog = dog
    yield controlplane
    dog.stop()
    if dog.restarts:
        print(f"\nkube-apiserver crashed and was restarted {dog.restarts} time(s) during the session")


@pytest.fixture(scope="session")
def s3_server():
    """A moto S3 server on a free loopback port; yields its endpoint URL. Credentials: any (moto accepts all)."""
    try:
        from moto.server import ThreadedMotoServer
    except ImportError as e:  # moto[server] is a test dependency
        pytest.skip(f"moto server not available: {e}")
    from tests.cluster.controlplane import free_port

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=free_port(), verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()
