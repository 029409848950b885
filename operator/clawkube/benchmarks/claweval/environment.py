"""Everything a CLAW-Eval trial runs beside the agent, outside its sandbox, and what the agent is told about it.

- the task's real mock services behind the tool gateway (`mocks.py`);
- for a multi-turn task, the simulated user (`usersim.py`) under the benchmark Python, on the run's judge model;
- the MCP tool server's file (`mcp_tools()`): the task's `tools` whose endpoint is one of its services, each
  forwarding to the gateway, plus `ask_user` for a multi-turn task;
- the agent's prompt: the task's, plus (multi-turn) the benchmark's `system_prompt_suffix` and how to reach the
  user;
- after the agent: `evidence()` = audit data of every service, the gateway's dispatch records, the dialogue.
"""
from __future__ import annotations

import json
import os
import secrets
import time
from pathlib import Path
from typing import Any, Optional

from pydantic import BaseModel, Field

from ...execution.host import Spawned
from ...services.injection import InjectionConfig
from .messages import ASK_USER_TOOL
from .mocks import MockError, MockServices, _kill, spawn
from .taskyaml import TaskYaml

USERSIM_READY_TIMEOUT = 30.0
MCP_SERVER_NAME = "claweval"

ASK_USER_SPEC = {
    "name": ASK_USER_TOOL,
    "description": ("Talk to the user: send them a message (a question, or your answer) and get their reply. "
                    "Returns {\"reply\": ..., \"done\": false}; when \"done\" is true the user has nothing more to "
                    "say and the conversation is over."),
    "input_schema": {"type": "object", "properties": {"message": {"type": "string",
                                                                  "description": "what you say to the user"}},
                     "required": ["message"]},
}
MULTI_TURN_NOTE = ("You are in a conversation with the user. The user reads only what you send with the "
                   f"`{ASK_USER_TOOL}` tool, and answers through it; give your final answer with it too. When it "
                   "says the conversation is over, stop.")


class UserModel(BaseModel):
    """The model that plays the simulated user (the run's judge setting; grading-side, never the agent's)."""

    base_url: Optional[str] = None
    model: str
    api_key_env: Optional[str] = None


class Evidence(BaseModel):
    audit: dict[str, Any] = Field(default_factory=dict)
    dispatches: list[dict[str, Any]] = Field(default_factory=list)
    dialogue: list[dict[str, Any]] = Field(default_factory=list)


def agent_prompt(task: TaskYaml) -> str:
    if not task.user_agent.enabled:
        return task.prompt.text
    parts = [task.prompt.text.rstrip()]
    if task.user_agent.system_prompt_suffix.strip():
        parts.append(task.user_agent.system_prompt_suffix.strip())
    parts.append(MULTI_TURN_NOTE)
    return "\n\n".join(parts) + "\n"


USER_SERVICE = "claweval-user"  # the simulated user among the agent's service URLs (not a name a task's service has)


class TaskEnvironment:
    def __init__(self, task: TaskYaml, root: Path, python: str, private: Path,
                 injection: Optional[InjectionConfig] = None, user_model: Optional[UserModel] = None,
                 env: Optional[dict[str, str]] = None, declared_ports: bool = False):
        self.task, self.root, self.python, self.private = task, Path(root), python, Path(private)
        # declared_ports: the gateway on the task's own ports (a pod's sidecar, parity runs), else free ones
        self.mocks = MockServices(task, root, python, self.private, injection, env, declared_ports)
        self.user_model = user_model
        self.base_env = env
        self.usersim: Optional[Spawned] = None
        self.usersim_port: Optional[int] = None

    def __enter__(self) -> "TaskEnvironment":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        self.private.mkdir(parents=True, exist_ok=True)
        try:
            self.mocks.start()
            if self.task.user_agent.enabled:
                self._start_usersim()
        except BaseException:
            self.stop()
            raise

    def _start_usersim(self) -> None:
        if self.user_model is None:
            raise MockError("this multi-turn task needs a model for its simulated user: configure the run's judge "
                            "(spec.judge), which plays the user as in the benchmark's own setup")
        ready = self.private / "usersim-ready.json"
        ready.unlink(missing_ok=True)
        cfg = {"root": str(self.root), "persona": self.task.user_agent.persona,
               "max_rounds": self.task.user_agent.max_rounds, "prompt": self.task.prompt.text,
               "model": self.user_model.model, "base_url": self.user_model.base_url,
               "api_key_env": self.user_model.api_key_env, "rounds_log": str(self.private / "dialogue.jsonl"),
               "ready_file": str(ready), "token": secrets.token_hex(16)}
        cfg_file = self.private / "usersim.json"
        cfg_file.write_text(json.dumps(cfg, ensure_ascii=False))
        env = dict(os.environ if self.base_env is None else self.base_env)
        env.update(PYTHONPATH=str(Path(__file__).resolve().parents[3]), PYTHONDONTWRITEBYTECODE="1")
        log = self.private / "usersim.log"
        self.usersim = spawn([self.python, "-m", "clawkube.benchmarks.claweval.usersim", str(cfg_file)],
                             "claweval-usersim", log, env=env)
        deadline = time.monotonic() + USERSIM_READY_TIMEOUT
        while not ready.is_file():
            if self.usersim.proc.poll() is not None:
                raise MockError(f"simulated user exited ({self.usersim.proc.returncode}): "
                                f"{log.read_text(errors='replace')[-800:]}")
            if time.monotonic() >= deadline:
                raise MockError(f"simulated user not ready within {USERSIM_READY_TIMEOUT:g}s")
            time.sleep(0.05)
        self.usersim_port = int(json.loads(ready.read_text())["port"])

    # --- the agent side ------------------------------------------------------------------------------------------
    @property
    def service_urls(self) -> dict[str, str]:
        """What the agent side reaches (its sandbox allows exactly these): the gateway's URL per service, and the
        simulated user's (`ask_user`) for a multi-turn task."""
        urls = dict(self.mocks.urls)
        if self.usersim_port is not None:
            urls[USER_SERVICE] = f"http://127.0.0.1:{self.usersim_port}"
        return urls

    def mcp_tools(self) -> dict[str, Any]:
        """The MCP tool server's file: the task's tools that have an endpoint, each pointed at the gateway."""
        urls = self.mocks.tool_urls
        tools = [{"name": t.name, "description": t.description, "input_schema": t.input_schema,
                  "url": urls[t.name], "method": "POST"} for t in self.task.tools if t.name in urls]
        if self.usersim_port is not None:
            tools.append({**ASK_USER_SPEC, "url": f"{self.service_urls[USER_SERVICE]}/ask", "method": "POST"})
        return {"name": MCP_SERVER_NAME, "tools": tools}

    def prompt(self) -> str:
        return agent_prompt(self.task)

    # --- after the agent -----------------------------------------------------------------------------------------
    def evidence(self) -> Evidence:
        dialogue: list[dict[str, Any]] = []
        f = self.private / "dialogue.jsonl"
        if f.is_file():
            dialogue = [json.loads(x) for x in f.read_text(encoding="utf-8").splitlines() if x.strip()]
        return Evidence(audit=self.mocks.audit(), dispatches=self.mocks.dispatches(), dialogue=dialogue)

    def stop(self) -> None:
        if self.usersim is not None:
            _kill(self.usersim)
            self.usersim = None
        self.mocks.stop()
