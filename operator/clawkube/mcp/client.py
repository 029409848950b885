"""A minimal stdio MCP client: start a server process, initialize, list its tools, call them.

Standard library only. Used by this project's own loop agent (`chat_loop.py`) and by tests.
"""
from __future__ import annotations

import json
import subprocess
import threading
from typing import Any, Optional

PROTOCOL_VERSION = "2025-03-26"


class McpError(Exception):
    pass


class StdioClient:
    def __init__(self, command: list[str], env: Optional[dict[str, str]] = None, timeout: float = 120.0):
        self.timeout = timeout
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env, text=True, encoding="utf-8")
        self._next = 0
        self._stderr: list[str] = []
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._stderr.append(line)

    def request(self, method: str, params: Optional[dict[str, Any]] = None) -> Any:
        self._next += 1
        mid = self._next
        self._send({"jsonrpc": "2.0", "id": mid, "method": method, "params": params or {}})
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise McpError(f"MCP server exited during {method}: {''.join(self._stderr)[-500:]}")
            msg = json.loads(line)
            if msg.get("id") != mid:
                continue  # a notification or a server request we do not answer
            if "error" in msg:
                raise McpError(f"{method}: {msg['error'].get('message')}")
            return msg.get("result")

    def notify(self, method: str, params: Optional[dict[str, Any]] = None) -> None:
        self._send({"jsonrpc": "2.0", "method": method, **({"params": params} if params else {})})

    def _send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg, ensure_ascii=False) + "\n")
        self.proc.stdin.flush()

    def initialize(self) -> dict[str, Any]:
        res = self.request("initialize", {"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                                          "clientInfo": {"name": "clawkube", "version": "1"}})
        self.notify("notifications/initialized")
        return res

    def list_tools(self) -> list[dict[str, Any]]:
        return list((self.request("tools/list") or {}).get("tools", []))

    def call_tool(self, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        res = self.request("tools/call", {"name": name, "arguments": arguments}) or {}
        text = "\n".join(c.get("text", "") for c in res.get("content", []) if c.get("type") == "text")
        return text, bool(res.get("isError"))

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except Exception:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> "StdioClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
