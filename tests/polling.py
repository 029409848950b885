"""Polling for tests and bench scripts that drive real servers (kube-apiserver, S3, the operator, a cluster).

- `wait_for(what, fn)`: call fn until it returns something truthy; errors count as "not yet" (a server may be
  starting or restarting); on timeout the assertion names what was awaited and the last value or error.
- `retry(fn)`: call fn until it does not raise; `transient` decides which errors are worth another attempt (the
  rest, and the last attempt's, propagate).
"""
from __future__ import annotations

import time
from typing import Any, Callable, TypeVar

T = TypeVar("T")


def wait_for(what: str, fn: Callable[[], Any], timeout: float = 120, every: float = 0.25) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = fn()
        except Exception as e:  # the server may be starting or restarting: keep polling
            last = e
        else:
            if last:
                return last
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:g}s waiting for {what}; last: {last!r}")


def retry(fn: Callable[[], T], attempts: int = 40, every: float = 0.5,
          transient: Callable[[Exception], bool] = lambda e: True) -> T:
    for i in range(attempts):
        try:
            return fn()
        except Exception as e:
            if i == attempts - 1 or not transient(e):
                raise
            time.sleep(every)
    raise ValueError(f"attempts must be at least 1, not {attempts}")
