"""Between an agent pod's supervisor (`clawkube pod agent`) and its warmup sidecar (`clawkube pod warmup`,
container "svc-warmup"), as files in two volumes of the pod (PodEnv.warmup_dir):

    <dir>/request/request.json  written by the supervisor once the workspace, HOME and skills are laid out
                                (the sidecar mounts it read-only)
    <dir>/status/status.json    written by the sidecar when the warmup has run (the supervisor mounts it read-only),
                                with warmup.stdout / warmup.log (its output) next to it

Each file is written whole (a temporary name, then renamed), so a reader never sees half of one.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

from pydantic import BaseModel, ConfigDict, Field

REQUEST = "request/request.json"
STATUS = "status/status.json"
LOST_PEER = "lost"  # PodEnv.warmup_peer when the agent pod (and its servers) could not be found


class WarmupRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    env: dict[str, str] = Field(default_factory=dict)  # the warmup's environment (HOME = the agent's), no credentials
    cwd: str  # the workspace, at the benchmark's mount point
    owner_uid: int  # the agent's uid: what the warmup made in `owned` is given to it afterwards
    owner_gid: int
    owned: list[str] = Field(default_factory=list)  # the agent's folders (workspace, HOME, skills)


class WarmupStatus(BaseModel):
    model_config = ConfigDict(extra="forbid")

    failed: Optional[str] = None  # what failed, naming the line (sandbox.warmup); None: every line ran
    ports: list[int] = Field(default_factory=list)  # loopback ports the warmup's servers listen on (relayed)
    infra_error: Optional[str] = None  # the sidecar itself could not run the warmup (not the task's fault)


def write(path: Path, model: BaseModel) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(model.model_dump_json())
    os.replace(tmp, path)
