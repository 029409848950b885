"""A stdio MCP server that offers a fixed set of tools and forwards each call to an HTTP endpoint.

    python3 -m clawkube.mcp.server TOOLS.json

TOOLS.json: `{"name": "<server name>", "tools": [{"name", "description", "input_schema", "url", "method"}]}`.
A call `tools/call {name, arguments}` sends `arguments` as the JSON body of `method url` and answers with the
response as JSON text (`isError` when the status is 400 or above), the way CLAW-Eval's own dispatcher turns a
mock service's answer into a tool result. An endpoint that cannot be reached, or answers something other than
JSON, gives an error result `Error: ...`.

Standard library only (it runs inside the agent's sandbox, under whatever Python the harness finds); newline-
delimited JSON-RPC 2.0 on stdin/stdout as MCP's stdio transport specifies; logs go to stderr.
"""
from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from typing import Any, Optional

PROTOCOL_VERSIONS = ("2025-06-18", "2025-03-26", "2024-11-05")
CALL_TIMEOUT = 60.0  # above the gateway's 30 s upstream timeout plus an injected delay


def load(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as f:
        cfg = json.load(f)
    if not isinstance(cfg, dict) or not isinstance(cfg.get("tools"), list):
        raise ValueError(f"{path}: expected {{'tools': [...]}}")
    for t in cfg["tools"]:
        if not isinstance(t, dict) or not t.get("name") or not t.get("url"):
            raise ValueError(f"{path}: every tool needs a name and a url: {t!r:.200}")
    return cfg


def call_endpoint(url: str, method: str, arguments: dict[str, Any]) -> tuple[str, bool]:
    """(result text, is_error) of one forwarded tool call."""
    data = json.dumps(arguments, ensure_ascii=False).encode("utf-8")
    req = urllib.request.Request(url, data=data, method=method.upper(), headers={"Content-Type": "application/json"})
    try:
        try:
            with urllib.request.urlopen(req, timeout=CALL_TIMEOUT) as r:
                status, raw = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read()
        body = json.loads(raw.decode("utf-8"))
    except Exception as e:  # unreachable, timed out, not JSON
        return f"Error: {e}", True
    return json.dumps(body, ensure_ascii=False), status >= 400


class Server:
    def __init__(self, cfg: dict[str, Any]):
        self.name = str(cfg.get("name") or "tools")
        self.tools = {t["name"]: t for t in cfg["tools"]}

    def tool_list(self) -> list[dict[str, Any]]:
        return [{"name": t["name"], "description": t.get("description", ""),
                 "inputSchema": t.get("input_schema") or {"type": "object", "properties": {}}}
                for t in self.tools.values()]

    def handle(self, msg: dict[str, Any]) -> Optional[dict[str, Any]]:
        method, mid = msg.get("method"), msg.get("id")
        if mid is None:  # a notification (initialized, cancelled, ...): no answer
            return None
        params = msg.get("params") or {}
        try:
            result = self._dispatch(method, params)
        except _RpcError as e:
            return {"jsonrpc": "2.0", "id": mid, "error": {"code": e.code, "message": e.message}}
        return {"jsonrpc": "2.0", "id": mid, "result": result}

    def _dispatch(self, method: Any, params: dict[str, Any]) -> dict[str, Any]:
        if method == "initialize":
            asked = params.get("protocolVersion")
            version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]
            return {"protocolVersion": version, "capabilities": {"tools": {"listChanged": False}},
                    "serverInfo": {"name": self.name, "version": "1"}}
        if method == "ping":
            return {}
        if method == "tools/list":
            return {"tools": self.tool_list()}
        if method == "tools/call":
            name = params.get("name")
            tool = self.tools.get(name)
            if tool is None:
                return {"content": [{"type": "text", "text": f"Error: unknown tool '{name}'"}], "isError": True}
            args = params.get("arguments") or {}
            if not isinstance(args, dict):
                raise _RpcError(-32602, "arguments must be an object")
            text, is_error = call_endpoint(tool["url"], tool.get("method", "POST"), args)
            return {"content": [{"type": "text", "text": text}], "isError": is_error}
        if method in ("resources/list", "prompts/list"):
            return {method.split("/")[0]: []}
        raise _RpcError(-32601, f"method not found: {method}")


class _RpcError(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code, self.message = code, message


def serve(server: Server, stdin=None, stdout=None) -> None:
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    for line in stdin:
        line = line.strip()
        if not line:
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            out: Optional[dict[str, Any]] = {"jsonrpc": "2.0", "id": None,
                                             "error": {"code": -32700, "message": "parse error"}}
        else:
            if isinstance(msg, list):  # a batch (2025-03-26)
                answers = [a for a in (server.handle(m) for m in msg if isinstance(m, dict)) if a is not None]
                out = answers or None  # type: ignore[assignment]
            elif isinstance(msg, dict):
                out = server.handle(msg)
            else:
                out = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "invalid request"}}
        if out is not None:
            stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
            stdout.flush()


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python3 -m clawkube.mcp.server TOOLS.json", file=sys.stderr)
        return 2
    try:
        cfg = load(argv[0])
    except (OSError, ValueError) as e:
        print(f"clawkube.mcp.server: {e}", file=sys.stderr)
        return 2
    serve(Server(cfg))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
