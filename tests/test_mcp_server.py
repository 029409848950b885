"""The stdio MCP tool server (clawkube.mcp.server) through the project's own client, as a harness would use it."""
from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from clawkube.mcp.client import McpError, StdioClient

OPERATOR = Path(__file__).resolve().parents[1] / "operator"


class _Svc(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        status, out = {"/ok": (200, {"got": body}), "/err": (429, {"error": "rate_limit_exceeded"}),
                       "/text": (200, None)}.get(self.path, (404, {"error": "no"}))
        data = b"not json" if out is None else json.dumps(out, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def tools_file(tmp_path):
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Svc)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{srv.server_address[1]}"
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    f = tmp_path / "tools.json"
    f.write_text(json.dumps({"name": "claweval", "tools": [
        {"name": "ok_tool", "description": "works", "input_schema": schema, "url": base + "/ok"},
        {"name": "flaky", "description": "429s", "url": base + "/err"},
        {"name": "texty", "description": "not JSON", "url": base + "/text"},
        {"name": "gone", "description": "nothing listens", "url": "http://127.0.0.1:9/x"},
    ]}))
    yield f
    srv.shutdown()


def _client(f: Path) -> StdioClient:
    return StdioClient([sys.executable, "-m", "clawkube.mcp.server", str(f)], env={"PYTHONPATH": str(OPERATOR)})


def test_initialize_list_and_call(tools_file):
    with _client(tools_file) as c:
        init = c.initialize()
        assert init["capabilities"]["tools"] is not None and init["serverInfo"]["name"] == "claweval"
        tools = {t["name"]: t for t in c.list_tools()}
        assert set(tools) == {"ok_tool", "flaky", "texty", "gone"}
        assert tools["ok_tool"]["inputSchema"]["required"] == ["q"]
        assert tools["flaky"]["inputSchema"] == {"type": "object", "properties": {}}
        text, err = c.call_tool("ok_tool", {"q": "邮件"})
        assert not err and json.loads(text) == {"got": {"q": "邮件"}}
        text, err = c.call_tool("flaky", {})
        assert err and json.loads(text)["error"] == "rate_limit_exceeded"  # the body, as the benchmark returns it
        text, err = c.call_tool("texty", {})
        assert err and text.startswith("Error:")
        text, err = c.call_tool("gone", {})
        assert err and text.startswith("Error:")
        text, err = c.call_tool("nope", {})
        assert err and "unknown tool" in text


def test_protocol_errors_are_answered_not_fatal(tools_file):
    with _client(tools_file) as c:
        c.initialize()
        with pytest.raises(McpError, match="method not found"):
            c.request("sampling/createMessage")
        with pytest.raises(McpError, match="arguments must be an object"):
            c.request("tools/call", {"name": "ok_tool", "arguments": [1]})
        c._send({"jsonrpc": "2.0", "method": "notifications/cancelled"})  # no answer expected
        assert c.request("ping") == {}
        assert c.proc.stdout is not None
        c.proc.stdin.write("{not json\n")
        c.proc.stdin.flush()
        assert json.loads(c.proc.stdout.readline())["error"]["code"] == -32700
        assert len(c.list_tools()) == 4  # still serving


def test_negotiates_the_clients_protocol_version(tools_file):
    with _client(tools_file) as c:
        assert c.request("initialize", {"protocolVersion": "2024-11-05"})["protocolVersion"] == "2024-11-05"
    with _client(tools_file) as c:
        assert c.request("initialize", {"protocolVersion": "1999-01-01"})["protocolVersion"] == "2025-06-18"


def test_bad_tools_file_exits_with_a_message(tmp_path):
    import subprocess
    f = tmp_path / "t.json"
    f.write_text(json.dumps({"tools": [{"name": "x"}]}))
    p = subprocess.run([sys.executable, "-m", "clawkube.mcp.server", str(f)], capture_output=True, text=True,
                       env={"PYTHONPATH": str(OPERATOR)}, stdin=subprocess.DEVNULL)
    assert p.returncode == 2 and "needs a name and a url" in p.stderr
