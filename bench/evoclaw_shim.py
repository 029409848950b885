#!/usr/bin/env python3
"""A scripted stand-in for the `openclaw` / `nanobot` command lines, for EvoClawBench's own runner.

EvoClawBench's runner (scripts/benchmark.py, `--environment local`) starts its agent runtime as a subprocess in
the task workspace: `openclaw agent --agent ID --session-id TASK_MS --message PROMPT` (after `openclaw agents
add/delete`) or `nanobot agent --workspace W ... --message PROMPT`. This program answers those commands with a
scripted behaviour, so that the benchmark's runner and this project can be given the same agent behaviour:

- the behaviour file (`$EVOCLAW_SHIM_BEHAVIOURS`, JSON) maps a task id to shell commands per phase:
  `{"task_x": {"execution": [...], "authoring": [...], "summary": [...], "final_message": "..."}}`;
  the phase comes from the mode prefix the runner puts before the task prompt (PreSkill authoring, PostSkill
  summary, else execution); a task without an entry, or `$EVOCLAW_SHIM_BEHAVIOURS` unset, does nothing;
  `nanobot agent` always does nothing (the do-nothing agent of bench/local_overhead.py);
- the commands run in one bash script in the workspace exactly as this project's `script` agent runs them;
- `openclaw agent` writes the session transcript OpenClaw writes (~/.openclaw/agents/<id>/sessions/<sid>.jsonl:
  a `session` line, then `message` lines: the user prompt, one assistant `toolCall` per command followed by its
  `toolResult`, and the final assistant text).

Nothing here comes from the benchmark's repository; it is test scaffolding for bench/conformance_evoclaw.py and
bench/local_overhead.py.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

OPERATOR = Path(__file__).resolve().parents[1] / "operator"

AUTHORING_MARK = "PRESKILL AUTHOR MODE:"
SUMMARY_MARK = "POSTSKILL SUMMARY MODE:"


def phase_of(prompt: str) -> str:
    if prompt.startswith(AUTHORING_MARK):
        return "authoring"
    if prompt.startswith(SUMMARY_MARK):
        return "summary"
    return "execution"


def behaviour(task_id: str) -> dict:
    path = os.environ.get("EVOCLAW_SHIM_BEHAVIOURS")
    if not path:
        return {}
    return json.loads(Path(path).read_text()).get(task_id, {})


def run_commands(commands: list[str], cwd: Path) -> list[dict]:
    """Runs the commands as the `script` agent does; returns (command, output) steps."""
    if not commands:
        return []
    sys.path.insert(0, str(OPERATOR))  # the same bash script and step parsing as this project's `script` agent
    from clawkube.agents.simple import _parse_steps as parse_steps
    from clawkube.agents.simple import _script as step_script

    p = subprocess.run(["bash", "-s"], input=step_script(commands), cwd=cwd, capture_output=True, text=True)
    steps = []
    for ev in parse_steps(commands, p.stdout):
        if ev.type == "tool_call":
            steps.append({"id": ev.call_id, "command": ev.arguments["command"], "output": ""})
        elif ev.type == "tool_result" and steps:
            steps[-1]["output"] = ev.content
    return steps


def _message(role: str, content: list, **extra) -> dict:
    return {"type": "message", "message": {"role": role, "content": content, **extra}}


def session_records(session_id: str, cwd: Path, prompt: str, steps: list[dict], final: str) -> list[dict]:
    records = [{"type": "session", "id": session_id, "cwd": str(cwd)},
               _message("user", [{"type": "text", "text": prompt}])]
    for s in steps:
        records.append(_message("assistant", [{"type": "toolCall", "id": s["id"], "name": "bash",
                                               "arguments": {"command": s["command"]}}]))
        records.append(_message("toolResult", [{"type": "text", "text": s["output"]}], toolCallId=s["id"],
                                toolName="bash"))
    records.append(_message("assistant", [{"type": "text", "text": final}]))
    return records


def flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1] if name in argv else ""


def act(task_id: str, prompt: str, cwd: Path) -> tuple[list[dict], str]:
    b = behaviour(task_id)
    steps = run_commands(b.get(phase_of(prompt), []), cwd)
    return steps, b.get("final_message", "done")


def openclaw(argv: list[str]) -> int:
    if argv[:1] == ["agents"]:
        return 0  # list / add / delete: nothing to keep
    if argv[:1] != ["agent"]:
        print(f"evoclaw shim: unsupported openclaw command {argv}", file=sys.stderr)
        return 2
    agent_id, session_id, prompt = flag(argv, "--agent"), flag(argv, "--session-id"), flag(argv, "--message")
    task_id = session_id.rsplit("_", 1)[0]
    cwd = Path.cwd()
    steps, final = act(task_id, prompt, cwd)
    sessions = Path.home() / ".openclaw" / "agents" / agent_id.replace(":", "-").lower() / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(r) for r in session_records(session_id, cwd, prompt, steps, final)]
    (sessions / f"{session_id}.jsonl").write_text("\n".join(lines) + "\n")
    print(final)
    return 0


def main(argv: list[str]) -> int:
    name = Path(argv[0]).name
    if name == "openclaw":
        return openclaw(argv[1:])
    if name == "nanobot":
        return 0  # the do-nothing agent (its command line carries no task id to script behaviours by)
    print(f"evoclaw shim: called as {name!r}; link it as openclaw or nanobot", file=sys.stderr)
    return 2


def install(bin_dir: Path) -> Path:
    """Links `openclaw` and `nanobot` to this program in bin_dir (put it first on PATH); returns bin_dir."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    scripts = {"openclaw": f"exec {sys.executable} {Path(__file__).resolve()} --as openclaw \"$@\"",
               "nanobot": "exit 0"}  # the do-nothing agent, without an interpreter's start-up time
    for name, body in scripts.items():
        p = bin_dir / name
        p.write_text(f"#!/bin/sh\n{body}\n")
        p.chmod(0o755)
    return bin_dir


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--as"]:
        sys.exit(main([args[1], *args[2:]]))
    sys.exit(main(sys.argv))
