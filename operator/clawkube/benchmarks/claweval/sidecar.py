"""A CLAW-Eval trial's environment on a cluster: one sidecar container of the agent pod ("svc-claweval").

    python -m clawkube.benchmarks.claweval.sidecar --manifest /clawkube/bundle/task.json

It runs in the CLAW-Eval *services* image (images/build.sh --claw-eval: the checkout's mock services, the
`claw_eval` package and the tasks' service fixtures; no grader, no grading-only file) exactly what the local
runner runs beside the agent (environment.TaskEnvironment): the task's real mock services started as the task
says (command from the checkout root, its env, its health check), this project's tool gateway in front of them
on the task's own ports (a pod has its own loopback, so the URLs the task's tools declare work as written) with
fault injection and dispatch records, and the simulated user of a multi-turn task (on the run's judge).

Handshake with `clawkube pod agent` in the agent container (the `podside.SidecarEnvironment` client):
1. the supervisor writes a fresh random token to the shared "services" volume (services/sidecars.TOKEN_FILE);
   this process waits for it, keeps it in memory only and serves its admin API on 127.0.0.1:ADMIN_PORT, every
   call checked against the token;
2. it reads the task folder named by the agent bundle's manifest (--manifest) from the checkout ($CLAWKUBE_CLAWEVAL_CHECKOUT)
   and starts the environment; `GET /state` says starting / ready (service URLs, the MCP tools, the prompt) /
   failed (why); the supervisor then deletes the token file and starts the agent;
3. after the agent, `GET /evidence`: each mock's audit data, the gateway's dispatch records and the dialogue;
4. `POST /shutdown` stops everything and ends this container, so the pod completes.
The environment's files (dispatch log, logs) stay in this container's own /tmp, which the agent cannot see.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Optional

from pydantic import BaseModel, Field

ADMIN_PORT = 30999  # below the ephemeral range; the tasks' own ports are 9100-9129
ADMIN_PORT_ENV = "CLAWKUBE_CLAWEVAL_SIDECAR_PORT"  # in the agent container: the sidecar is there, on this port
TOKEN_HEADER = "X-Clawkube-Token"
CONTAINER = "svc-claweval"
TOKEN_WAIT_SECONDS = 600.0


class SidecarState(BaseModel):
    """`GET /state`: what the agent side needs once the environment is up."""

    status: str = "starting"  # starting | ready | failed
    error: Optional[str] = None
    urls: dict[str, str] = Field(default_factory=dict)  # service name -> URL the agent reaches (the gateway)
    tools: dict[str, Any] = Field(default_factory=dict)  # the MCP tool server's file (environment.mcp_tools)
    prompt: Optional[str] = None


class _Sidecar:
    def __init__(self, token: str):
        self.token = token
        self.state = SidecarState()
        self.env: Any = None
        self.done = threading.Event()
        self.lock = threading.Lock()

    def start(self, manifest: Path, private: Path) -> None:
        try:
            from ...contracts.manifests import AgentManifest
            from ...services.injection import InjectionConfig
            from ...contracts import judge as judges
            from .checkout import benchmark_python
            from .environment import TaskEnvironment, UserModel
            from .load import checkout_of, task_yaml

            m = AgentManifest.model_validate_json(manifest.read_text())
            root = checkout_of(m.benchmark_data)
            task = task_yaml(root / "tasks" / m.benchmark_data["task_dir"])
            e = os.environ
            inj = InjectionConfig(rate=float(e.get("CLAWKUBE_ERROR_INJECTION_RATE") or 0),
                                  seed=int(e.get("CLAWKUBE_SEED") or 0), trial_key=e.get("CLAWKUBE_TRIAL_KEY", ""))
            user = (UserModel(model=e[judges.MODEL_ENV], base_url=e.get(judges.BASE_URL_ENV) or None,
                              api_key_env=judges.KEY_ENV) if e.get(judges.MODEL_ENV) else None)
            env = TaskEnvironment(task, root, benchmark_python(root), private, inj, user, declared_ports=True)
            with self.lock:
                self.env = env
            env.start()
            self.state = SidecarState(status="ready", urls=env.service_urls, tools=env.mcp_tools(),
                                      prompt=env.prompt())
        except Exception as ex:  # reported to the supervisor, which records the trial's infra error
            self.state = SidecarState(status="failed", error=f"{type(ex).__name__}: {ex}")
            print(f"claweval sidecar: {self.state.error}", file=sys.stderr, flush=True)

    def evidence(self) -> tuple[int, Any]:
        if self.state.status != "ready":
            return 409, {"error": f"environment is {self.state.status}: {self.state.error or ''}"}
        try:
            return 200, json.loads(self.env.evidence().model_dump_json())
        except Exception as ex:
            return 500, {"error": f"{type(ex).__name__}: {ex}"}

    def stop(self) -> None:
        with self.lock:
            env, self.env = self.env, None
        if env is not None:
            env.stop()
        self.done.set()


def _handler(sc: _Sidecar):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a) -> None:  # quiet
            pass

        def _reply(self, status: int, body: Any) -> None:
            raw = json.dumps(body, ensure_ascii=False).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def _allowed(self) -> bool:
            if self.headers.get(TOKEN_HEADER) != sc.token:
                self._reply(403, {"error": "forbidden"})
                return False
            return True

        def do_GET(self) -> None:
            if not self._allowed():
                return
            if self.path == "/state":
                self._reply(200, sc.state.model_dump())
            elif self.path == "/evidence":
                self._reply(*sc.evidence())
            else:
                self._reply(404, {"error": "not found"})

        def do_POST(self) -> None:
            if not self._allowed():
                return
            if self.path == "/shutdown":
                self._reply(200, {"ok": True})
                threading.Thread(target=sc.stop, daemon=True).start()
            else:
                self._reply(404, {"error": "not found"})
    return Handler


def wait_token(path: Path, timeout: float) -> Optional[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            token = path.read_text().strip()
            if token:
                return token
        except OSError:
            pass
        time.sleep(0.1)
    return None


def main(argv: Optional[list[str]] = None) -> int:
    from ...services.sidecars import TOKEN_ENV, TOKEN_FILE

    p = argparse.ArgumentParser(prog="claweval-sidecar")
    p.add_argument("--manifest", required=True, help="the unpacked agent bundle's manifest (it names the task)")
    p.add_argument("--private", default="/tmp/claweval-env", help="the environment's own files")
    p.add_argument("--admin-port", type=int, default=ADMIN_PORT)
    p.add_argument("--token-wait", type=float, default=TOKEN_WAIT_SECONDS)
    args = p.parse_args(argv)
    token = wait_token(Path(os.environ.get(TOKEN_ENV) or TOKEN_FILE), args.token_wait)
    if token is None:  # the agent container never started its supervisor: end, so the pod can complete
        print("claweval sidecar: no token from the agent container; exiting", file=sys.stderr, flush=True)
        return 0
    sc = _Sidecar(token)
    server = ThreadingHTTPServer(("127.0.0.1", args.admin_port), _handler(sc))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        sc.start(Path(args.manifest), Path(args.private))
        sc.done.wait()
    finally:
        sc.stop()
        server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
