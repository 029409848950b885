"""Servers a warmup left running in one pod, reached on loopback from another (WildClawBench on a cluster).

The graders of WildClawBench query the mock services a task's Warmup starts (`python3 server.py &`) at
`localhost:<port>`, as in the benchmark's one container. On a cluster they run in the grading pod, the servers in
the agent pod's warmup sidecar. Two ends, one TCP port between the pods (the chart's NetworkPolicy opens only it):

- `RelayServer` (in the agent pod's warmup sidecar, on RELAY_PORT): a connection names what it wants in one line:
  `PORTS` -> the JSON list of the ports the warmup's servers listen on; `<port>` (one of those) -> spliced to
  127.0.0.1:<port> in the agent pod. Anything else is closed.
- `LoopbackRelay` (in the grading pod's supervisor): asks the peer for its ports and listens on 127.0.0.1:<port>
  for each; every connection is carried to the peer as above. The grader (unprivileged, the pod's network) then
  finds the servers at the very addresses the task's grader names.
Only bytes are carried: no process of the agent pod runs in the grading pod, nor the other way round.
"""
from __future__ import annotations

import json
import socket
import threading
from typing import Optional

from .forward import splice

RELAY_PORT = 47419  # not a port any published warmup server uses (they use 9100-9103, 8000s)
LINE_LIMIT = 64
CONNECT_TIMEOUT = 10.0


def _read_line(conn: socket.socket) -> Optional[str]:
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(1)
        if not chunk or len(data) >= LINE_LIMIT:
            return None
        data += chunk
    return data.decode("ascii", "replace").strip()


class _Listener:
    def __init__(self) -> None:
        self._socks: list[socket.socket] = []
        self._closed = False

    def _listen(self, host: str, port: int, handle) -> None:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, port))
        s.listen(64)
        self._socks.append(s)

        def loop() -> None:
            while not self._closed:
                try:
                    conn, _ = s.accept()
                except OSError:
                    return
                threading.Thread(target=self._run, args=(handle, conn), daemon=True).start()
        threading.Thread(target=loop, daemon=True).start()

    @staticmethod
    def _run(handle, conn: socket.socket) -> None:
        try:
            handle(conn)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self._closed = True
        for s in self._socks:
            try:
                s.close()
            except OSError:
                pass


class RelayServer(_Listener):
    """The agent pod's end: serves `ports` (those the warmup's servers listen on) on `port`, every address."""

    def __init__(self, ports: list[int], port: int = RELAY_PORT, host: str = "0.0.0.0", target: str = "127.0.0.1"):
        super().__init__()
        self.target = target  # where the servers listen (their loopback)
        self.ports = sorted(set(ports) - {port})
        self._listen(host, port, self._handle)

    def _handle(self, conn: socket.socket) -> None:
        conn.settimeout(CONNECT_TIMEOUT)
        line = _read_line(conn)
        if line == "PORTS":
            conn.sendall(json.dumps(self.ports).encode() + b"\n")
            return
        if line is None or not line.isdigit() or int(line) not in self.ports:
            return
        up = socket.create_connection((self.target, int(line)), timeout=CONNECT_TIMEOUT)
        conn.settimeout(None)
        up.settimeout(None)
        try:
            splice(conn, up)
        finally:
            up.close()


def peer_ports(peer: str, timeout: float = CONNECT_TIMEOUT) -> list[int]:
    """The ports a RelayServer at `peer` (host:port) serves; OSError/ValueError when it cannot say."""
    host, _, port = peer.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(b"PORTS\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    ports = json.loads(data.decode())
    if not isinstance(ports, list) or not all(isinstance(p, int) and 0 < p < 65536 for p in ports):
        raise ValueError(f"the relay at {peer} answered {data[:200]!r}")
    return ports


class LoopbackRelay(_Listener):
    """The grading pod's end: 127.0.0.1:<port> for every port of the peer's relay, carried to the peer."""

    def __init__(self, peer: str, ports: list[int]):
        super().__init__()
        host, _, port = peer.rpartition(":")
        self.peer = (host, int(port))
        self.ports = list(ports)
        for p in self.ports:
            self._listen("127.0.0.1", p, lambda conn, p=p: self._handle(conn, p))

    def _handle(self, conn: socket.socket, port: int) -> None:
        up = socket.create_connection(self.peer, timeout=CONNECT_TIMEOUT)
        try:
            up.sendall(f"{port}\n".encode())
            up.settimeout(None)
            splice(conn, up)
        finally:
            up.close()

    def __enter__(self) -> "LoopbackRelay":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
