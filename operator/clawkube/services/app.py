"""The aiohttp application every mock service shares.

- `GET /health`: 200 when up (not logged, never faulted).
- admin endpoints need the header `X-Clawkube-Admin-Token` (the agent does not have it, so it cannot wipe or
  read the evidence): `GET /_admin/audit` (the `AuditLog`), `POST /_admin/reset` (state back to the fixtures,
  audit and call counter cleared), `POST /_admin/shutdown`. Without a configured token they answer 403.
- every other request is a tool call: it may be answered by an injected fault, and it is appended to the audit
  log (and to `--audit FILE`, rewritten atomically after each call).
"""
from __future__ import annotations

import asyncio
import copy
import hmac
import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Awaitable, Callable, Optional

from aiohttp import web

from .admin import ADMIN_PREFIX, AUDIT_PATH, HEALTH_PATH, RESET_PATH, SHUTDOWN_PATH, TOKEN_HEADER  # noqa: F401
from .audit import AuditCall, AuditLog, CallRequest, CallResponse, InjectionInfo
from .injection import FaultKind, InjectionConfig, decide


@dataclass
class ServiceDef:
    """One kind of service: its initial state from a fixture document, and its routes."""

    kind: str
    initial_state: Callable[[Optional[dict]], dict]
    add_routes: Callable[[web.Application], None]


@dataclass
class Runtime:
    name: str
    kind: str
    pristine: dict
    injection: InjectionConfig
    token: Optional[str] = None
    audit_file: Optional[Path] = None
    state: dict = field(default_factory=dict)
    audit: AuditLog = None  # type: ignore[assignment]
    calls: int = 0
    stopping: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.state = copy.deepcopy(self.pristine)
        self.calls = 0
        self.audit = AuditLog(service=self.name, kind=self.kind, injection=InjectionInfo(**self.injection.model_dump()))
        self.write_audit()

    def write_audit(self) -> None:
        if self.audit_file is None:
            return
        tmp = self.audit_file.with_name(self.audit_file.name + ".tmp")
        tmp.write_text(self.audit.model_dump_json(indent=1))
        tmp.replace(self.audit_file)


RUNTIME = web.AppKey("clawkube_runtime", Runtime)


def state(request: web.Request) -> dict:
    return request.app[RUNTIME].state


def error(status: int, message: str, **extra: Any) -> web.Response:
    return web.json_response({"error": message, **extra}, status=status)


async def json_body(request: web.Request) -> dict:
    """The request's JSON object, or a 400 answer raised."""
    try:
        data = await request.json()
    except (ValueError, UnicodeDecodeError):
        raise web.HTTPBadRequest(text=json.dumps({"error": "body must be a JSON object"}),
                                 content_type="application/json") from None
    if not isinstance(data, dict):
        raise web.HTTPBadRequest(text=json.dumps({"error": "body must be a JSON object"}),
                                 content_type="application/json")
    return data


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _parse(raw: bytes) -> Any:
    if not raw:
        return None
    text = raw.decode(errors="replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


def _endpoint(request: web.Request) -> str:
    """The matched route's template (e.g. /messages/{id}); the raw path when no route matched."""
    resource = request.match_info.route.resource
    return resource.canonical if resource is not None else request.path


def _client_gone(request: web.Request) -> bool:
    t = request.transport
    return t is None or t.is_closing()


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def tool_calls(request: web.Request, handler: Handler) -> web.StreamResponse:
    rt = request.app[RUNTIME]
    if request.path == HEALTH_PATH or request.path.startswith(ADMIN_PREFIX):
        return await handler(request)
    n = rt.calls
    rt.calls += 1
    fault = decide(rt.injection, rt.name, n)
    req = CallRequest(query=dict(request.query), body=_parse(await request.read()))
    delay = 0.0
    if fault is not None and fault.kind is not FaultKind.DELAY:
        headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else {}
        msg = "rate limited: retry later" if fault.status == 429 else "internal server error"
        resp: web.StreamResponse = web.json_response({"error": msg}, status=fault.status, headers=headers)
    else:
        if fault is not None:
            delay = fault.delay_seconds
            await asyncio.sleep(delay)
        try:
            resp = await handler(request)
        except web.HTTPException as e:
            resp = e
    body = _parse(resp.body) if isinstance(getattr(resp, "body", None), bytes) else None
    rt.audit.calls.append(AuditCall(
        seq=n, timestamp=_now(), method=request.method, endpoint=_endpoint(request), path=request.path,
        request=req, response=CallResponse(status=resp.status, body=body),
        injected=fault.kind.value if fault is not None else None, delay_seconds=delay,
        client_disconnected=bool(delay) and _client_gone(request)))
    rt.write_audit()
    if isinstance(resp, web.HTTPException):
        raise resp
    return resp


def _authorised(request: web.Request) -> bool:
    token = request.app[RUNTIME].token
    given = request.headers.get(TOKEN_HEADER, "")
    return bool(token) and hmac.compare_digest(given.encode(), token.encode())


def _admin(fn: Callable[[web.Request, Runtime], Awaitable[web.StreamResponse]]) -> Handler:
    async def handler(request: web.Request) -> web.StreamResponse:
        if not _authorised(request):
            return error(403, f"admin endpoint: missing or wrong {TOKEN_HEADER}")
        return await fn(request, request.app[RUNTIME])
    return handler


async def _health(request: web.Request) -> web.Response:
    rt = request.app[RUNTIME]
    return web.json_response({"status": "ok", "service": rt.name, "kind": rt.kind})


async def _audit(request: web.Request, rt: Runtime) -> web.Response:
    return web.json_response(json.loads(rt.audit.model_dump_json()))


async def _reset(request: web.Request, rt: Runtime) -> web.Response:
    rt.reset()
    return web.json_response({"status": "reset"})


async def _shutdown(request: web.Request, rt: Runtime) -> web.Response:
    rt.stopping.set()
    return web.json_response({"status": "stopping"})


def build_app(sdef: ServiceDef, rt: Runtime) -> web.Application:
    app = web.Application(middlewares=[tool_calls])
    app[RUNTIME] = rt
    app.router.add_get(HEALTH_PATH, _health)
    app.router.add_get(AUDIT_PATH, _admin(_audit))
    app.router.add_post(RESET_PATH, _admin(_reset))
    app.router.add_post(SHUTDOWN_PATH, _admin(_shutdown))
    sdef.add_routes(app)
    return app


def runtime(sdef: ServiceDef, name: str, fixture: Optional[dict], injection: InjectionConfig,
            token: Optional[str], audit_file: Optional[Path]) -> Runtime:
    return Runtime(name=name, kind=sdef.kind, pristine=sdef.initial_state(fixture), injection=injection,
                   token=token, audit_file=audit_file)


async def serve(app: web.Application, host: str, port: int, ready: Optional[Callable[[], None]] = None) -> None:
    """Serve until POST /_admin/shutdown (or cancellation)."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    if ready:
        ready()
    try:
        await app[RUNTIME].stopping.wait()
        await asyncio.sleep(0.1)  # let the shutdown answer go out
    finally:
        await runner.cleanup()
