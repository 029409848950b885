"""The reference side of the WildClawBench conformance check: one task, one scripted behaviour, scored by the
benchmark's own runner code from a local checkout of its repository (never copied: imported from the checkout
in this separate process).

    python3 bench/wildclaw_reference.py --upstream CHECKOUT REQUEST.json RESULT.json

What runs is upstream's `eval/run_batch.run_single_task` with a scripted agent backend (a `BaseAgent` subclass
defined here) in place of OpenClaw: the backend sets the container up exactly as upstream's OpenClaw backend
does, by calling upstream's own `start_container`, `setup_workspace`, `setup_skills` and `run_warmup`, then runs
the behaviour's shell commands in `/tmp_workspace` and writes the session transcript in OpenClaw's format where
OpenClaw keeps it. Everything after that is upstream's code: copying `gt/` in, `run_grading` (the transcript
loader, the grader run in the container with the task's Env, the JSON parse of its output) and
`print_global_summary`, whose `global_avg` over this one task is the task's final score (the grader's numeric
`overall_score`, else the mean of its numeric fields, 0 when it produced none). `docker` is the stand-in in
`wildclaw_docker_shim.py`.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _docker_on_path(shim_root: Path) -> None:
    bindir = shim_root / "bin"
    bindir.mkdir(parents=True, exist_ok=True)
    wrapper = bindir / "docker"
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} {HERE / 'wildclaw_docker_shim.py'} \"$@\"\n")
    wrapper.chmod(0o755)
    os.environ["PATH"] = f"{bindir}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    os.environ["WILDCLAW_SHIM_ROOT"] = str(shim_root / "containers")
    (shim_root / "containers").mkdir(parents=True, exist_ok=True)


def _session(prompt: str, steps: list[dict], final_message: str) -> list[dict]:
    """The behaviour's conversation as an OpenClaw session file holds it (agents/main/sessions/<id>.jsonl)."""
    ts = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    rows: list[dict] = [{"type": "session", "version": 3, "id": "chat", "timestamp": ts, "cwd": "/tmp_workspace"}]

    def message(msg: dict) -> None:
        rows.append({"type": "message", "id": uuid.uuid4().hex[:8], "timestamp": ts, "message": msg})

    message({"role": "user", "content": [{"type": "text", "text": prompt}]})
    for i, step in enumerate(steps):
        call_id = f"call_{i}"
        message({"role": "assistant", "content": [{"type": "toolCall", "id": call_id, "name": "bash",
                                                   "arguments": {"command": step["command"]}}],
                 "stopReason": "toolUse"})
        message({"role": "toolResult", "toolCallId": call_id, "toolName": "bash",
                 "content": [{"type": "text", "text": step["output"]}], "isError": step["exit_code"] != 0})
    message({"role": "assistant", "content": [{"type": "text", "text": final_message}], "stopReason": "stop"})
    return rows


def run(upstream: Path, req: dict, work: Path) -> dict:
    sys.path.insert(0, str(upstream))
    os.chdir(work)  # upstream's load_dotenv() must find no .env of ours
    from src.agents.base import AgentExecution, BaseAgent  # noqa: E402  (the checkout's code)
    from src.utils import docker_utils as du  # noqa: E402
    from src.utils.task_parser import parse_task_md  # noqa: E402
    import eval.run_batch as rb  # noqa: E402

    transcript_path = "/root/.openclaw/agents/main/sessions/chat.jsonl"

    class ScriptedBackend(BaseAgent):
        """Upstream's OpenClaw backend's container setup, then the behaviour's commands instead of OpenClaw."""

        expects_gateway = False
        transcript_container_path = transcript_path

        def run_task(self, spec):
            try:
                exec_path = os.path.join(spec.workspace_path, "exec")
                tmp_path = os.path.join(spec.workspace_path, "tmp")
                os.makedirs(exec_path, exist_ok=True)
                du.start_container(spec.task_id, exec_path, extra_env=spec.task.get("env", ""), tmp_path=tmp_path)
                du.setup_workspace(spec.task_id, thinking=spec.thinking)
                du.setup_skills(spec.task_id, spec.task.get("skills", ""), spec.task.get("skills_path", ""))
                du.run_warmup(spec.task_id, spec.task.get("warmup", ""))
                steps = []
                for cmd in req["commands"]:
                    r = subprocess.run(["docker", "exec", spec.task_id, "/bin/bash", "-c",
                                        f"cd {du.TMP_WORKSPACE} && {cmd}"], capture_output=True, text=True,
                                       errors="replace", timeout=spec.timeout_seconds)
                    steps.append({"command": cmd, "output": r.stdout + r.stderr, "exit_code": r.returncode})
                rows = _session(spec.prompt, steps, req.get("final_message", "done"))
                local = work / "chat.jsonl"
                local.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
                subprocess.run(["docker", "exec", spec.task_id, "mkdir", "-p", str(Path(transcript_path).parent)],
                               check=True)
                subprocess.run(["docker", "cp", str(local), f"{spec.task_id}:{transcript_path}"], check=True)
                return AgentExecution(elapsed_time=0.0)
            except Exception as exc:  # as upstream's backend: the error is the trial's, grading is skipped
                return AgentExecution(elapsed_time=float(spec.timeout_seconds), error=str(exc))

        def collect_usage(self, task_id, output_dir, elapsed_time):
            return {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0, "cache_write_tokens": 0,
                    "total_tokens": 0, "cost_usd": 0.0, "request_count": 0, "elapsed_time": elapsed_time}

    task = parse_task_md(Path(req["task_file"]))
    # Where upstream finds the Hugging Face download (workspace/<category>/<task> under the repository root);
    # here the folder the conformance script built for the task.
    task["workspace_path"] = req["workspace_path"]
    out_root = work / "output"
    log = io.StringIO()
    with contextlib.redirect_stdout(log):
        result = rb.run_single_task(task, "scripted/conformance", backend=ScriptedBackend(), output_root=out_root)
        rb.print_global_summary([result], out_root, "conformance")
    summary = json.loads((out_root / "summary_all_conformance.json").read_text())
    return {"scores": result.get("scores") or {}, "error": result.get("error"),
            "final": summary["global_avg"] if summary["scored_task_count"] else None,
            "log": log.getvalue()[-4000:]}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--upstream", type=Path, required=True)
    ap.add_argument("request", type=Path)
    ap.add_argument("result", type=Path)
    args = ap.parse_args(argv)
    req = json.loads(args.request.read_text())
    work = Path(req["work_dir"])
    work.mkdir(parents=True, exist_ok=True)
    _docker_on_path(work / "shim")
    try:
        out = run(args.upstream.resolve(), req, work)
    except Exception as e:  # the reference could not run at all: say so, never a score
        out = {"scores": {}, "error": f"reference run failed: {type(e).__name__}: {e}", "final": None}
    args.result.write_text(json.dumps(out, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
