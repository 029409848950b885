"""Allowed endpoints, forwarded into a sandbox's own network namespace.

The sandbox's namespace has only loopback. For each allowed endpoint the runner opens a listening socket *inside*
that namespace (a helper thread enters it with setns(2) just long enough to bind; a socket stays in the namespace
it was made in) and serves every connection from the host side:
- a loopback endpoint 127.0.0.1:P (a trial's service, a local model server, a local judge) listens at the same
  127.0.0.1:P inside, so the URLs the trial hands out work unchanged;
- a loopback endpoint of another sandbox (`Endpoint.netns`: a server its warmup started) listens at the same
  address inside and is connected inside that sandbox's namespace;
- any other endpoint (a remote model API) is reached through one HTTP proxy listening at 127.0.0.1:PROXY_PORT
  inside: CONNECT host:port (HTTPS) or an absolute-form request (plain HTTP) to an allowed endpoint is connected
  from the host; everything else gets 403. The proxy variables are part of `Forwarder.env()`.
Nothing of this runs inside the sandbox, so a sandboxed process cannot stop or replace it.
"""
from __future__ import annotations

import ctypes
import os
import socket
import threading
from pathlib import Path
from typing import Callable, Optional
from urllib.parse import urlsplit

from .spec import Endpoint

CLONE_NEWNET = 0x40000000
PROXY_PORT = 3128
HEAD_LIMIT = 65536
CONNECT_TIMEOUT = 10.0

_libc = ctypes.CDLL(None, use_errno=True)


def _setns(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"setns: {os.strerror(e)}")


def _inside(netns: str, work: Callable[[list[socket.socket]], None], what: str) -> list[socket.socket]:
    """Run `work(made)` in a thread that has entered the network namespace file `netns` (e.g. /proc/PID/ns/net):
    the sockets it makes belong to that namespace and keep working from any thread. On failure they are closed
    and OSError says `what` failed."""
    made: list[socket.socket] = []
    errors: list[BaseException] = []

    def run() -> None:  # a thread of its own: setns changes only the calling thread's namespace
        here = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        target = os.open(netns, os.O_RDONLY)
        try:
            _setns(target)
            try:
                work(made)
            finally:
                _setns(here)
        except BaseException as e:  # reported to the caller
            errors.append(e)
        finally:
            os.close(here)
            os.close(target)

    t = threading.Thread(target=run, name="clawkube-netns")
    t.start()
    t.join()
    if errors:
        for s in made:
            s.close()
        raise OSError(f"cannot {what}: {errors[0]}")
    return made


def listen_in(netns: str, addrs: list[tuple[str, int]]) -> list[socket.socket]:
    """Listening TCP sockets bound inside the network namespace file `netns`."""
    def work(made: list[socket.socket]) -> None:
        for host_addr, port in addrs:
            s = socket.socket(socket.AF_INET6 if ":" in host_addr else socket.AF_INET, socket.SOCK_STREAM)
            made.append(s)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host_addr, port))
            s.listen(128)

    return _inside(netns, work, "listen inside the sandbox's network namespace")


def connect_in(netns: str, host: str, port: int, timeout: float) -> socket.socket:
    """A TCP connection made inside the network namespace file `netns` (to a server on its loopback)."""
    def work(made: list[socket.socket]) -> None:
        made.append(socket.create_connection((host, port), timeout=timeout))

    return _inside(netns, work, f"connect to {host}:{port} inside {netns}")[0]


LISTEN = "0A"
# /proc/net/tcp{,6} addresses (hex, in the kernel's byte order): any address, ::1, ::ffff:127.0.0.1
_ANY_OR_LOOPBACK6 = {"00000000000000000000000000000000", "00000000000000000000000001000000",
                     "0000000000000000FFFF00000100007F"}


def listening_ports(pid: int) -> list[int]:
    """TCP ports listening on loopback or on every address in the network namespace of process `pid`
    (/proc/PID/net/tcp and tcp6 show that namespace's sockets)."""
    ports: set[int] = set()
    for name in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/{pid}/net/{name}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if len(f) < 4 or f[3] != LISTEN:
                continue
            addr, _, port = f[1].partition(":")
            addr = addr.upper()
            if addr in _ANY_OR_LOOPBACK6 or addr == "00000000" or (len(addr) == 8 and addr.endswith("7F")):
                ports.add(int(port, 16))
    return sorted(ports)


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def splice(a: socket.socket, b: socket.socket) -> None:
    """Carry bytes both ways between `a` and `b` until both directions have ended (each end's write side is shut
    when its source ends)."""
    t = threading.Thread(target=_pipe, args=(b, a), daemon=True)
    t.start()
    _pipe(a, b)
    t.join()


class Forwarder:
    def __init__(self, netns: str, allow: list[Endpoint]):
        self.allow = list(allow)
        local = [e for e in allow if e.loopback]
        self.remote = {(e.host.lower(), e.port) for e in allow if not e.loopback}
        ports = {e.port for e in local}
        self.proxy_port = next(p for p in range(PROXY_PORT, 65536) if p not in ports) if self.remote else None
        addrs = [("::1" if e.host == "::1" else "127.0.0.1", e.port) for e in local]
        if self.proxy_port:
            addrs.append(("127.0.0.1", self.proxy_port))
        self._listeners = listen_in(netns, addrs)
        self._conns: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closed = False
        for ls, e in zip(self._listeners, local):
            self._serve(ls, lambda c, e=e: self._forward(c, e.host, e.port, e.netns))
        if self.proxy_port:
            self._serve(self._listeners[-1], self._proxy)

    def env(self) -> dict[str, str]:
        if not self.proxy_port:
            return {}
        url = f"http://127.0.0.1:{self.proxy_port}"
        no = "127.0.0.1,localhost,::1"
        return {"HTTPS_PROXY": url, "https_proxy": url, "HTTP_PROXY": url, "http_proxy": url,
                "ALL_PROXY": url, "NO_PROXY": no, "no_proxy": no}

    def _serve(self, ls: socket.socket, handle) -> None:
        def loop() -> None:
            while True:
                try:
                    conn, _ = ls.accept()
                except OSError:
                    return
                if not self._track(conn):
                    return
                threading.Thread(target=self._run, args=(handle, conn), daemon=True, name="clawkube-fwd").start()

        threading.Thread(target=loop, daemon=True, name="clawkube-accept").start()

    def _track(self, s: socket.socket) -> bool:
        with self._lock:
            if self._closed:
                s.close()
                return False
            self._conns.add(s)
            return True

    def _run(self, handle, conn: socket.socket) -> None:
        try:
            handle(conn)
        finally:
            with self._lock:
                self._conns.discard(conn)
            conn.close()

    @property
    def ports(self) -> set[int]:
        """The ports this forwarder listens on inside the sandbox."""
        return {ls.getsockname()[1] for ls in self._listeners}

    def _connect(self, host: str, port: int, netns: Optional[str] = None) -> Optional[socket.socket]:
        try:
            up = (connect_in(netns, host, port, CONNECT_TIMEOUT) if netns else
                  socket.create_connection((host, port), timeout=CONNECT_TIMEOUT))
        except OSError:
            return None
        up.settimeout(None)
        if not self._track(up):
            return None
        return up

    def _splice(self, conn: socket.socket, up: socket.socket, first: bytes = b"") -> None:
        try:
            if first:
                up.sendall(first)
            splice(conn, up)
        except OSError:
            pass
        finally:
            with self._lock:
                self._conns.discard(up)
            up.close()

    def _forward(self, conn: socket.socket, host: str, port: int, netns: Optional[str] = None) -> None:
        up = self._connect(host, port, netns)
        if up is not None:
            self._splice(conn, up)

    def _proxy(self, conn: socket.socket) -> None:
        head = b""
        try:
            while b"\r\n\r\n" not in head and len(head) < HEAD_LIMIT:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                head += chunk
        except OSError:
            return
        line = head.split(b"\r\n", 1)[0].decode("latin-1")
        parts = line.split()
        target = _proxy_target(parts)
        if target is None or (target[0].lower(), target[1]) not in self.remote:
            conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return
        up = self._connect(*target)
        if up is None:
            conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return
        if parts[0].upper() == "CONNECT":
            conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            self._splice(conn, up, head.split(b"\r\n\r\n", 1)[1])
        else:
            self._splice(conn, up, head)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            socks = list(self._conns)
            self._conns.clear()
        for s in self._listeners + socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


def _proxy_target(parts: list[str]) -> Optional[tuple[str, int]]:
    if len(parts) != 3:
        return None
    method, target = parts[0].upper(), parts[1]
    try:
        if method == "CONNECT":
            host, _, port = target.rpartition(":")
            return host.strip("[]"), int(port)
        u = urlsplit(target)
        if u.scheme not in ("http", "https") or not u.hostname:
            return None
        return u.hostname, u.port or (443 if u.scheme == "https" else 80)
    except ValueError:
        return None
