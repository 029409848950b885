"""The tool gateway: one process per trial in front of a CLAW-Eval task's real mock services.

    python -m clawkube.benchmarks.claweval.gateway CONFIG.json

For each service it listens on a port of its own and forwards to the mock. What reaches the mock from the agent
side goes through here, so this is where the trial sees tool calls "as the services saw them":
- a request that matches one of the task's `tool_endpoints` (method + path) is a tool call: it may be answered by
  this project's deterministic fault injection (429 with Retry-After, 500, or a 2-4 s delay before the real answer;
  `services/injection.py`), unless it carries the benchmark's `X-Health-Check: 1` probe header, and it is appended
  to the dispatch log as the benchmark's `ToolDispatch` record (tool_name, endpoint_url as the task declares it,
  request_body, response_status, response_body, latency_ms);
- `GET .../audit` is forwarded (read-only; the grader reads the same log afterwards, directly from the mock);
- anything else (e.g. `POST .../reset`, which would wipe the audit log) is refused with 404 and never reaches
  the mock.
The dispatch log lives where the agent cannot write (the trial's grading scratch, or the gateway sidecar's own
volume on a cluster), and is also served at `GET /_clawkube/dispatches` on the admin port with the trial token.

As the benchmark's own dispatcher records it: a mock answer that is not JSON, or no answer at all, is recorded
as status 500 with `{"error": ...}`.
"""
from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

from aiohttp import ClientSession, ClientTimeout, web
from pydantic import BaseModel, Field

from ...services.injection import FaultKind, InjectionConfig, decide

HEALTH_HEADER = "X-Health-Check"
TOKEN_HEADER = "X-Clawkube-Token"
DISPATCHES_PATH = "/_clawkube/dispatches"
UPSTREAM_TIMEOUT = 30.0  # the benchmark's dispatcher gives a tool call 30 s
MAX_BODY = 8 * 1024 * 1024


class ServiceRoute(BaseModel):
    name: str
    target: str  # base URL of the real mock, e.g. http://127.0.0.1:41234
    listen_port: int = 0  # 0 = any free port (reported in the ready file)


class ToolRoute(BaseModel):
    tool_name: str
    service: str
    method: str = "POST"
    path: str
    url: str  # as the task declares it (the dispatch record's endpoint_url)


class GatewayConfig(BaseModel):
    services: list[ServiceRoute]
    tools: list[ToolRoute] = Field(default_factory=list)
    injection: InjectionConfig = Field(default_factory=InjectionConfig)
    dispatch_log: str
    ready_file: str
    token: str = ""
    host: str = "127.0.0.1"
    admin_port: int = 0


class Ready(BaseModel):
    ports: dict[str, int]  # service name -> the gateway's port for it
    admin_port: int
    pid: int


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def _json_or_none(raw: bytes) -> tuple[bool, Any]:
    try:
        return True, json.loads(raw) if raw else None
    except ValueError:
        return False, None


class Gateway:
    def __init__(self, cfg: GatewayConfig):
        self.cfg = cfg
        self.tools = {(t.service, t.method.upper(), t.path): t for t in cfg.tools}
        self.targets = {s.name: s.target.rstrip("/") for s in cfg.services}
        self.counts: dict[str, int] = {s.name: 0 for s in cfg.services}
        self.seq = 0
        self.records: list[dict[str, Any]] = []
        Path(cfg.dispatch_log).parent.mkdir(parents=True, exist_ok=True)
        self.log = open(cfg.dispatch_log, "a", encoding="utf-8")
        self.session: Optional[ClientSession] = None

    def _record(self, rec: dict[str, Any]) -> None:
        self.records.append(rec)
        self.log.write(json.dumps(rec, ensure_ascii=False) + "\n")
        self.log.flush()

    async def _forward(self, service: str, request: web.Request, body: bytes) -> tuple[int, bytes, dict[str, str]]:
        assert self.session is not None
        url = self.targets[service] + request.rel_url.path_qs
        headers = {k: v for k, v in request.headers.items()
                   if k.lower() in ("content-type", "accept", HEALTH_HEADER.lower())}
        async with self.session.request(request.method, url, data=body or None, headers=headers) as r:
            data = await r.read()
            ctype = r.headers.get("Content-Type", "application/json")
            return r.status, data, {"Content-Type": ctype}

    def handler(self, service: str):
        async def handle(request: web.Request) -> web.StreamResponse:
            body = await request.read()
            method, path = request.method.upper(), request.path
            tool = self.tools.get((service, method, path))
            if tool is None:
                if method == "GET" and path.endswith("/audit"):
                    try:
                        status, data, headers = await self._forward(service, request, b"")
                    except Exception as e:  # the mock is gone
                        return web.json_response({"error": f"service unreachable: {e}"}, status=502)
                    return web.Response(status=status, body=data, headers=headers)
                return web.json_response({"error": f"{method} {path} is not a tool endpoint of this task"}, status=404)
            return await self._tool_call(service, tool, request, body)
        return handle

    async def _tool_call(self, service: str, tool: ToolRoute, request: web.Request, body: bytes) -> web.StreamResponse:
        t0 = time.monotonic()
        ok, req_json = _json_or_none(body)
        request_body = req_json if ok and isinstance(req_json, dict) else ({} if not body else {"_raw": body.decode(errors="replace")})
        fault = None
        if request.headers.get(HEALTH_HEADER) != "1":
            fault = decide(self.cfg.injection, service, self.counts[service])
            self.counts[service] += 1
        self.seq += 1
        rec: dict[str, Any] = {"type": "tool_dispatch", "trace_id": "", "tool_use_id": f"gw-{self.seq}",
                               "tool_name": tool.tool_name, "endpoint_url": tool.url, "request_body": request_body}
        if fault is not None and fault.kind is not FaultKind.DELAY:
            if fault.status == 429:
                payload = {"error": "rate_limit_exceeded", "message": "Too many requests. Please retry after a short "
                           "delay.", "retry_after_seconds": fault.retry_after}
                headers = {"Retry-After": str(fault.retry_after)}
            else:
                payload = {"error": "internal_server_error", "message": "An unexpected error occurred. Please try "
                           "again."}
                headers = {}
            rec.update(response_status=fault.status, response_body=payload)
            resp: web.StreamResponse = web.json_response(payload, status=fault.status, headers=headers)
        else:
            if fault is not None:
                await asyncio.sleep(fault.delay_seconds)
            try:
                status, data, headers = await self._forward(service, request, body)
                is_json, parsed = _json_or_none(data)
                if is_json:
                    rec.update(response_status=status, response_body=parsed)
                else:
                    rec.update(response_status=500, response_body={
                        "error": f"response of HTTP {status} is not JSON: {data[:200].decode(errors='replace')}"})
                resp = web.Response(status=status, body=data, headers=headers)
            except Exception as e:
                rec.update(response_status=500, response_body={"error": f"{type(e).__name__}: {e}"})
                resp = web.json_response({"error": f"service unreachable: {e}"}, status=502)
        rec.update(latency_ms=(time.monotonic() - t0) * 1000, timestamp=_now(),
                   fault=fault.kind.value if fault is not None else None)
        self._record(rec)
        return resp

    async def dispatches(self, request: web.Request) -> web.Response:
        if not self.cfg.token or request.headers.get(TOKEN_HEADER) != self.cfg.token:
            return web.json_response({"error": "forbidden"}, status=403)
        return web.json_response({"dispatches": self.records})

    async def serve(self) -> None:
        self.session = ClientSession(timeout=ClientTimeout(total=UPSTREAM_TIMEOUT))
        ports: dict[str, int] = {}
        runners = []
        for s in self.cfg.services:
            app = web.Application(client_max_size=MAX_BODY)
            app.router.add_route("*", "/{tail:.*}", self.handler(s.name))
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            site = web.TCPSite(runner, self.cfg.host, s.listen_port)
            await site.start()
            ports[s.name] = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            runners.append(runner)
        admin = web.Application()
        admin.router.add_get(DISPATCHES_PATH, self.dispatches)
        arunner = web.AppRunner(admin, access_log=None)
        await arunner.setup()
        asite = web.TCPSite(arunner, self.cfg.host, self.cfg.admin_port)
        await asite.start()
        admin_port = asite._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        ready = Path(self.cfg.ready_file)
        tmp = ready.with_suffix(".tmp")
        tmp.write_text(Ready(ports=ports, admin_port=admin_port, pid=os.getpid()).model_dump_json())
        tmp.rename(ready)
        await asyncio.Event().wait()


def main(argv: list[str]) -> int:
    cfg = GatewayConfig.model_validate_json(Path(argv[0]).read_text())
    try:
        asyncio.run(Gateway(cfg).serve())
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
