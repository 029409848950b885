"""A task's services as local processes on 127.0.0.1 for one trial.

`LocalServices(...).start()` runs each service command (outside the agent's sandbox, so the agent cannot see
the processes, their env or the admin token), waits for its health check and returns name -> base URL.
A command that names its port (`--port N` or `{port}`) gets a free port, so parallel trials never collide;
one that does not listens on its declared port. The admin token and audit files live in `private` (the
trial's grading scratch, hidden from agents). `reset()` POSTs each reset endpoint; `collect(dir)` writes
`<dir>/<service>.json` (the live audit log, else the service's last audit file).
"""
from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
from pathlib import Path
from typing import Optional

from ..execution.host import Spawned
from ..tasks.model import ServiceSpec
from . import client
from .client import ServiceError
from .command import health_path, is_clawkube_service, reset_path, service_argv
from .injection import InjectionConfig

PORT_ATTEMPTS = 3


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _names_port(spec: ServiceSpec) -> bool:
    return any(a == "--port" or a.startswith("--port=") or "{port}" in a for a in spec.command)


class _Running:
    def __init__(self, spec: ServiceSpec, proc: Spawned, port: int, log: Path, audit_file: Path):
        self.spec, self.spawned, self.port, self.log, self.audit_file = spec, proc, port, log, audit_file
        self.proc = proc.proc

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def died(self) -> Optional[str]:
        if self.proc.poll() is None:
            return None
        return f"exit code {self.proc.returncode}: {self.log.read_text(errors='replace').strip()[-500:]}"


class LocalServices:
    def __init__(self, specs: list[ServiceSpec], fixtures: Path, private: Path, injection: InjectionConfig,
                 health_timeout: float = 30.0, pythonpath: Optional[str] = None):
        self.specs, self.fixtures, self.private = specs, fixtures, private
        self.injection, self.health_timeout = injection, health_timeout
        self.pythonpath = pythonpath or str(Path(__file__).resolve().parents[2])
        self.token = secrets.token_hex(16)
        self.running: dict[str, _Running] = {}

    def __enter__(self) -> "LocalServices":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def urls(self) -> dict[str, str]:
        return {n: r.url for n, r in self.running.items()}

    def start(self) -> dict[str, str]:
        if not self.specs:
            return {}
        self.private.mkdir(parents=True, exist_ok=True)
        token_file = self.private / "services-admin-token"
        token_file.write_text(self.token)
        token_file.chmod(0o600)
        self.fixtures.mkdir(parents=True, exist_ok=True)
        try:
            for spec in self.specs:
                self.running[spec.name] = self._start_one(spec, token_file)
        except Exception:
            self.stop()
            raise
        return self.urls

    def _env(self, spec: ServiceSpec, token_file: Path, audit_file: Path) -> dict[str, str]:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "PYTHONPATH": self.pythonpath,
               **spec.env}
        if is_clawkube_service(spec):
            env.update(CLAWKUBE_SERVICE_NAME=spec.name, CLAWKUBE_SERVICE_AUDIT=str(audit_file),
                       CLAWKUBE_SERVICE_ADMIN_TOKEN_FILE=str(token_file),
                       CLAWKUBE_ERROR_INJECTION_RATE=str(self.injection.rate), CLAWKUBE_SEED=str(self.injection.seed),
                       CLAWKUBE_TRIAL_KEY=self.injection.trial_key)
        return env

    def _start_one(self, spec: ServiceSpec, token_file: Path) -> _Running:
        audit_file, log = self.private / f"audit-{spec.name}.json", self.private / f"service-{spec.name}.log"
        last: Optional[Exception] = None
        for _ in range(PORT_ATTEMPTS if _names_port(spec) else 1):
            port = free_port() if _names_port(spec) else spec.port
            argv = service_argv(spec, port, str(self.fixtures))
            with open(log, "wb") as lf:
                try:  # tied to the runner: killed with everything it started if the runner dies
                    proc = Spawned(argv, name=f"service-{spec.name}", cwd=self.fixtures,
                                   env=self._env(spec, token_file, audit_file), stdin=subprocess.DEVNULL, stdout=lf,
                                   stderr=subprocess.STDOUT)
                except OSError as e:
                    raise ServiceError(f"service '{spec.name}': cannot start {argv[0]}: {e}") from e
            r = _Running(spec, proc, port, log, audit_file)
            try:
                client.wait_healthy(spec.name, client.join(r.url, health_path(spec)), self.health_timeout, r.died)
                return r
            except ServiceError as e:  # most likely the port was taken in between: try another
                last = e
                _kill(proc)
        raise last  # type: ignore[misc]

    def reset(self) -> None:
        for name, r in self.running.items():
            path = reset_path(r.spec)
            if path:
                client.admin(name, r.url, path, self.token)

    def collect(self, dest: Path) -> None:
        """Write each clawkube service's audit log to dest/<name>.json: the live log, else its last audit file.
        Raises ServiceError when neither can be had (the trial cannot be graded on its evidence)."""
        dest.mkdir(parents=True, exist_ok=True)
        for name, r in self.running.items():
            if not is_clawkube_service(r.spec):
                continue
            try:
                log = client.fetch_audit(name, r.url, self.token)
            except ServiceError:
                if not r.audit_file.is_file():
                    raise
                log = json.loads(r.audit_file.read_text())
            (dest / f"{name}.json").write_text(json.dumps(log, indent=1))

    def stop(self) -> None:
        for r in self.running.values():
            _kill(r.spawned)
        self.running.clear()
        (self.private / "services-admin-token").unlink(missing_ok=True)


def _kill(proc: Spawned) -> None:
    proc.stop()
