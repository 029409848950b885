"""A CLAW-Eval task's real mock services for one trial, as local processes, with the tool gateway in front.

As the benchmark's runner starts them (`ServiceManager`): each service's `command` from the benchmark root (a
leading `python`/`python3` is the benchmark's interpreter), with the runner's environment (minus proxy
variables) plus the service's `env`, and `PORT`; it is ready at the first answer below 500 to its
`health_check` (`health_check_method`, header `X-Health-Check: 1`) within `ready_timeout` seconds. That one
successful probe is in the mock's audit log, as it is upstream.

Unlike upstream each trial gets free ports (parallel trials never collide) and its own processes (no state
carried over between trials). Agents reach the services only through the gateway (`gateway.py`): its ports are
what the MCP tool server and the `*_API_URL` variables name. After the agent, `audit()` reads each service's
audit endpoint (the reset endpoint's `/reset` replaced by `/audit`, as the benchmark's loop does) directly from
the mock, and `dispatches()` the gateway's log.
"""
from __future__ import annotations

import json
import os
import secrets
import shlex
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Optional

from ...contracts.judge import ALL_ENV as JUDGE_ENV
from ...execution.host import Spawned
from ...services.injection import InjectionConfig
from .gateway import HEALTH_HEADER, GatewayConfig, Ready, ServiceRoute, ToolRoute
from .taskyaml import Service, TaskYaml, url_port_path

PROXY_VARS = ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
GATEWAY_READY_TIMEOUT = 15.0


class MockError(Exception):
    """A service did not start or become ready (the trial records an infra error)."""


def free_port() -> int:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def service_argv(svc: Service, python: str) -> list[str]:
    argv = shlex.split(svc.command)
    if argv and argv[0] in ("python", "python3"):
        argv[0] = python
    return argv


def service_env(svc: Service, port: int, base: Optional[dict[str, str]] = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    for k in (*PROXY_VARS, *JUDGE_ENV):  # the judge's key reaches the simulated user only, never a mock
        env.pop(k, None)
    env.update(svc.env)
    env["PORT"] = str(port)
    env.setdefault("PYTHONDONTWRITEBYTECODE", "1")  # never write into the checkout
    return env


def on_port(url: str, port: int) -> str:
    """A task URL (http://localhost:<declared>/path) pointed at `port` on 127.0.0.1."""
    pp = url_port_path(url)
    if pp is None:
        raise MockError(f"{url!r} is not a localhost URL")
    return f"http://127.0.0.1:{port}{pp[1]}"


def audit_url(svc: Service, port: int) -> Optional[str]:
    if not svc.reset_endpoint:
        return None
    return on_port(svc.reset_endpoint.rsplit("/reset", 1)[0] + "/audit", port)


def probe(url: str, method: str, timeout: float = 2.0) -> Optional[int]:
    """The status of one health probe, or None when nothing answers."""
    m = "GET" if method.upper() == "GET" else "POST"
    req = urllib.request.Request(url, data=b"" if m == "POST" else None, method=m, headers={HEALTH_HEADER: "1"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except (OSError, urllib.error.URLError):
        return None


def get_json(url: str, timeout: float = 5.0) -> Any:
    with urllib.request.urlopen(urllib.request.Request(url), timeout=timeout) as r:
        return json.loads(r.read())


class _Proc:
    def __init__(self, name: str, proc: Spawned, log: Path, port: int):
        self.name, self.proc, self.log, self.port = name, proc, log, port

    def exited(self) -> Optional[str]:
        if self.proc.proc.poll() is None:
            return None
        return f"exit code {self.proc.proc.returncode}: {self.log.read_text(errors='replace').strip()[-800:]}"


def spawn(argv: list[str], name: str, log: Path, **kwargs) -> Spawned:
    """A process of the trial's environment (mock, gateway, simulated user), started through the execution
    layer's host spawner: in a cgroup under the runner's, killed with all it started when the runner dies."""
    with open(log, "wb") as lf:
        return Spawned(argv, name=name, stdin=subprocess.DEVNULL, stdout=lf, stderr=subprocess.STDOUT, **kwargs)


def _kill(proc: Spawned) -> None:
    proc.stop(grace=5.0)


class MockServices:
    """Start with `start()` (or as a context manager); `tool_urls` / `urls` then name the gateway."""

    def __init__(self, task: TaskYaml, root: Path, python: str, private: Path,
                 injection: Optional[InjectionConfig] = None, env: Optional[dict[str, str]] = None,
                 declared_ports: bool = False):
        self.task, self.root, self.python, self.private = task, Path(root), python, Path(private)
        self.declared_ports = declared_ports  # the gateway on the task's own ports (parity runs; one trial at a time)
        self.injection = injection or InjectionConfig()
        self.base_env = env
        self.token = secrets.token_hex(16)
        self.mocks: dict[str, _Proc] = {}
        self.gateway: Optional[_Proc] = None
        self.ready: Optional[Ready] = None

    def __enter__(self) -> "MockServices":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    # --- start ------------------------------------------------------------------------------------------------
    def start(self) -> None:
        if not self.task.services:
            return
        self.private.mkdir(parents=True, exist_ok=True)
        try:
            for svc in self.task.services:
                self.mocks[svc.name] = self._start_mock(svc)
            self._start_gateway()
        except BaseException:
            self.stop()
            raise

    def _start_mock(self, svc: Service) -> _Proc:
        port = free_port()
        log = self.private / f"service-{svc.name}.log"
        argv = service_argv(svc, self.python)
        try:
            proc = spawn(argv, f"claweval-{svc.name}", log, cwd=self.root, env=service_env(svc, port, self.base_env))
        except OSError as e:
            raise MockError(f"service '{svc.name}': cannot start {argv[0]}: {e}") from e
        p = _Proc(svc.name, proc, log, port)
        url = on_port(svc.health_check, port)
        deadline = time.monotonic() + svc.ready_timeout
        while True:
            dead = p.exited()
            if dead:
                raise MockError(f"service '{svc.name}' ({svc.command}) exited before it was ready: {dead}")
            status = probe(url, svc.health_check_method)
            if status is not None and status < 500:
                return p
            if time.monotonic() >= deadline:
                _kill(proc)
                raise MockError(f"service '{svc.name}' ({svc.command}) not ready within {svc.ready_timeout}s: "
                                f"{svc.health_check_method.upper()} {svc.health_check} -> "
                                f"{status if status is not None else 'no answer'}; log: "
                                f"{log.read_text(errors='replace').strip()[-500:]}")
            time.sleep(0.3)

    def gateway_config(self) -> GatewayConfig:
        by_port = {s.port: s.name for s in self.task.services}
        tools = []
        for e in self.task.tool_endpoints:
            pp = url_port_path(e.url)
            if pp is None or pp[0] not in by_port:
                continue  # the loader reports these; nothing to route to
            tools.append(ToolRoute(tool_name=e.tool_name, service=by_port[pp[0]], method=e.method.upper(),
                                   path=pp[1], url=e.url))
        return GatewayConfig(
            services=[ServiceRoute(name=s.name, target=f"http://127.0.0.1:{self.mocks[s.name].port}",
                                   listen_port=s.port if self.declared_ports else 0) for s in self.task.services],
            tools=tools, injection=self.injection, dispatch_log=str(self.private / "dispatches.jsonl"),
            ready_file=str(self.private / "gateway-ready.json"), token=self.token)

    def _start_gateway(self) -> None:
        cfg = self.gateway_config()
        cfg_file = self.private / "gateway.json"
        cfg_file.write_text(cfg.model_dump_json())
        Path(cfg.ready_file).unlink(missing_ok=True)
        log = self.private / "gateway.log"
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8",
               "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
        proc = spawn([sys.executable, "-m", "clawkube.benchmarks.claweval.gateway", str(cfg_file)],
                     "claweval-gateway", log, env=env)
        self.gateway = _Proc("gateway", proc, log, 0)
        deadline = time.monotonic() + GATEWAY_READY_TIMEOUT
        ready = Path(cfg.ready_file)
        while not ready.is_file():
            dead = self.gateway.exited()
            if dead:
                raise MockError(f"tool gateway exited: {dead}")
            if time.monotonic() >= deadline:
                raise MockError(f"tool gateway not ready within {GATEWAY_READY_TIMEOUT:g}s")
            time.sleep(0.05)
        self.ready = Ready.model_validate_json(ready.read_text())

    # --- what the agent side gets --------------------------------------------------------------------------
    @property
    def urls(self) -> dict[str, str]:
        """Service name -> the gateway's base URL for it."""
        if self.ready is None:
            return {}
        return {n: f"http://127.0.0.1:{p}" for n, p in self.ready.ports.items()}

    @property
    def tool_urls(self) -> dict[str, str]:
        """Tool name -> URL of its endpoint through the gateway."""
        if self.ready is None:
            return {}
        by_port = {s.port: s.name for s in self.task.services}
        out = {}
        for e in self.task.tool_endpoints:
            pp = url_port_path(e.url)
            if pp is not None and pp[0] in by_port:
                out[e.tool_name] = f"http://127.0.0.1:{self.ready.ports[by_port[pp[0]]]}{pp[1]}"
        return out

    # --- evidence -----------------------------------------------------------------------------------------------
    def audit(self) -> dict[str, Any]:
        """{service: audit data} read from each mock's audit endpoint (services without one are left out, as
        upstream). MockError when a service does not answer: the trial's evidence would be incomplete."""
        out: dict[str, Any] = {}
        for svc in self.task.services:
            p = self.mocks.get(svc.name)
            url = audit_url(svc, p.port) if p else None
            if url is None:
                continue
            try:
                out[svc.name] = get_json(url)
            except Exception as e:
                dead = p.exited() if p else None
                raise MockError(f"service '{svc.name}': audit fetch from {url} failed: {type(e).__name__}: {e}"
                                + (f" (the service {dead})" if dead else "")) from None
        return out

    def reset_all(self) -> None:
        """POST each service's reset endpoint (directly, not through the gateway)."""
        for svc in self.task.services:
            p = self.mocks.get(svc.name)
            if p is None or not svc.reset_endpoint:
                continue
            req = urllib.request.Request(on_port(svc.reset_endpoint, p.port), data=b"", method="POST")
            try:
                with urllib.request.urlopen(req, timeout=10):
                    pass
            except (OSError, urllib.error.URLError) as e:
                raise MockError(f"service '{svc.name}': reset failed: {e}") from None

    def dispatches(self) -> list[dict[str, Any]]:
        f = self.private / "dispatches.jsonl"
        if not f.is_file():
            return []
        return [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]

    def stop(self) -> None:
        if self.gateway is not None:
            _kill(self.gateway.proc)
        for p in self.mocks.values():
            _kill(p.proc)
        self.mocks.clear()
