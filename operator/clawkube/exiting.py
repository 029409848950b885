"""Ending the `clawkube` command without tearing down the interpreter.

A normal interpreter exit frees every object before the process ends; with the pydantic models of a run loaded
that takes 50-100 ms, seen by nobody. `exit_now` does what others can see of a normal exit (the command's
non-daemon threads have ended, the atexit handlers run: logging, temporary folders, weakref finalizers; buffered
output is written) and then ends the process (`os._exit`). While a non-daemon thread is still running it exits
the normal way.
"""
from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import Optional, Union


def _code(value: Union[int, str, None]) -> int:
    """sys.exit's meaning of the value: None is 0, a number is itself, anything else is printed and 1."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    print(value, file=sys.stderr)
    return 1


def exit_now(value: Union[int, str, None]) -> None:
    me = threading.current_thread()
    if me is not threading.main_thread() or any(t.is_alive() and not t.daemon and t is not me
                                                 for t in threading.enumerate()):
        sys.exit(value)
    code = _code(value)
    atexit._run_exitfuncs()
    failed: Optional[int] = None
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # a closed pipe (`clawkube run ... | head`): as a normal exit would
            failed = 120
    os._exit(code if failed is None else failed)
