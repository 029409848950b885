"""Stdlib HTTP helpers the engine uses on a running service: health wait, reset, audit fetch, shutdown."""
from __future__ import annotations

import json
import time
from typing import Any, Callable, Optional

from .admin import AUDIT_PATH, SHUTDOWN_PATH, TOKEN_HEADER


class ServiceError(Exception):
    """A service did not come up or an admin call failed (the trial records ErrorKind.INFRA)."""


def join(base: str, path: str) -> str:
    if path.startswith(("http://", "https://")):
        return path
    return base.rstrip("/") + "/" + path.lstrip("/")


def request(url: str, method: str = "GET", token: Optional[str] = None, body: Any = None,
            timeout: float = 10.0) -> tuple[int, Any]:
    import urllib.error  # here, not at the top: every local run imports this module, few call a service
    import urllib.request

    data = json.dumps(body).encode() if body is not None else (b"" if method == "POST" else None)
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    if token:
        req.add_header(TOKEN_HEADER, token)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            raw = r.read()
            status = r.status
    except urllib.error.HTTPError as e:
        raw, status = e.read(), e.code
    try:
        return status, json.loads(raw) if raw else None
    except ValueError:
        return status, raw.decode(errors="replace")


def wait_healthy(name: str, url: str, timeout: float, alive: Callable[[], Optional[str]] = lambda: None) -> None:
    """Poll `url` until it answers 2xx. `alive()` returns a reason when the service process has died."""
    deadline = time.monotonic() + timeout
    last = "no answer"
    while time.monotonic() < deadline:
        dead = alive()
        if dead:
            raise ServiceError(f"service '{name}' exited before it was healthy: {dead}")
        try:
            status, _ = request(url, timeout=2.0)
            if 200 <= status < 300:
                return
            last = f"HTTP {status}"
        except OSError as e:  # urllib.error.URLError included
            last = str(e)
        time.sleep(0.1)
    raise ServiceError(f"service '{name}' not healthy at {url} within {timeout:g}s ({last})")


def admin(name: str, base: str, path: str, token: str, method: str = "POST") -> Any:
    try:
        status, body = request(join(base, path), method=method, token=token)
    except OSError as e:  # urllib.error.URLError included
        raise ServiceError(f"service '{name}': {method} {path} failed: {e}") from e
    if not 200 <= status < 300:
        raise ServiceError(f"service '{name}': {method} {path} answered HTTP {status}: {body}")
    return body


def fetch_audit(name: str, base: str, token: str) -> dict:
    return admin(name, base, AUDIT_PATH, token, method="GET")


def shutdown(name: str, base: str, token: str) -> None:
    admin(name, base, SHUTDOWN_PATH, token)
