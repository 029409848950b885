"""The simulated user of a multi-turn CLAW-Eval task, as a small HTTP service the agent reaches through a tool.

    BENCHMARK_PYTHON -m clawkube.benchmarks.claweval.usersim CONFIG.json

Upstream, the benchmark's own loop asks its simulated user (`claw_eval.runner.user_agent.UserAgent`: an LLM
playing the task's persona) for a reply whenever the model answers without a tool call, up to
`user_agent.max_rounds` times, and ends the conversation when the user says it is satisfied. A CLI harness
cannot be driven that way, so here the agent gets a tool, `ask_user(message)`: each call is one round - the
message is the assistant's turn, the benchmark's own `UserAgent` (run here, under the benchmark Python, with the
run's judge model settings, which the agent never sees) answers from the persona. The answer is
`{"reply": ..., "done": false, "round": n}`; when the user is satisfied, or after `max_rounds` replies,
`{"reply": "", "done": true, ...}`: the conversation is over. Every round is appended to the rounds log (grading
side) and served at `GET /_clawkube/rounds` with the trial token.

CONFIG: `{"root", "persona", "max_rounds", "prompt", "model", "base_url", "api_key_env", "rounds_log",
"ready_file", "token", "host", "port"}`.
"""
from __future__ import annotations

import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ASK_PATH = "/ask"
ROUNDS_PATH = "/_clawkube/rounds"
TOKEN_HEADER = "X-Clawkube-Token"


class Dialogue:
    def __init__(self, cfg: dict[str, Any]):
        src = str(Path(cfg["root"]) / "src")
        if src not in sys.path:
            sys.path.insert(0, src)
        from claw_eval.models.message import Message
        from claw_eval.runner.user_agent import UserAgent

        self.Message = Message
        kwargs: dict[str, Any] = {"model_id": cfg["model"],
                                  "api_key": os.environ.get(cfg.get("api_key_env") or "", "") or "unset"}
        if cfg.get("base_url"):
            kwargs["base_url"] = cfg["base_url"]
        self.user = UserAgent(**kwargs)
        self.persona = cfg.get("persona", "")
        self.max_rounds = int(cfg.get("max_rounds", 3))
        self.messages = [Message(role="user", content=cfg.get("prompt", ""))]
        self.rounds: list[dict[str, Any]] = []
        self.done = False
        self.log = Path(cfg["rounds_log"])
        self.lock = threading.Lock()

    def ask(self, message: str) -> dict[str, Any]:
        with self.lock:
            if self.done or len([r for r in self.rounds if not r["done"]]) >= self.max_rounds:
                self.done = True
                rec = {"message": message, "reply": "", "done": True, "round": len(self.rounds) + 1,
                       "why": "the user has no more replies"}
            else:
                self.messages.append(self.Message(role="assistant", content=message))
                reply = self.user.generate_response(persona=self.persona, conversation_messages=self.messages)
                if reply is None:
                    self.done = True
                    rec = {"message": message, "reply": "", "done": True, "round": len(self.rounds) + 1,
                           "why": "the user is satisfied"}
                else:
                    self.messages.append(self.Message(role="user", content=f"[user_agent]\n{reply}"))
                    rec = {"message": message, "reply": reply, "done": False, "round": len(self.rounds) + 1}
            self.rounds.append(rec)
            with open(self.log, "a", encoding="utf-8") as f:
                f.write(json.dumps(rec, ensure_ascii=False) + "\n")
            return {k: rec[k] for k in ("reply", "done", "round")}


def serve(cfg: dict[str, Any]) -> None:
    dialogue = Dialogue(cfg)
    token = cfg.get("token") or ""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a: Any) -> None:
            pass

        def _send(self, status: int, body: Any) -> None:
            data = json.dumps(body, ensure_ascii=False).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            if self.path != ASK_PATH:
                return self._send(404, {"error": f"POST {self.path}: only POST {ASK_PATH}"})
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            except ValueError:
                return self._send(400, {"error": "body must be JSON"})
            message = body.get("message") if isinstance(body, dict) else None
            if not isinstance(message, str) or not message.strip():
                return self._send(400, {"error": "ask_user needs a non-empty 'message'"})
            try:
                self._send(200, dialogue.ask(message))
            except Exception as e:  # the user model failed
                self._send(500, {"error": f"the simulated user did not answer: {type(e).__name__}: {e}"})

        def do_GET(self) -> None:
            if self.path == ROUNDS_PATH and token and self.headers.get(TOKEN_HEADER) == token:
                return self._send(200, {"rounds": dialogue.rounds})
            self._send(404, {"error": "not found"})

    httpd = ThreadingHTTPServer((cfg.get("host") or "127.0.0.1", int(cfg.get("port") or 0)), Handler)
    ready = Path(cfg["ready_file"])
    tmp = ready.with_suffix(".tmp")
    tmp.write_text(json.dumps({"port": httpd.server_address[1], "pid": os.getpid()}))
    tmp.rename(ready)
    httpd.serve_forever()


def main(argv: list[str]) -> int:
    serve(json.loads(Path(argv[0]).read_text()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
