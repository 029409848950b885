"""Capped capture of a process's output: bytes stay bytes on disk, memory stays bounded.

A `Capture` drains one pipe in a thread into a host file (or memory) up to `cap` bytes, then keeps reading and
counting but drops the rest, so a flooding process neither blocks nor fills the disk or memory.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import BinaryIO, Optional

CHUNK = 65536


class Capture:
    def __init__(self, fd: int, cap: int, path: Optional[Path] = None):
        self.fd, self.cap, self.path = fd, cap, path
        self.total = 0
        self.kept = 0
        self._mem = bytearray()
        self._file: Optional[BinaryIO] = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(path, "wb")
        self._thread = threading.Thread(target=self._pump, daemon=True, name="clawkube-capture")
        self._thread.start()

    def _pump(self) -> None:
        try:
            while True:
                try:
                    chunk = os.read(self.fd, CHUNK)
                except OSError:
                    break
                if not chunk:
                    break
                self.total += len(chunk)
                room = self.cap - self.kept
                if room > 0:
                    part = chunk[:room]
                    self.kept += len(part)
                    if self._file is not None:
                        self._file.write(part)
                    else:
                        self._mem += part
        finally:
            try:
                os.close(self.fd)
            except OSError:
                pass
            if self._file is not None:
                self._file.close()

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Wait until the pipe is closed by every writer; False if it is still open after `timeout`."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def truncated(self) -> bool:
        return self.total > self.kept

    def data(self) -> bytes:
        """What was kept (reads the file back when writing to one; at most `cap` bytes)."""
        if self.path is None:
            return bytes(self._mem)
        with open(self.path, "rb") as f:  # (a background writer may still be appending: what is there)
            return f.read(self.cap)

    def text(self) -> str:
        return decode(self.data())


def decode(data: bytes) -> str:
    """Bytes as text: UTF-8, with replacement characters for what is not."""
    return data.decode("utf-8", errors="replace")
