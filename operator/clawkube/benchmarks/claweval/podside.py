"""The agent pod's side of a CLAW-Eval trial environment: `clawkube pod agent` talking to the "svc-claweval"
sidecar (sidecar.py) over its token-checked admin API on loopback.

`start()` writes a fresh token to the shared volume, waits until the sidecar reports its environment ready (or
failed: an infra error with the sidecar's reason), then deletes the token file, so the agent (started afterwards,
as the same uid) can neither read the token nor call the admin API. `urls`, `agent_setup` (the MCP tool server
and the prompt) as locally; `collect` writes the sidecar's evidence into the trial's out folder, which the pod
uploads as the agent artifacts the grading pod reads; `stop` ends the sidecar so the pod can complete.
"""
from __future__ import annotations

import json
import secrets
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Optional

from ..base import AgentSetup, EnvironmentStartError, TrialEnvironment
from .environment import Evidence
from .sidecar import ADMIN_PORT, TOKEN_HEADER, SidecarState

SHUTDOWN_WAIT = 15.0  # a sidecar handed its token only at stop: until its admin API answers
READY_TIMEOUT = 300.0  # the sidecar's container start + every mock's ready_timeout (10-30 s each)


class SidecarEnvironment(TrialEnvironment):
    def __init__(self, token_file: Path, multi_turn: bool, admin_port: int = ADMIN_PORT,
                 ready_timeout: float = READY_TIMEOUT):
        self.token_file, self.multi_turn = Path(token_file), multi_turn
        self.base = f"http://127.0.0.1:{admin_port}"
        self.ready_timeout = ready_timeout
        self.token = secrets.token_hex(16)
        self.state: Optional[SidecarState] = None
        self.stopped = False
        self.handed_over = False

    def _call(self, method: str, path: str, timeout: float = 30.0) -> tuple[int, Any]:
        req = urllib.request.Request(self.base + path, data=b"" if method == "POST" else None, method=method,
                                     headers={TOKEN_HEADER: self.token})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            try:
                return e.code, json.loads(e.read() or b"null")
            except ValueError:
                return e.code, None

    def _hand_over_token(self) -> None:
        tmp = self.token_file.with_name(self.token_file.name + ".tmp")
        tmp.write_text(self.token)
        tmp.chmod(0o600)
        tmp.replace(self.token_file)  # appears whole, never half-written
        self.handed_over = True

    def start(self) -> None:
        self._hand_over_token()
        deadline = time.monotonic() + self.ready_timeout
        last = "no answer"
        try:
            while time.monotonic() < deadline:
                try:
                    status, body = self._call("GET", "/state", timeout=5.0)
                    if status == 200:
                        st = SidecarState.model_validate(body)
                        if st.status == "ready":
                            self.state = st
                            return
                        if st.status == "failed":
                            raise EnvironmentStartError(f"CLAW-Eval services sidecar: {st.error}")
                        last = st.status
                    else:
                        last = f"HTTP {status}"
                except (OSError, urllib.error.URLError, ValueError) as e:
                    last = str(e)
                time.sleep(0.3)
            raise EnvironmentStartError(f"CLAW-Eval services sidecar not ready within {self.ready_timeout:g}s "
                                        f"({last})")
        finally:
            self.token_file.unlink(missing_ok=True)

    @property
    def urls(self) -> dict[str, str]:
        return dict(self.state.urls) if self.state else {}

    def agent_setup(self, home: Path) -> AgentSetup:
        from .plugin import agent_setup

        assert self.state is not None
        return agent_setup(self.state.tools, self.state.prompt or "", home)

    def collect(self, out: Path) -> None:
        from .plugin import write_evidence

        try:
            status, body = self._call("GET", "/evidence", timeout=120.0)
        except (OSError, urllib.error.URLError) as e:
            raise EnvironmentStartError(f"CLAW-Eval services sidecar: evidence fetch failed: {e}") from None
        if status != 200:
            raise EnvironmentStartError(f"CLAW-Eval services sidecar: evidence fetch: HTTP {status}: "
                                        f"{(body or {}).get('error') if isinstance(body, dict) else body}")
        write_evidence(Evidence.model_validate(body), out, self.multi_turn)

    def reset(self) -> None:  # one execution per agent pod: nothing to reset
        pass

    def stop(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        deadline = time.monotonic() + 5.0
        if not self.handed_over:  # the supervisor failed before start: the sidecar still waits for a token
            try:
                self._hand_over_token()
                deadline += SHUTDOWN_WAIT
            except OSError:
                return
        try:
            while True:
                try:
                    self._call("POST", "/shutdown", timeout=10.0)
                    return
                except (OSError, urllib.error.URLError):
                    if time.monotonic() >= deadline:
                        return  # already gone; the pod completes either way
                    time.sleep(0.3)
        finally:
            self.token_file.unlink(missing_ok=True)
