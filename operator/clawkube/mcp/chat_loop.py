"""This project's own minimal agent loop: an OpenAI-compatible chat model + the tools of MCP servers.

    python3 -m clawkube.mcp.chat_loop CONFIG.json

CONFIG: `{"base_url", "model", "api_key_env", "prompt", "system", "max_turns", "mcp_servers": [{"name",
"command", "env"}], "transcript"}`. Each turn sends the whole conversation and the servers' tools (plain tool
names; `<server>__<tool>` only where two servers offer the same name) to `POST {base_url}/chat/completions`,
runs the tool calls the model asks for through their MCP server, and stops when the model answers without a tool
call or after `max_turns`. Every event is appended to `transcript` as it happens (the normalised JSONL
transcript), so a run cut short still leaves what it did.

Standard library only. It is what `--agent mcp-chat` runs; with the scripted model server it is a deterministic
agent for tests and for parity checks against a benchmark's own loop.
"""
from __future__ import annotations

import json
import os
import sys
import time
import urllib.error
import urllib.request
from typing import Any, Optional

from .client import StdioClient

MODEL_TIMEOUT = 300.0


def _event(f, **ev: Any) -> None:
    ev = {k: v for k, v in ev.items() if v is not None}
    ev.setdefault("ts", time.time())
    f.write(json.dumps(ev, ensure_ascii=False) + "\n")
    f.flush()


def chat(base_url: str, model: str, key: Optional[str], messages: list[dict], tools: list[dict]) -> dict:
    body: dict[str, Any] = {"model": model, "messages": messages}
    if tools:
        body["tools"] = tools
    req = urllib.request.Request(base_url.rstrip("/") + "/chat/completions", method="POST",
                                 data=json.dumps(body, ensure_ascii=False).encode("utf-8"),
                                 headers={"Content-Type": "application/json",
                                          **({"Authorization": f"Bearer {key}"} if key else {})})
    with urllib.request.urlopen(req, timeout=MODEL_TIMEOUT) as r:
        return json.loads(r.read())


def run(cfg: dict[str, Any]) -> int:
    clients: dict[str, StdioClient] = {}
    routes: dict[str, tuple[str, str]] = {}  # exposed name -> (server, tool)
    tools: list[dict] = []
    with open(cfg["transcript"], "a", encoding="utf-8") as tf:
        try:
            offered: list[tuple[str, dict]] = []
            for s in cfg.get("mcp_servers", []):
                c = StdioClient(list(s["command"]), env={**os.environ, **(s.get("env") or {})})
                clients[s["name"]] = c
                c.initialize()
                offered += [(s["name"], t) for t in c.list_tools()]
            counts: dict[str, int] = {}
            for _, t in offered:
                counts[t["name"]] = counts.get(t["name"], 0) + 1
            for server, t in offered:
                name = t["name"] if counts[t["name"]] == 1 else f"{server}__{t['name']}"
                routes[name] = (server, t["name"])
                tools.append({"type": "function", "function": {
                    "name": name, "description": t.get("description", ""),
                    "parameters": t.get("inputSchema") or {"type": "object", "properties": {}}}})
            messages: list[dict] = []
            if cfg.get("system"):
                messages.append({"role": "system", "content": cfg["system"]})
            messages.append({"role": "user", "content": cfg["prompt"]})
            _event(tf, type="message", role="user", content=cfg["prompt"])
            key = os.environ.get(cfg["api_key_env"]) if cfg.get("api_key_env") else None
            for _ in range(int(cfg.get("max_turns") or 20)):
                resp = chat(cfg["base_url"], cfg["model"], key, messages, tools)
                u = resp.get("usage") or {}
                _event(tf, type="usage", usage={"input_tokens": u.get("prompt_tokens", 0),
                                                "output_tokens": u.get("completion_tokens", 0)})
                msg = (resp.get("choices") or [{}])[0].get("message") or {}
                text = msg.get("content") or ""
                calls = msg.get("tool_calls") or []
                messages.append({"role": "assistant", "content": text,
                                 **({"tool_calls": calls} if calls else {})})
                _event(tf, type="message", role="assistant", content=text)
                if not calls:
                    return 0
                for call in calls:
                    fn = call.get("function") or {}
                    name, cid = fn.get("name", ""), call.get("id", "")
                    try:
                        args = json.loads(fn.get("arguments") or "{}")
                    except ValueError:
                        args = {}
                    _event(tf, type="tool_call", role="assistant", tool=name, call_id=cid, arguments=args)
                    if name in routes:
                        server, tool = routes[name]
                        result, is_error = clients[server].call_tool(tool, args if isinstance(args, dict) else {})
                    else:
                        result, is_error = f"Error: unknown tool '{name}'", True
                    _event(tf, type="tool_result", role="tool", tool=name, call_id=cid, content=result,
                           is_error=is_error)
                    messages.append({"role": "tool", "tool_call_id": cid, "content": result})
            return 0
        except (urllib.error.URLError, OSError, ValueError) as e:
            _event(tf, type="error", content=f"{type(e).__name__}: {e}")
            print(f"chat_loop: {e}", file=sys.stderr)
            return 1
        finally:
            for c in clients.values():
                c.close()


def main(argv: list[str]) -> int:
    with open(argv[0], encoding="utf-8") as f:
        return run(json.load(f))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
