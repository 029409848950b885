"""Presigned grants, the pod side: a folder uploaded through a presigned POST, objects fetched by presigned GET.

Agent-role pods hold no store credentials (k8s/podspec.py): the operator gives each one a POST grant for its own
artifact prefix and GET URLs of just the objects it reads, so what the grants allow is all the pod can do.
Plain HTTP (urllib), bounded retries with exponential backoff on connection errors and 5xx answers.
"""
from __future__ import annotations

import time
import urllib.error
import urllib.request
from pathlib import Path, PurePosixPath
from typing import Any, Callable

from urllib3 import encode_multipart_formdata

from .store import ArtifactError

UPLOAD_ENV = "CLAWKUBE_UPLOAD_GRANT"  # JSON {url, fields, prefix}: the pod's presigned POST
READ_ENV = "CLAWKUBE_READ_GRANTS"  # JSON {s3 uri: {relative path: presigned GET url}}


def _call(what: str, make: Callable[[], urllib.request.Request], attempts: int, delay: float,
          sleep: Callable[[float], None]) -> bytes:
    last: Exception | None = None
    for i in range(max(1, attempts)):
        try:
            with urllib.request.urlopen(make(), timeout=60) as resp:
                return resp.read()
        except urllib.error.HTTPError as e:
            if e.code < 500:  # refused (expired grant, key outside the prefix, missing object): not retried
                raise ArtifactError(f"{what}: HTTP {e.code} {e.reason}: {e.read()[:300]!r}") from None
            last = e
        except (urllib.error.URLError, OSError) as e:
            last = e
        if i + 1 < attempts:
            sleep(delay * (2 ** i))
    raise ArtifactError(f"{what}: failed after {attempts} attempts: {last}")


def post_folder(folder: Path, grant: dict[str, Any], attempts: int = 5, delay: float = 0.5,
                sleep: Callable[[float], None] = time.sleep) -> list[str]:
    """Upload every file under `folder` to `grant["prefix"] + relative path`; returns the keys written."""
    keys = []
    for f in sorted(p for p in folder.rglob("*") if p.is_file()):
        key = grant["prefix"] + f.relative_to(folder).as_posix()
        fields = {**grant["fields"], "key": key, "file": (f.name, f.read_bytes())}  # `file` must come last
        body, ctype = encode_multipart_formdata(fields)
        _call(f"upload {key}", lambda: urllib.request.Request(grant["url"], data=body, method="POST",
                                                              headers={"Content-Type": ctype}),
              attempts, delay, sleep)
        keys.append(key)
    return keys


def get_files(urls: dict[str, str], dest: Path, attempts: int = 5, delay: float = 0.5,
              sleep: Callable[[float], None] = time.sleep) -> None:
    """Download each {relative path: presigned URL} under `dest` (paths may not leave it)."""
    dest.mkdir(parents=True, exist_ok=True)
    for rel, url in sorted(urls.items()):
        parts = PurePosixPath(rel).parts
        if not parts or rel.startswith("/") or ".." in parts:
            raise ArtifactError(f"read grant: unsafe path {rel!r}")
        data = _call(f"download {rel}", lambda: urllib.request.Request(url), attempts, delay, sleep)
        target = dest.joinpath(*parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
