"""The scripted model server: an aiohttp app speaking OpenAI Chat Completions and Responses and Anthropic Messages.

Routes match on the path's end, so any base URL prefix works (`http://host:port`, `.../v1`, `.../api/v1`):
`POST .../chat/completions`, `POST .../responses`, `POST .../messages`, `POST .../messages/count_tokens`,
`GET .../models`; plus `GET /_clawkube/requests` (the request log as JSON), `DELETE` of it to clear it, and
`GET /healthz`.
"""
from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any, Optional

from aiohttp import web
from pydantic import BaseModel, Field

from . import formats
from .script import Api, Script, choose
from .views import view

LOG_PATH = "/_clawkube/requests"


class LoggedRequest(BaseModel):
    """One entry of the request log (also one line of `--log FILE`)."""

    seq: int
    time: float
    api: Api
    path: str
    model: str = ""
    stream: bool = False
    turn: int = 0  # assistant turns already in the conversation
    source: str = ""  # which script entry answered: rules[i], turns[k][j], fallback
    reply_name: Optional[str] = None
    tools: list[str] = Field(default_factory=list)
    last_text: str = ""
    status: int = 200
    usage: Optional[dict[str, int]] = None  # in the script's terms (input excludes cache reads)
    reported_usage: Optional[dict[str, Any]] = None  # as this API reported it
    tool_calls: list[dict[str, str]] = Field(default_factory=list)
    text: str = ""
    body: dict[str, Any] = Field(default_factory=dict)


class ModelServer:
    def __init__(self, script: Script, log_file: Optional[Path] = None):
        self.script = script
        self.log: list[LoggedRequest] = []
        self.log_file = log_file
        self._lock = threading.Lock()

    # ---- app ----
    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_get("/healthz", _healthz)
        app.router.add_get(LOG_PATH, self._get_log)
        app.router.add_delete(LOG_PATH, self._clear_log)
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        return app

    async def _get_log(self, _req: web.Request) -> web.Response:
        with self._lock:
            return web.json_response([e.model_dump() for e in self.log])

    async def _clear_log(self, _req: web.Request) -> web.Response:
        with self._lock:
            self.log.clear()
        return web.json_response({"ok": True})

    async def _dispatch(self, req: web.Request) -> web.StreamResponse:
        path = req.path.rstrip("/")
        if req.method == "GET" and path.endswith("/models"):
            return self._models()
        if req.method != "POST":
            return web.json_response({"error": {"message": f"no route {req.method} {req.path}"}}, status=404)
        api: Optional[Api] = ("chat" if path.endswith("/chat/completions") else "responses"
                              if path.endswith("/responses") else "anthropic"
                              if path.endswith("/messages") or path.endswith("/messages/count_tokens") else None)
        if api is None:
            return web.json_response({"error": {"message": f"no route POST {req.path}"}}, status=404)
        if self.script.api_key and self.script.api_key not in (
                req.headers.get("x-api-key"), req.headers.get("api-key"),
                req.headers.get("Authorization", "").removeprefix("Bearer ").strip()):
            return _error(api, 401, "invalid API key (the script sets api_key)")
        raw = await req.read()
        try:
            body = json.loads(raw or b"{}")
            if not isinstance(body, dict):
                raise ValueError("the body is not a JSON object")
        except ValueError as e:
            return _error(api, 400, f"invalid JSON body: {e}")
        rv = view(api, body, len(raw))
        if path.endswith("/count_tokens"):
            return web.json_response({"input_tokens": max(1, rv.body_chars // 4)})
        choice = choose(self.script, rv)
        entry = LoggedRequest(seq=0, time=time.time(), api=api, path=req.path, model=rv.model, stream=rv.stream,
                              turn=rv.assistant_turns, source=choice.source, reply_name=choice.reply.name,
                              tools=sorted(rv.tools), last_text=rv.last_text[-2000:], body=body)
        with self._lock:
            entry.seq = len(self.log) + 1
            self.log.append(entry)
        if choice.reply.delay_seconds:
            await asyncio.sleep(choice.reply.delay_seconds)
        if choice.reply.error:
            entry.status = choice.reply.error.status
            self._append_file(entry)
            return _error(api, choice.reply.error.status, choice.reply.error.message)
        r = formats.resolve(choice, rv, self.script.usage, entry.seq)
        entry.usage = r.usage.model_dump()
        entry.reported_usage = formats.usage_of(api, r)
        entry.tool_calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in r.calls]
        entry.text = r.text
        self._append_file(entry)
        created = int(entry.time)
        if not rv.stream:
            data = {"chat": lambda: formats.chat_json(r, created), "anthropic": lambda: formats.anthropic_json(r),
                    "responses": lambda: formats.responses_json(r, created)}[api]()
            return web.json_response(data)
        if api == "chat":
            opts = body.get("stream_options") or {}
            events = formats.chat_sse(r, created, separate_usage_chunk=bool(opts.get("include_usage")))
        else:
            events = formats.responses_sse(r, created) if api == "responses" else formats.anthropic_sse(r)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await resp.prepare(req)
        for name, data in events:
            payload = data if isinstance(data, str) else json.dumps(data)
            await resp.write(((f"event: {name}\n" if name else "") + f"data: {payload}\n\n").encode())
        await resp.write_eof()
        return resp

    def _models(self) -> web.Response:
        data = [{"id": m, "object": "model", "created": 0, "owned_by": "clawkube", "type": "model",
                 "display_name": m, "created_at": "1970-01-01T00:00:00Z"} for m in self.script.models]
        return web.json_response({"object": "list", "data": data, "has_more": False,
                                  "first_id": data[0]["id"] if data else None,
                                  "last_id": data[-1]["id"] if data else None})

    def _append_file(self, entry: LoggedRequest) -> None:
        if self.log_file:
            with self._lock, open(self.log_file, "a") as f:
                f.write(entry.model_dump_json() + "\n")


async def _healthz(_req: web.Request) -> web.Response:
    return web.json_response({"ok": True})


def _error(api: Api, status: int, message: str) -> web.Response:
    if api == "anthropic":
        return web.json_response({"type": "error", "error": {"type": "api_error", "message": message}}, status=status)
    return web.json_response({"error": {"message": message, "type": "server_error", "code": status}}, status=status)


class ServerThread:
    """The server on a background thread, for tests: `with ServerThread(script) as s: ... s.url, s.requests()`."""

    def __init__(self, script: Script, host: str = "127.0.0.1", port: int = 0, log_file: Optional[Path] = None):
        self.server = ModelServer(script, log_file)
        self.host, self.port = host, port
        self._loop = asyncio.new_event_loop()
        self._runner: Optional[web.AppRunner] = None
        self._thread = threading.Thread(target=self._loop.run_forever, name="model-server", daemon=True)

    @property
    def url(self) -> str:
        """The base URL without /v1 (Anthropic clients add /v1/messages; OpenAI clients want url + '/v1')."""
        return f"http://{self.host}:{self.port}"

    def start(self) -> "ServerThread":
        self._thread.start()
        self.port = asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=30)
        return self

    async def _start(self) -> int:
        self._runner = web.AppRunner(self.server.app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        return site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def requests(self) -> list[LoggedRequest]:
        with self.server._lock:
            return list(self.server.log)

    def stop(self) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout=30)
            self._runner = None
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    def __enter__(self) -> "ServerThread":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve(script: Script, host: str, port: int, log_file: Optional[Path] = None,
          port_file: Optional[Path] = None) -> None:
    """Run in the foreground until interrupted (the `clawkube model-server` command)."""
    async def main() -> None:
        runner = web.AppRunner(ModelServer(script, log_file).app(), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, host, port)
        await site.start()
        bound = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        if port_file:
            tmp = port_file.with_suffix(port_file.suffix + ".tmp")
            tmp.write_text(str(bound))
            tmp.replace(port_file)
        print(f"clawkube model-server: listening on http://{host}:{bound} "
              f"(OpenAI base URL http://{host}:{bound}/v1)", flush=True)
        try:
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        print("clawkube model-server: stopped", file=sys.stderr)
