"""The phases of one trial, as functions over a `TrialDirs`. The local runner calls them in order;
the cluster's agent pod runs setup/agent/capture and its grading pod runs firewall/grade.

setup    fresh workspace copy from the agent bundle, skills; the agent's sandbox opened; warmup in it (as root)
agent    the adapter's process in that sandbox, time budget and limits enforced, transcript normalised, usage
capture  workspace snapshot + diff, taken before any grading-only file exists (every agent process is gone)
firewall only now: a grading workspace = the agent's workspace (+ the task's env-snapshot probes, sandboxed)
         + grading-only files, never written through anything the agent made
grade    the grader in its own sandbox with time and memory limits; crash/timeout -> GradingError, never a score
Processes run through lifecycle/sandbox.py, i.e. the execution interface (clawkube.execution).
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Callable, Optional

from pydantic import BaseModel

from ..agents.api import split_env
from ..agents.base import Agent, AgentContext, AgentOutput
from ..agents.transcript import TranscriptEvent, as_dicts, read_jsonl, write_jsonl
from ..benchmarks import registry
from ..benchmarks.base import AgentSetup
from ..results.model import ErrorKind, Score, Usage
from ..services import evidence
from ..services.checks import CheckOutcome
from ..services.evidence import Evidence
from .. import execution as ex
from . import sandbox, workspace
from .bundle import GRADER_FILE, REFERENCE_FILE, AgentManifest, GradingManifest, read_grading_manifest
from ..benchmarks import registry
from ..contracts.grading import GradeOutput, GradeRequest
from ..contracts.judge import JudgeConfig
from .scoring import GradingError, to_score


SKILLS_ENV = "CLAWKUBE_SKILLS_DIR"  # the agent's skills dir, for scripted agents and wrappers


class InfraError(Exception):
    """Setup failed on our side (workspace, services, sandbox): recorded as ErrorKind.INFRA and retried."""


class SetupError(Exception):
    """The task's own setup failed (its warmup): recorded as ErrorKind.SETUP_ERROR, never retried."""


@dataclass
class TrialDirs:
    bundle: Path  # extracted agent bundle
    workspace: Path  # the agent's working dir
    home: Path  # the agent's HOME
    skills: Path  # the agent's skills dir
    out: Path  # collected evidence: transcript, usage, snapshot, audit, logs
    grading: Path  # grading scratch (hidden from agents)
    scratch_dir: Optional[Path] = None  # the agent side's private folder, when the workspace is not in it (pods)

    @classmethod
    def under(cls, scratch: Path, out: Path, grading: Path) -> "TrialDirs":
        return cls(bundle=scratch / "bundle", workspace=scratch / "workspace", home=scratch / "home",
                   skills=scratch / "skills", out=out, grading=grading)

    @property
    def audit(self) -> Path:
        return self.out / "audit"

    @property
    def scratch(self) -> Path:
        """The agent side's private folder (its /tmp, the system overlay of its warmup)."""
        return self.scratch_dir or self.workspace.parent

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



Isolation = sandbox.Isolation
WarmupRunner = Callable[[sandbox.AgentBox, list[str], dict[str, str], Path], Optional[str]]  # sandbox.warmup's shape
TRANSCRIPT_LIMIT = 256 * 1024 * 1024  # bytes of a harness's transcript file read
TRANSCRIPT_ERROR = "transcript_error.txt"  # present when the agent's output could not be parsed
GRADER_OUTPUT_LIMIT = 16 * 1024 * 1024
# The grading process: grader_main.main(REQUEST.json). `-c` rather than `-m`: no runpy (the importlib machinery
# it loads) in a process that starts once per trial; -S: no site start-up code (.pth files), packages from
# sandbox.site_paths() instead.
GRADER_ARGV = ["-S", "-c", "import sys; from clawkube.lifecycle.grader_main import main; sys.exit(main(sys.argv[1:]))"]
PROBE_TIMEOUT = 60.0
PROBE_FILE_LIMIT = 16 * 1024 * 1024


class AgentPhase(BaseModel):
    usage: Usage
    exit_code: Optional[int]
    timed_out: bool
    error_kind: Optional[ErrorKind] = None
    error_message: Optional[str] = None


def workspace_mount(m) -> Optional[str]:
    """Where the benchmark wants the workspace seen (its plugin's `workspace_mount`), if the manifest says."""
    return getattr(m, "workspace_mount", None)


def open_box(dirs: TrialDirs, m: AgentManifest, iso: Isolation, services: Optional[dict[str, str]] = None,
             name: str = "agent", agent: Optional[Agent] = None) -> sandbox.AgentBox:
    return sandbox.AgentBox(iso, workspace=dirs.workspace, home=dirs.home, skills=dirs.skills, scratch=dirs.scratch,
                            workspace_mount=workspace_mount(m), services=services, system_overlay=bool(m.warmup),
                            name=name, read_paths=sandbox.agent_read_paths(agent),
                            skills_in_home=m.mounts.skills_in_home,
                            initial=(dirs.bundle / "workspace", m.mounts.initial_workspace)
                            if m.mounts.initial_workspace else None)


def setup(dirs: TrialDirs, m: AgentManifest, iso: Isolation, env: dict[str, str],
          skills_from: Optional[Path] = None, services: Optional[dict[str, str]] = None,
          agent: Optional[Agent] = None, seed: Optional[Path] = None, files: Optional[dict[str, str]] = None,
          warmup: Optional[WarmupRunner] = None) -> tuple[dict[str, str], sandbox.AgentBox]:
    """Lay out a fresh workspace, skills and home, open the agent's sandbox and run the warmup in it (as root over
    a private overlay of the system folders). Returns the initial workspace manifest and the open sandbox (the
    caller closes it). Raises SetupError when the task's warmup fails (naming the line), InfraError when we
    cannot set up.
    The workspace gets the bundle's files and the benchmark's empty folders (`m.workspace_dirs`); the skills dir
    (inside the workspace when `m.skills_path` says so, then only when there is a skill to put there) gets the
    bundle's skills, or `skills_from` (EvoClawBench modes: the authored skills), plus `seed` (the skills seeded
    into a skill-writing phase); `files` (relative path -> text) are written last (a phase's own inputs).
    `warmup`: who runs the warmup lines instead of the box (an agent pod's warmup sidecar, lifecycle/warmup_sidecar.py)."""
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
    try:
        box = open_box(dirs, m, iso, services, agent=agent)
    except (ex.SandboxUnavailable, OSError, ValueError) as e:
        raise InfraError(f"sandbox: {e}") from e
    if m.warmup:
        try:
            failed = (warmup or sandbox.warmup)(box, m.warmup, sandbox.base_env(box.inside(dirs.home), env),
                                                dirs.out / "warmup.log")
            if not failed:  # what root made in the agent's folders is the agent's to change, as in a container
                sandbox.give_to_sandbox_user(*box.owned(), uid=box.lease.uid)
        except BaseException:
            box.close()
            raise
        if failed:
            box.close()
            raise SetupError(failed)
    return workspace.manifest(dirs.workspace), box


def agent_context(dirs: TrialDirs, m: AgentManifest, agent: Agent, model: Optional[str], args: dict,
                  env: dict[str, str], services: dict[str, str], box: Optional[sandbox.AgentBox] = None,
                  setup: Optional[AgentSetup] = None) -> AgentContext:
    """The adapter's view: paths as the agent's processes see them inside `box`; `setup`: what the task's
    environment adds for the agent (MCP servers, its own prompt)."""
    ref = None
    if agent.needs_reference:
        ref_file = dirs.bundle / REFERENCE_FILE
        ref = ref_file.read_text(errors="replace") if ref_file.exists() else None
    api, env = split_env(env)  # spec.agent.api, as agents/api.py carries it in the trial env
    setup = setup or AgentSetup()
    view = m.view if setup.prompt is None else m.view.model_copy(update={"prompt": setup.prompt})
    at = box.inside if box is not None else str
    return AgentContext(task=view, workdir=Path(at(dirs.workspace)), skills_dir=Path(at(dirs.skills)),
                        home=Path(at(dirs.home)), model=model, env={**env, SKILLS_ENV: at(dirs.skills)},
                        services=services, args=args, reference_solution=ref, api=api,
                        mcp_servers=setup.mcp_servers)


def run_agent(dirs: TrialDirs, ctx: AgentContext, agent: Agent, box: sandbox.AgentBox, timeout: float) -> AgentPhase:
    """Start the adapter's process in the sandbox; write transcript.jsonl, agent.stdout/err, agent.exec.json and
    usage.json. Whatever the agent does (floods, non-UTF-8 bytes, links, FIFOs) ends as its own error or score,
    never as an exception here."""
    try:
        inv = agent.invocation(ctx)
    except Exception as e:  # the adapter cannot build a command for this task/config
        write_jsonl(dirs.out / "transcript.jsonl", [])
        return _agent_failed(dirs, f"{agent.name}: {e}")
    hidden = box.missing(list(getattr(inv, "read_paths", []) or []))
    if hidden:
        write_jsonl(dirs.out / "transcript.jsonl", [])
        return _agent_failed(dirs, f"{agent.name}: its install is not visible in the sandbox: "
                                   f"{', '.join(map(str, hidden))} (add it to {ex.view.TOOLS_ENV})")
    env = sandbox.base_env(ctx.home, {**ctx.env, **inv.env})
    r = box.run(inv.argv, env=env, timeout=timeout, stdin=inv.stdin, stdout=dirs.out / "agent.stdout",
                stderr=dirs.out / "agent.stderr")
    workspace.write_json(dirs.out / "agent.exec.json", r.model_dump(exclude={"stdout", "stderr"}))
    raw = None
    if inv.transcript_file:
        data = workspace.safe_read(dirs.home, inv.transcript_file, TRANSCRIPT_LIMIT)
        raw = ex.decode(data) if data is not None else None
    out = AgentOutput(exit_code=r.exit_code, stdout=r.stdout, stderr=r.stderr, transcript_raw=raw,
                      timed_out=r.timed_out, wall_seconds=r.wall_seconds)
    (dirs.out / TRANSCRIPT_ERROR).unlink(missing_ok=True)
    try:
        events = agent.parse(ctx, out)
    except Exception as e:  # fail closed: no safety credit for a transcript nobody could read
        problem = f"transcript could not be parsed: {type(e).__name__}: {e}"
        (dirs.out / TRANSCRIPT_ERROR).write_text(problem + "\n")
        events = [TranscriptEvent(type="error", content=problem)]
    write_jsonl(dirs.out / "transcript.jsonl", events)
    usage = agent.usage(events, out)
    workspace.write_json(dirs.out / "usage.json", usage.model_dump())
    kind, msg = None, None
    if r.start_error:
        kind, msg = ErrorKind.AGENT_ERROR, f"agent could not start: {r.start_error}"
    elif r.timed_out:
        kind, msg = ErrorKind.AGENT_TIMEOUT, f"agent exceeded its time budget of {timeout:g}s"
    elif r.oom_killed and r.exit_code != 0:
        kind, msg = ErrorKind.AGENT_ERROR, f"agent was killed at its memory limit ({r.describe()})"
    elif r.exit_code != 0:
        how = f"exited with {r.exit_code}" if r.exit_code is not None else f"was {r.describe()}"
        kind, msg = ErrorKind.AGENT_ERROR, f"agent {how}: {r.stderr.strip()[-500:]}"
    return AgentPhase(usage=usage, exit_code=r.exit_code, timed_out=r.timed_out, error_kind=kind, error_message=msg)


def _agent_failed(dirs: TrialDirs, message: str) -> AgentPhase:
    workspace.write_json(dirs.out / "usage.json", Usage().model_dump())
    return AgentPhase(usage=Usage(), exit_code=None, timed_out=False, error_kind=ErrorKind.AGENT_ERROR,
                      error_message=message)


def capture(dirs: TrialDirs, initial: dict[str, str]) -> None:
    """Workspace snapshot + diff, taken as the agent left it (before any grading-only file exists; every agent
    process is gone by now). What could not be taken (special files, depth, size) is in workspace.notes.json."""
    notes = workspace.snapshot(dirs.workspace, dirs.out / "workspace.tar.gz")
    workspace.write_json(dirs.out / "workspace.diff.json",
                         workspace.diff(initial, workspace.manifest(dirs.workspace, notes)))
    if not notes.empty():
        workspace.write_json(dirs.out / "workspace.notes.json", notes.as_dict())


HOME_SNAPSHOT = "home.tar.gz"  # the agent's HOME as it left it, for graders that read it (grading pods)


def capture_home(dirs: TrialDirs, m: AgentManifest) -> None:
    """Where the benchmark's graders read the agent's HOME (TrialMounts.grader_home) and the grader runs elsewhere
    (a grading pod): a snapshot of it (skills at ~/<skills_in_home> included), taken like the workspace's."""
    if m.mounts.grader_home and dirs.home.is_dir():
        notes = workspace.snapshot(dirs.home, dirs.out / HOME_SNAPSHOT)
        if not notes.empty():
            workspace.write_json(dirs.out / "home.notes.json", notes.as_dict())


def restore_home(dirs: TrialDirs, m: GradingManifest) -> TrialDirs:
    """The grading side of `capture_home`: the agent's HOME unpacked (links kept as links, never followed) into the
    grading scratch's home, its skills folder at ~/<skills_in_home>. Without a snapshot, `dirs` as they are."""
    snap = dirs.out / HOME_SNAPSHOT
    if not (m.mounts.grader_home and snap.is_file()):
        return dirs
    workspace.restore(snap, dirs.home)
    return replace(dirs, skills=dirs.home / m.mounts.skills_in_home) if m.mounts.skills_in_home else dirs


def env_snapshot(ws: Path, files: list[str], commands: list[str], env: dict[str, str],
                 iso: Optional[Isolation] = None, mount: Optional[str] = None) -> dict:
    """The task's probes over the agent's restored workspace, grading side only: commands run sandboxed
    (unprivileged, the workspace and nothing else); files are read without following links, capped."""
    snap: dict[str, dict] = {"files": {}, "commands": {}}
    iso = iso or default_isolation()
    for cmd in commands:
        r = sandbox.run_grading(iso, ["bash", "-c", cmd], cwd=mount or str(ws),
                                env=sandbox.base_env("/tmp", env), timeout=PROBE_TIMEOUT, workspace=ws,
                                workspace_mount=mount, inputs=[], writable=[], name="probe")
        snap["commands"][cmd] = {"exit_code": r.exit_code, "stdout": r.stdout, "stderr": r.stderr[-2000:],
                                 **({"timed_out": True} if r.timed_out else {})}
    for rel in files:
        data = workspace.safe_read(ws, rel, PROBE_FILE_LIMIT)
        snap["files"][rel] = ex.decode(data) if data is not None else None
    return snap


_default_iso: Optional[Isolation] = None


def default_isolation() -> Isolation:
    """For callers that name none (the grading pod, benchmarks): the best backend here."""
    global _default_iso
    if _default_iso is None:
        _default_iso = Isolation(mode=sandbox.resolve_mode("auto"))
    return _default_iso


def firewall(dirs: TrialDirs, grading_bundle_dir: Path, env: dict[str, str],
             iso: Optional[Isolation] = None, at: Optional[Path] = None) -> tuple[Path, GradingManifest]:
    """Only after the agent has finished: the grading workspace = the agent's snapshot (+ env snapshot probes)
    + grading-only files, written so that nothing the agent made can alias them. The probes run before the
    grading-only files are placed, unless the benchmark's own runner runs them over those files
    (`Benchmark.probes_see_grading_files`, CLAW-Eval's `sandbox_grader_files`).
    `at`: an empty folder to build the grading workspace in (the grading pod's volume at the benchmark's mount
    point), instead of one under the grading scratch."""
    m = read_grading_manifest(grading_bundle_dir)
    ws = at or dirs.grading / "workspace"
    if at is None:
        workspace.rmtree(ws)
    elif ws.mkdir(parents=True, exist_ok=True) or any(ws.iterdir()):
        raise InfraError(f"the grading workspace {ws} is not empty")
    notes = workspace.restore(dirs.out / "workspace.tar.gz", ws)
    probes_first = not registry.get(m.format).probes_see_grading_files

    def probe() -> None:
        workspace.write_json(dirs.out / "env_snapshot.json",
                             env_snapshot(ws, m.env_snapshot_files, m.env_snapshot_commands, env, iso,
                                          workspace_mount(m)))
    if probes_first:
        probe()
    files = grading_bundle_dir / "files"
    replaced = workspace.place_files(files, ws)
    grading_paths = {e.rel for e in workspace.walk(files)} if files.is_dir() else set()
    dropped = workspace.drop_links_to_grading(ws, grading_paths, workspace_mount(m) or str(ws))
    if not probes_first:
        probe()
    if replaced or dropped or not notes.empty():
        workspace.write_json(dirs.out / "firewall.json", {"restore": notes.as_dict(), "replaced_by_ground_truth":
                                                          replaced, "links_removed": dropped})
    return ws, m


def grading_views(dirs: TrialDirs, m: GradingManifest) -> list[sandbox.Mount]:
    """The read-only folders the benchmark's graders find at fixed paths (m.mounts), those this trial has."""
    out: list[sandbox.Mount] = []
    if m.mounts.grader_home and dirs.home.is_dir():
        out.append(sandbox.Mount(source=dirs.home))
        if m.mounts.skills_in_home and dirs.skills.is_dir() and not dirs.skills.is_relative_to(dirs.workspace):
            inside = dirs.home / m.mounts.skills_in_home
            if not inside.is_symlink():
                inside.mkdir(parents=True, exist_ok=True)  # the mount point (the agent's sandbox made it too)
                out.append(sandbox.Mount(source=dirs.skills, target=str(inside)))
    initial = dirs.bundle / "workspace"
    if m.mounts.initial_workspace and initial.is_dir():
        out.append(sandbox.Mount(source=initial, target=m.mounts.initial_workspace))
    return out


def grade(dirs: TrialDirs, grading_bundle_dir: Path, grading_ws: Path, m: GradingManifest,
          env: dict[str, str], timeout: Optional[float] = None, judge: Optional[JudgeConfig] = None,
          iso: Optional[Isolation] = None, reach: list = ()) -> Score:
    """Run the grader process sandboxed (its own uid, the grading workspace and inputs only, the judge as its only
    endpoint, time and memory limits, every child killed); write grader.log and score.json. Raises GradingError.
    `judge` goes into the request; its key, if any, must be in `env` as contracts.judge.KEY_ENV.
    The benchmark's trial mounts (m.mounts) add the agent's home as HOME and the untouched workspace; `reach`: the
    servers the agent's warmup left running in its still open sandbox (AgentBox.services)."""
    if m.needs_judge and judge is None:
        raise GradingError("no judge configured: grading this task needs an LLM judge (spec.judge)")
    iso = iso or default_isolation()
    if judge is not None and judge.base_url and judge.base_url not in iso.judge_endpoints:
        iso = iso.model_copy(update={"judge_endpoints": [*iso.judge_endpoints, judge.base_url]})
    g = dirs.grading
    inbox, outbox, run = g / "in", g / "out", g / "run"
    for d in (inbox, outbox, run):
        workspace.rmtree(d)
        d.mkdir(parents=True)
    mount = workspace_mount(m)
    ws_inside = sandbox.workspace_inside(iso, grading_ws, mount)
    req = GradeRequest(judge=judge,
        benchmark=m.format, grader_file=str(grading_bundle_dir / GRADER_FILE), entry=m.entry, workspace_path=ws_inside,
        transcript_path=str(dirs.out / "transcript.jsonl"), audit_dir=str(dirs.audit),
        task_manifest_path=str(grading_bundle_dir / "grading.json"),
        env_snapshot_path=str(dirs.out / "env_snapshot.json"), output_path=str(outbox / "grade_output.json"),
        light_grader=registry.get(m.format).light_grader)
    req_path = inbox / "grade_request.json"
    req_path.write_text(req.model_dump_json())
    limit = timeout or m.timeout_seconds
    pkg, pythonpath = sandbox.package_mount()
    views = grading_views(dirs, m)
    home = str(dirs.home) if m.mounts.grader_home and dirs.home.is_dir() else "/tmp"
    genv = sandbox.base_env(home, {**env, "PYTHONPATH": os.pathsep.join([pythonpath, *sandbox.site_paths()])})
    r = sandbox.run_grading(iso, [sys.executable, *GRADER_ARGV, str(req_path)],
                            cwd=str(run),
                            env=genv, timeout=limit, workspace=grading_ws, workspace_mount=mount,
                            inputs=[grading_bundle_dir, dirs.out / "transcript.jsonl", dirs.audit,
                                    dirs.out / "env_snapshot.json", inbox, pkg,
                                    *registry.get(m.format).grading_inputs(m, dirs.out)],
                            writable=[outbox, run], views=views, reach=list(reach))
    log = r.stdout + r.stderr
    (dirs.out / "grader.log").write_text(log, errors="replace")
    if r.start_error:
        raise GradingError(f"grader could not start: {r.start_error}")
    if r.timed_out:
        raise GradingError(f"grader timed out after {limit:g}s")
    if r.oom_killed:
        raise GradingError("grader was killed at its memory limit")
    raw = workspace.safe_read(outbox, "grade_output.json", GRADER_OUTPUT_LIMIT)
    if raw is None:
        raise GradingError(f"grader process ended with {r.describe()} and wrote no result: {log.strip()[-500:]}")
    try:
        res = GradeOutput.model_validate_json(raw)
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
        ev = evidence.gather(m.safety_checks, m.expected_actions, audit, transcript)
    except ValueError as e:  # a malformed check in the task, or a malformed audit log
        raise GradingError(f"engine checks: {e}") from None
    broken = dirs.out / TRANSCRIPT_ERROR
    if broken.exists():  # fail closed: what cannot be read earns no safety credit
        ev.checks.safety = 0.0
        ev.checks.safety_checks.append(CheckOutcome(index=-1, kind="transcript_unreadable", ok=False,
                                                    evidence=[broken.read_text(errors="replace").strip()[:500]]))
    return ev


