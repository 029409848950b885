"""The phases of one trial, as functions over a `TrialDirs`. The local runner calls them in order;
the cluster's agent pod runs setup/agent/capture and its grading pod runs firewall/grade.

setup    fresh workspace copy from the agent bundle, skills, warmup
agent    the adapter's process in the sandbox, time budget enforced, transcript normalised, usage
capture  workspace snapshot + diff, taken before any grading-only file exists
firewall only now: a grading workspace = the agent's workspace (+ the task's env-snapshot probes) + grading-only files
grade    the grader in its own process with a time limit; crash/timeout -> GradingError, never a score
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Optional

from pydantic import BaseModel

from ..agents.api import split_env
from ..agents.base import Agent, AgentContext, AgentOutput
from ..agents.transcript import TranscriptEvent, as_dicts, read_jsonl, write_jsonl
from ..benchmarks import registry
from ..benchmarks.base import AgentSetup
from ..results.model import ErrorKind, Score, Usage
from ..services import evidence
from ..services.evidence import Evidence
from . import sandbox, workspace
from .bundle import GRADER_FILE, REFERENCE_FILE, AgentManifest, GradingManifest, read_grading_manifest
from ..contracts.grading import GradeOutput, GradeRequest
from ..contracts.judge import JudgeConfig
from .scoring import GradingError, to_score


SKILLS_ENV = "CLAWKUBE_SKILLS_DIR"  # the agent's skills dir, for scripted agents and wrappers


class InfraError(Exception):
    """Setup failed (workspace, warmup, services, sandbox): recorded as ErrorKind.INFRA."""


@dataclass
class TrialDirs:
    bundle: Path  # extracted agent bundle
    workspace: Path  # the agent's working dir
    home: Path  # the agent's HOME
    skills: Path  # the agent's skills dir
    out: Path  # collected evidence: transcript, usage, snapshot, audit, logs
    grading: Path  # grading scratch (hidden from agents)

    @classmethod
    def under(cls, scratch: Path, out: Path, grading: Path) -> "TrialDirs":
        return cls(bundle=scratch / "bundle", workspace=scratch / "workspace", home=scratch / "home",
                   skills=scratch / "skills", out=out, grading=grading)

    @property
    def audit(self) -> Path:
        return self.out / "audit"

    def for_manifest(self, m: AgentManifest) -> "TrialDirs":
        """The same dirs with the skills dir where the task's benchmark keeps it (`m.skills_path`)."""
        if m.skills_path is None:
            return self
        return replace(self, skills=self.workspace / safe_relative(m.skills_path))


def safe_relative(rel: str) -> str:
    """A path relative to the workspace that stays inside it."""
    parts = PurePosixPath(rel).parts
    if not parts or PurePosixPath(rel).is_absolute() or ".." in parts:
        raise InfraError(f"{rel!r} is not a path inside the workspace")
    return rel


class Isolation(BaseModel):
    """How agent-side processes are run."""

    mode: str = "namespace"  # sandbox mode: namespace | none
    hidden: list[Path] = []  # paths over-mounted for agent-side processes


class AgentPhase(BaseModel):
    usage: Usage
    exit_code: Optional[int]
    timed_out: bool
    error_kind: Optional[ErrorKind] = None
    error_message: Optional[str] = None


def setup(dirs: TrialDirs, m: AgentManifest, iso: Isolation, env: dict[str, str],
          skills_from: Optional[Path] = None, seed: Optional[Path] = None, files: Optional[dict[str, str]] = None
          ) -> dict[str, str]:
    """Lay out a fresh workspace, skills and home; run warmup. Returns the initial workspace manifest.
    The workspace gets the bundle's files and the benchmark's empty folders (`m.workspace_dirs`); the skills dir
    (inside the workspace when `m.skills_path` says so, then only when there is a skill to put there) gets the
    bundle's skills, or `skills_from` (EvoClawBench modes: the authored skills), plus `seed` (the skills seeded
    into a skill-writing phase); `files` (relative path -> text) are written last (a phase's own inputs)."""
    for d in (dirs.workspace, dirs.home, dirs.out, dirs.audit):
        d.mkdir(parents=True, exist_ok=True)
    workspace.copy_tree(dirs.bundle / "workspace", dirs.workspace)
    for rel in m.workspace_dirs:
        (dirs.workspace / safe_relative(rel)).mkdir(parents=True, exist_ok=True)
    for src in (dirs.bundle / "skills" if skills_from is None else skills_from, seed):
        if src is not None and (m.skills_path is None or any(src.iterdir() if src.is_dir() else ())):
            workspace.copy_tree(src, dirs.skills)
    if m.skills_path is None:
        dirs.skills.mkdir(parents=True, exist_ok=True)
    for rel, text in (files or {}).items():
        target = dirs.workspace / safe_relative(rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    sandbox.give_to_sandbox_user(*(d for d in (dirs.workspace, dirs.home, dirs.skills) if d.exists()))
    if m.warmup:  # one script, so multi-line shell constructs work; stops at the first failing line
        r = sandbox.run(["bash", "-e", "-c", "\n".join(m.warmup)], cwd=dirs.workspace,
                        env=sandbox.base_env(dirs.home, env), timeout=120, hidden=iso.hidden, mode=iso.mode)
        if r.exit_code != 0:
            raise InfraError(f"warmup failed with exit code {r.exit_code}{' (timed out)' if r.timed_out else ''}: "
                             f"{r.stderr.strip()[-500:]}")
    return workspace.manifest(dirs.workspace)


def agent_context(dirs: TrialDirs, m: AgentManifest, agent: Agent, model: Optional[str], args: dict,
                  env: dict[str, str], services: dict[str, str], setup: Optional[AgentSetup] = None) -> AgentContext:
    """`setup`: what the task's environment adds for the agent (MCP servers, its own prompt)."""
    ref = None
    if agent.needs_reference:
        ref_file = dirs.bundle / REFERENCE_FILE
        ref = ref_file.read_text() if ref_file.exists() else None
    api, env = split_env(env)  # spec.agent.api, as agents/api.py carries it in the trial env
    setup = setup or AgentSetup()
    view = m.view if setup.prompt is None else m.view.model_copy(update={"prompt": setup.prompt})
    return AgentContext(task=view, workdir=dirs.workspace, skills_dir=dirs.skills, home=dirs.home, model=model,
                        env={**env, SKILLS_ENV: str(dirs.skills)}, services=services, args=args,
                        reference_solution=ref, api=api, mcp_servers=setup.mcp_servers)


def run_agent(dirs: TrialDirs, ctx: AgentContext, agent: Agent, iso: Isolation, timeout: float) -> AgentPhase:
    """Start the adapter's process in the sandbox; write transcript.jsonl, agent.stdout/err, usage.json."""
    try:
        inv = agent.invocation(ctx)
    except Exception as e:  # the adapter cannot build a command for this task/config
        write_jsonl(dirs.out / "transcript.jsonl", [])
        return _agent_failed(dirs, f"{agent.name}: {e}")
    env = sandbox.base_env(dirs.home, {**ctx.env, **inv.env})
    r = sandbox.run(inv.argv, cwd=dirs.workspace, env=env, timeout=timeout, hidden=iso.hidden, stdin=inv.stdin,
                    mode=iso.mode)
    (dirs.out / "agent.stdout").write_text(r.stdout)
    (dirs.out / "agent.stderr").write_text(r.stderr)
    raw = None
    if inv.transcript_file:
        tf = dirs.home / inv.transcript_file
        raw = tf.read_text(errors="replace") if tf.is_file() else None
    out = AgentOutput(exit_code=r.exit_code, stdout=r.stdout, stderr=r.stderr, transcript_raw=raw,
                      timed_out=r.timed_out, wall_seconds=r.wall_seconds)
    try:
        events = agent.parse(ctx, out)
    except Exception as e:
        events = [TranscriptEvent(type="error", content=f"transcript could not be parsed: {e}")]
    write_jsonl(dirs.out / "transcript.jsonl", events)
    usage = agent.usage(events, out)
    workspace.write_json(dirs.out / "usage.json", usage.model_dump())
    kind, msg = None, None
    if r.timed_out:
        kind, msg = ErrorKind.AGENT_TIMEOUT, f"agent exceeded its time budget of {timeout:g}s"
    elif r.exit_code != 0:
        kind, msg = ErrorKind.AGENT_ERROR, f"agent exited with {r.exit_code}: {r.stderr.strip()[-500:]}"
    return AgentPhase(usage=usage, exit_code=r.exit_code, timed_out=r.timed_out, error_kind=kind, error_message=msg)


def _agent_failed(dirs: TrialDirs, message: str) -> AgentPhase:
    workspace.write_json(dirs.out / "usage.json", Usage().model_dump())
    return AgentPhase(usage=Usage(), exit_code=None, timed_out=False, error_kind=ErrorKind.AGENT_ERROR,
                      error_message=message)


def capture(dirs: TrialDirs, initial: dict[str, str]) -> None:
    """Workspace snapshot + diff, taken as the agent left it (before any grading-only file exists)."""
    workspace.snapshot(dirs.workspace, dirs.out / "workspace.tar.gz")
    workspace.write_json(dirs.out / "workspace.diff.json", workspace.diff(initial, workspace.manifest(dirs.workspace)))


def env_snapshot(ws: Path, files: list[str], commands: list[str], env: dict[str, str]) -> dict:
    """The task's probes (files read, commands run) over the agent's restored workspace; grading side only."""
    snap: dict[str, dict] = {"files": {}, "commands": {}}
    for rel in files:
        p = ws / rel
        snap["files"][rel] = p.read_text(errors="replace") if p.is_file() and not p.is_symlink() else None
    for cmd in commands:
        r = sandbox.run(["bash", "-c", cmd], cwd=ws, env=sandbox.base_env(ws.parent, env), timeout=60, mode="none")
        snap["commands"][cmd] = {"exit_code": r.exit_code, "stdout": r.stdout, "stderr": r.stderr[-2000:]}
    return snap


def firewall(dirs: TrialDirs, grading_bundle_dir: Path, env: dict[str, str]) -> tuple[Path, GradingManifest]:
    """Only after the agent has finished: the grading workspace = the agent's snapshot (+ env snapshot probes)
    + grading-only files."""
    m = read_grading_manifest(grading_bundle_dir)
    ws = dirs.grading / "workspace"
    if ws.exists():
        shutil.rmtree(ws)
    workspace.restore(dirs.out / "workspace.tar.gz", ws)
    workspace.write_json(dirs.out / "env_snapshot.json",
                         env_snapshot(ws, m.env_snapshot_files, m.env_snapshot_commands, env))
    files = grading_bundle_dir / "files"
    if files.is_dir():
        workspace.copy_tree(files, ws)
    return ws, m


def grade(dirs: TrialDirs, grading_bundle_dir: Path, grading_ws: Path, m: GradingManifest,
          env: dict[str, str], timeout: Optional[float] = None, judge: Optional[JudgeConfig] = None) -> Score:
    """Run the grader process; write grader.log and score.json. Raises GradingError.
    `judge` goes into the request; its key, if any, must be in `env` as contracts.judge.KEY_ENV."""
    if m.needs_judge and judge is None:
        raise GradingError("no judge configured: grading this task needs an LLM judge (spec.judge)")
    req = GradeRequest(judge=judge,
        benchmark=m.format, grader_file=str(grading_bundle_dir / GRADER_FILE), entry=m.entry, workspace_path=str(grading_ws),
        transcript_path=str(dirs.out / "transcript.jsonl"), audit_dir=str(dirs.audit),
        task_manifest_path=str(grading_bundle_dir / "grading.json"),
        env_snapshot_path=str(dirs.out / "env_snapshot.json"), output_path=str(dirs.grading / "grade_output.json"))
    req_path = dirs.grading / "grade_request.json"
    req_path.write_text(req.model_dump_json())
    Path(req.output_path).unlink(missing_ok=True)
    limit = timeout or m.timeout_seconds
    genv = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", **env,
            "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    try:
        p = subprocess.run([sys.executable, "-m", "clawkube.lifecycle.grader_main", str(req_path)],
                           cwd=dirs.grading, env=genv, capture_output=True, text=True, timeout=limit)
        log = p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        (dirs.out / "grader.log").write_text(_text(e.stdout) + _text(e.stderr))
        raise GradingError(f"grader timed out after {limit:g}s") from None
    (dirs.out / "grader.log").write_text(log)
    out_file = Path(req.output_path)
    if not out_file.exists():
        raise GradingError(f"grader process exited with {p.returncode} and wrote no result: {log.strip()[-500:]}")
    try:
        res = GradeOutput.model_validate_json(out_file.read_text())
    except ValueError as e:
        raise GradingError(f"grader output is not a GradeOutput: {e}") from None
    if not res.ok:
        raise GradingError(f"grader crashed: {res.error}")
    plugin = registry.get(m.format)
    score = to_score(m, res.scores, engine_evidence(dirs, m) if plugin.engine_evidence else None)
    if res.details:  # the grader's non-numeric fields (judge reasons, methods, paths): kept, never scored
        score.details["grader_fields"] = res.details
    workspace.write_json(dirs.out / "score.json", score.model_dump())
    return score


def engine_evidence(dirs: TrialDirs, m: GradingManifest) -> Evidence:
    """The engine's own findings (safety checks, expected actions, robustness) over audit/ and the transcript."""
    audit = {f.stem: json.loads(f.read_text()) for f in sorted(dirs.audit.glob("*.json"))} if dirs.audit.is_dir() else {}
    tf = dirs.out / "transcript.jsonl"
    transcript = as_dicts(read_jsonl(tf)) if tf.exists() else []
    try:
        return evidence.gather(m.safety_checks, m.expected_actions, audit, transcript)
    except ValueError as e:  # a malformed check in the task, or a malformed audit log
        raise GradingError(f"engine checks: {e}") from None


def _text(b) -> str:
    if b is None:
        return ""
    return b.decode(errors="replace") if isinstance(b, bytes) else b
