"""The tool gateway in front of a CLAW-Eval task's mock services: forwarding, dispatch records, fault injection,
and what it refuses. A small stand-in service on loopback plays the mock."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from clawkube.benchmarks.claweval.gateway import (DISPATCHES_PATH, TOKEN_HEADER, GatewayConfig, Ready, ServiceRoute,
                                                  ToolRoute)
from clawkube.services.injection import InjectionConfig, decide

OPERATOR = Path(__file__).resolve().parents[1] / "operator"


class _Mock(BaseHTTPRequestHandler):
    seen: list = []

    def log_message(self, *a):
        pass

    def _reply(self, status, body, ctype="application/json"):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        _Mock.seen.append(("POST", self.path, body, self.headers.get("X-Health-Check")))
        if self.path == "/svc/items":
            self._reply(200, {"items": [1, 2], "echo": json.loads(body or b"{}")})
        elif self.path == "/svc/text":
            self._reply(200, b"plain text", "text/plain")
        elif self.path == "/svc/bad":
            self._reply(422, {"detail": "bad input"})
        else:
            self._reply(200, {"status": "reset"})

    def do_GET(self):
        _Mock.seen.append(("GET", self.path, b"", None))
        self._reply(200, {"calls": ["x"]})


@pytest.fixture
def mock():
    _Mock.seen = []
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Mock)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


def _start(tmp_path: Path, target: str, rate: float = 0.0) -> tuple[subprocess.Popen, Ready, GatewayConfig]:
    tools = [ToolRoute(tool_name=n, service="svc", path=p, url=f"http://localhost:9100{p}")
             for n, p in (("list_items", "/svc/items"), ("text_tool", "/svc/text"), ("bad_tool", "/svc/bad"))]
    cfg = GatewayConfig(services=[ServiceRoute(name="svc", target=target)], tools=tools,
                        injection=InjectionConfig(rate=rate, seed=3, trial_key="t/0"),
                        dispatch_log=str(tmp_path / "d.jsonl"), ready_file=str(tmp_path / "ready.json"), token="tok")
    (tmp_path / "gw.json").write_text(cfg.model_dump_json())
    proc = subprocess.Popen([sys.executable, "-m", "clawkube.benchmarks.claweval.gateway", str(tmp_path / "gw.json")],
                            env={"PYTHONPATH": str(OPERATOR), "PATH": "/usr/bin:/bin"})
    deadline = time.monotonic() + 15
    while not (tmp_path / "ready.json").exists():
        assert proc.poll() is None, "gateway exited"
        assert time.monotonic() < deadline, "gateway not ready"
        time.sleep(0.05)
    return proc, Ready.model_validate_json((tmp_path / "ready.json").read_text()), cfg


def _post(url: str, body: bytes = b"{}", headers: dict | None = None) -> tuple[int, bytes]:
    req = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json",
                                                                         **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def _records(tmp_path: Path) -> list[dict]:
    return [json.loads(x) for x in (tmp_path / "d.jsonl").read_text().splitlines()]


def test_tool_calls_forwarded_and_recorded_as_the_benchmark_records_dispatches(tmp_path, mock):
    proc, ready, _ = _start(tmp_path, mock)
    try:
        base = f"http://127.0.0.1:{ready.ports['svc']}"
        status, body = _post(base + "/svc/items", json.dumps({"q": "文件"}).encode())
        assert status == 200 and json.loads(body)["echo"] == {"q": "文件"}
        assert _post(base + "/svc/bad")[0] == 422
        assert _post(base + "/svc/text")[0] == 200
        recs = _records(tmp_path)
        assert [(r["tool_name"], r["response_status"]) for r in recs] == [
            ("list_items", 200), ("bad_tool", 422), ("text_tool", 500)]
        assert recs[0]["endpoint_url"] == "http://localhost:9100/svc/items"  # as the task declares it
        assert recs[0]["request_body"] == {"q": "文件"}
        assert recs[0]["response_body"]["items"] == [1, 2]
        assert "not JSON" in recs[2]["response_body"]["error"]  # the benchmark's dispatcher records a 500 there
        # the admin view needs the trial token
        req = urllib.request.Request(f"http://127.0.0.1:{ready.admin_port}{DISPATCHES_PATH}")
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(req, timeout=5)
        req.add_header(TOKEN_HEADER, "tok")
        with urllib.request.urlopen(req, timeout=5) as r:
            assert len(json.loads(r.read())["dispatches"]) == 3
    finally:
        proc.kill()


def test_reset_and_unknown_paths_never_reach_the_mock_audit_reads_do(tmp_path, mock):
    proc, ready, _ = _start(tmp_path, mock)
    try:
        base = f"http://127.0.0.1:{ready.ports['svc']}"
        assert _post(base + "/svc/reset")[0] == 404  # would wipe the audit log
        assert _post(base + "/elsewhere")[0] == 404
        with urllib.request.urlopen(base + "/svc/audit", timeout=5) as r:
            assert json.loads(r.read()) == {"calls": ["x"]}
        assert [s[:2] for s in _Mock.seen] == [("GET", "/svc/audit")]
        assert not (tmp_path / "d.jsonl").exists() or _records(tmp_path) == []
    finally:
        proc.kill()


def test_faults_are_the_deterministic_sequence_and_health_probes_are_exempt(tmp_path, mock):
    cfg_inj = InjectionConfig(rate=0.6, seed=3, trial_key="t/0")
    expected = [decide(cfg_inj, "svc", n) for n in range(8)]
    assert any(f is not None and f.status for f in expected), "pick a seed with at least one HTTP fault"
    proc, ready, _ = _start(tmp_path, mock, rate=0.6)
    try:
        base = f"http://127.0.0.1:{ready.ports['svc']}"
        # a probe with the benchmark's health header is forwarded untouched and does not count
        assert _post(base + "/svc/items", headers={"X-Health-Check": "1"})[0] == 200
        statuses = [_post(base + "/svc/items")[0] for _ in range(8)]
        want = [f.status if f is not None and f.status else 200 for f in expected]
        assert statuses == want
        recs = _records(tmp_path)[1:]
        assert [r["fault"] for r in recs] == [f.kind.value if f else None for f in expected]
        faulted = [r for r in recs if r["response_status"] == 429]
        for r in faulted:
            assert r["response_body"]["error"] == "rate_limit_exceeded"
        # a fault answers instead of the service: the mock saw only the calls that were not faulted
        forwarded = [s for s in _Mock.seen if s[1] == "/svc/items" and s[3] is None]
        assert len(forwarded) == sum(1 for s in want if s == 200)
    finally:
        proc.kill()
