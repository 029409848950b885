"""The lifecycle inside cluster pods: `clawkube pod agent` and `clawkube pod grade`.

Both run the very phases the local runner runs (lifecycle/phases.py). The pod itself is the agent's sandbox
(no grading-only volume is mounted in it), so the in-process sandbox backend is `pod` (execution/pod.py: each
agent-side process tree in pid/user/mount namespaces of its own, so it cannot outlive its phase or signal this
supervisor; capture and the termination message come after it is gone) and results record `firewall: pod`.
The grading pod runs its probes and grader with the same backend: they cannot see the supervisor's process (its
environment holds the artifact store's keys when grants are not presigned) nor outlive grading. Each pod reads its settings from its environment (contracts/pod_env.PodEnv, the model the
operator's pod specs are written with), uploads its --out folder to $CLAWKUBE_ARTIFACT_URI (when set) and writes
a one-line JSON summary to its termination message (contracts/termination.py), which the operator reads into
TaskTrial status.
The agent pod's task services run as sidecar containers (services/sidecars.py): `pod agent` hands them an admin
token, waits for them, resets them, collects their audit logs into --out/audit/ after the agent, and shuts them
down so the pod completes. A benchmark with its own environment sidecar (`Benchmark.pod_environment`: CLAW-Eval's
svc-claweval) is driven the same way through its client, which also gives the agent its MCP servers and prompt.
A task's Warmup runs in the agent pod's "svc-warmup" sidecar as root (lifecycle/warmup_sidecar.py; $CLAWKUBE_WARMUP_DIR),
the ports of the servers it left running go into the termination message, and `pod grade` reaches them through the
agent pod's relay ($CLAWKUBE_WARMUP_PEER) at their own loopback ports.
Stages (`--stage`, a stage of the trial plan of $CLAWKUBE_MODE, plan.py): an `execute` stage (`first_run`) is
an execution like any other; an `author` stage (`authoring`, `summary`) runs the skill-writing phase
(skills/writing.py) and uploads the skills it wrote under --out/skills/; one told about an earlier execution
(summary) first builds its context from that execution's agent artifacts ($CLAWKUBE_FIRST_RUN_URI) and score
($CLAWKUBE_FIRST_RUN). An execution with $CLAWKUBE_SKILLS_URI starts with
the skills found there (authored) instead of the task's own, and reports their hashes and mutations.
"""
from __future__ import annotations

import argparse
import atexit
import contextlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Optional

from .agents.api import MODEL_ENV
from .agents.registry import get_agent
from . import plan as trial_plan
from .artifacts.grants import get_files, post_folder
from .contracts import termination
from .contracts.pod_env import PodEnv
from .contracts.termination import AgentTermination, GradeTermination
from .contracts.warmup import LOST_PEER, WarmupRequest
from .execution.relay import LoopbackRelay, peer_ports
from .plan import Role
from .contracts import judge as judges
from .lifecycle import bundle as bundles
from .lifecycle import phases, warmup_sidecar, workspace
from .lifecycle.hardening import harden_process
from .lifecycle.scoring import GradingError
from .lifecycle.task_env import task_env
from .results.model import ErrorKind
from .services import sidecars
from .services.command import agent_env as service_env
from .services.sidecars import SidecarServices
from .benchmarks import registry
from .benchmarks.base import AgentSetup, EnvironmentStartError, TrialEnvironment
from .benchmarks.evoclaw.protocol import phase_of
from .runspec import EvalMode
from .skills import scan
from .skills.context import context_from_artifacts, facts_of
from .skills.hashing import hashes
from .skills.hashing import report as skill_report
from .skills.phase_args import phase_args
from .skills.writing import phase_manifest, write_skills

POD_BACKEND = "pod"  # execution/pod.py: agent and grader process trees in namespaces of their own


def _store_for(uri: str):
    from .artifacts.store import S3Store, StoreConfig
    from .artifacts.uri import S3Uri

    u = S3Uri.parse(uri)
    cfg = StoreConfig(bucket=u.bucket, prefix=u.key, endpoint=os.environ.get("AWS_ENDPOINT_URL_S3")
                      or os.environ.get("AWS_ENDPOINT_URL"), region=os.environ.get("AWS_DEFAULT_REGION"))
    return S3Store(cfg, attempts=_attempts())


def upload_folder(folder: Path, uri: str) -> list[str]:
    store = _store_for(uri)
    keys = []
    for f in sorted(p for p in folder.rglob("*") if p.is_file()):
        keys.append(store.put(store.key(f.relative_to(folder).as_posix()), f.read_bytes()))
    return keys


def _env() -> PodEnv:
    return PodEnv.from_environ(os.environ)


def _grants(value: Optional[str]) -> Any:
    return json.loads(value) if value else None


def _attempts() -> int:
    return _env().s3_attempts or 5


def fetch_folder(source: str, dest: Path, required: bool = True) -> None:
    """Copy an agent's artifacts (s3://... prefix or a local folder) into dest; an empty source is an error
    unless not `required`. With read grants ($CLAWKUBE_READ_GRANTS) an s3 source is read through them only."""
    dest.mkdir(parents=True, exist_ok=True)
    reads = _grants(_env().read_grants)
    if reads is not None and source.startswith("s3://"):
        if source not in reads:
            raise FileNotFoundError(f"no read grant for {source}")
        if not reads[source] and required:
            raise FileNotFoundError(f"no agent artifacts under {source}")
        get_files(reads[source], dest, attempts=_attempts())
        return
    if not source.startswith("s3://"):
        if Path(source).is_dir() or required:
            shutil.copytree(source, dest, dirs_exist_ok=True)
        return
    store = _store_for(source)
    prefix = store.key("")
    keys = store.list(prefix)
    if not keys and required:
        raise FileNotFoundError(f"no agent artifacts under {source}")
    for key in keys:
        rel = key[len(prefix):].lstrip("/")
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(store.get(key))


def _bundle_dir(path: str) -> Path:
    p = Path(path)
    if p.is_file():  # a bundle.tar.gz: unpack next to the scratch
        d = Path(tempfile.mkdtemp(prefix="clawkube-bundle-"))
        d.chmod(0o755)  # readable by the sandboxed grader's uid
        # removed when the command ends: a grading bundle (ground truth, grader) must not outlive its phase in a
        # shared /tmp (outside a pod, e.g. tests, the next trial's agent could read it)
        atexit.register(shutil.rmtree, d, True)
        bundles.extract(p.read_bytes(), d)
        return d
    return p


def write_termination(path: str, summary: AgentTermination | GradeTermination) -> None:
    line = termination.line(summary)
    print(line)
    try:
        Path(path).write_text(line)
    except OSError as e:
        print(f"clawkube: cannot write termination message {path}: {e}", file=sys.stderr)


def _upload(out: Path, summary: AgentTermination | GradeTermination) -> None:
    env = _env()
    uri = env.artifact_uri
    if not uri:
        return
    try:
        grant = _grants(env.upload_grant)
        if grant is not None:  # presigned: the pod holds no store credentials
            post_folder(out, grant, attempts=_attempts())
        else:
            upload_folder(out, uri)
        summary.artifacts = uri
    except Exception as e:  # the verdict still reaches the operator through the termination message
        summary.upload_error = f"{type(e).__name__}: {e}"


class _SetupError(Exception):
    """The task cannot run here (AgentManifest.setup_error)."""


def main_agent(args: argparse.Namespace) -> int:
    harden_process()
    out = Path(args.out)
    name = getattr(args, "stage", None) or trial_plan.EXECUTION
    summary = AgentTermination(stage=name)
    try:
        penv = _env()
        stage = trial_plan.stage_named(name, penv.mode)
        if stage.role is Role.GRADE:
            raise ValueError(f"stage {name!r} is a grading stage: it runs in `clawkube pod grade`")
        bdir = _bundle_dir(args.bundle)
        m = bundles.read_agent_manifest(bdir)
        if m.setup_error:  # the task cannot run here (e.g. its workspace is not downloaded)
            raise _SetupError(m.setup_error)
        agent = get_agent(args.harness or penv.harness or "nop")
        env = task_env([*m.view.env, *agent.credential_env, *MODEL_ENV], dict(os.environ))
        agent_args = penv.agent_args if penv.agent_args is not None else json.loads(args.args_json or "{}")
        timeout = args.timeout or penv.timeout_seconds or m.view.timeout_seconds
        scratch = Path(args.scratch) if getattr(args, "scratch", None) else Path(args.workspace).parent
        if stage.role is Role.AUTHOR:
            ap = _write_skills(stage, penv, scratch, out, bdir, m, agent, args.model, agent_args,
                               env, timeout, summary)
        else:
            ap = _execute(Path(args.workspace), scratch, out, bdir, m, agent, args.model, agent_args, env, timeout,
                          summary, penv, stage)
        summary = summary.model_copy(update={"exit_code": ap.exit_code, "timed_out": ap.timed_out, "usage": ap.usage,
                                             "error_kind": ap.error_kind, "error_message": ap.error_message})
    except (_SetupError, phases.SetupError) as e:  # the task cannot run here, or its warmup failed
        summary = summary.model_copy(update={"error_kind": ErrorKind.SETUP_ERROR, "error_message": str(e)})
    except Exception as e:
        summary.error_kind, summary.error_message = ErrorKind.INFRA, f"agent pod: {type(e).__name__}: {e}"
    _upload(out, summary)
    write_termination(args.termination_log, summary)
    return 0


def _execute(ws: Path, scratch: Path, out: Path, bdir: Path, m: bundles.AgentManifest, agent, model: Optional[str],
             agent_args: dict, env: dict[str, str], timeout: int, summary: AgentTermination,
             penv: PodEnv, stage: trial_plan.Stage) -> phases.AgentPhase:
    """An execute stage (the graded execution or a PostSkill first run): services, setup, agent, audit, capture;
    with $CLAWKUBE_SKILLS_URI it starts with the skills found there (written by an author stage).
    `ws` is where the pod mounts the workspace (the benchmark's mount point), `scratch` the pod's own folder.
    The pod is the view: skills a benchmark shows at ~/<skills_in_home> are made there, in the agent's HOME."""
    home = scratch / "home"
    skills = home / m.mounts.skills_in_home if m.mounts.skills_in_home else scratch / "skills"
    dirs = phases.TrialDirs(bundle=bdir, workspace=ws, home=home, skills=skills, out=out,
                            grading=scratch / "unused", scratch_dir=scratch).for_manifest(m)
    iso = phases.Isolation(mode=POD_BACKEND)
    pm = phase_manifest(m, phase_of(_mode(penv, stage), stage.name))  # the prompt as the mode puts it
    authored = None
    if penv.skills_uri:  # PreSkill/PostSkill: only the skills the last stage wrote
        authored = scratch / "authored-skills"
        try:
            fetch_folder(penv.skills_uri, authored, required=False)
        except Exception as e:
            raise RuntimeError(f"cannot fetch the authored skills from {penv.skills_uri}: {e}") from e
    own = registry.get(m.format).pod_environment(m)  # a benchmark's own environment sidecar (CLAW-Eval)
    services = own if own is not None else _GenericSidecars(SidecarServices(
        m.services, Path(os.environ.get(sidecars.TOKEN_ENV) or sidecars.TOKEN_FILE), bdir / bundles.SERVICES_DIR))
    try:
        try:
            services.start()
        except EnvironmentStartError as e:
            raise phases.InfraError(f"services: {e}") from e
        urls = services.urls
        env = {**env, **service_env(urls)}
        initial, box = phases.setup(dirs, pm, iso, env, authored, urls, agent,
                                    warmup=_sidecar_warmup(penv, ws, agent, summary)
                                    if m.warmup and penv.warmup_dir else None)
        with box:
            setup = services.agent_setup(dirs.home)
            before = hashes(dirs.skills)
            ctx = phases.agent_context(dirs, pm, agent, model, phase_args(agent_args, "execution"), env, urls, box,
                                       setup)
            ap = phases.run_agent(dirs, ctx, agent, box, timeout)
        try:
            services.collect(out)
        except EnvironmentStartError as e:
            raise phases.InfraError(f"audit: {e}") from e
    finally:
        services.stop()
    phases.capture(dirs, initial)
    phases.capture_home(dirs, m)
    summary.skills = skill_report("authored" if authored else "task", before, dirs.skills)
    workspace.write_json(out / "skills.json", summary.skills.model_dump())
    return ap


def _sidecar_warmup(penv: PodEnv, ws: Path, agent, summary: AgentTermination) -> phases.WarmupRunner:
    """The warmup through the pod's "svc-warmup" sidecar (lifecycle/warmup_sidecar.py): as root there, with the
    task's environment but none of the agent's credentials. The ports of the servers it left running go into the
    termination message (the operator has them relayed to the grading pod)."""
    secret = {*agent.credential_env, *MODEL_ENV}

    def run(box, lines: list[str], env: dict[str, str], log: Path) -> Optional[str]:
        req = WarmupRequest(env={k: v for k, v in env.items() if k not in secret}, cwd=str(ws), owner_uid=os.getuid(),
                            owner_gid=os.getgid(), owned=[str(d) for d in box.owned()])
        st = warmup_sidecar.run_remote(Path(penv.warmup_dir or ""), req, log)
        summary.warmup_ports = st.ports
        return st.failed
    return run


class _GenericSidecars(TrialEnvironment):
    """The task's generic services (services/sidecars.py) as a trial environment."""

    def __init__(self, services: SidecarServices):
        self.services = services

    def start(self) -> None:
        self.services.start()
        self.services.reset()

    def stop(self) -> None:
        self.services.stop()

    @property
    def urls(self) -> dict[str, str]:
        return dict(self.services.urls)

    def agent_setup(self, home: Path) -> AgentSetup:
        return AgentSetup()

    def collect(self, out: Path) -> None:
        self.services.collect(out / "audit")


def _mode(penv: PodEnv, stage: trial_plan.Stage) -> str:
    """The run's mode ($CLAWKUBE_MODE), else the first mode whose plan has this stage."""
    if penv.mode is not None:
        return penv.mode.value
    return next(m.value for m in EvalMode if any(s.name == stage.name for s in trial_plan.stages(m)))


def _write_skills(stage: trial_plan.Stage, penv: PodEnv, scratch: Path, out: Path, bdir: Path,
                  m: bundles.AgentManifest, agent, model: Optional[str], agent_args: dict, env: dict[str, str],
                  timeout: int, summary: AgentTermination) -> phases.AgentPhase:
    """An author stage; one told about an earlier execution (PostSkill summary) first builds its context
    (first_run_context.json: only that execution's agent-side artifacts and its score, never grader output)."""
    context = None
    if stage.context_from:
        first = scratch / "first-run"
        source = penv.first_run_uri or ""
        try:
            fetch_folder(source, first)
        except Exception as e:
            raise RuntimeError(f"cannot fetch the first run's artifacts from {source or '(unset)'}: {e}") from e
        record = penv.first_run
        if record is None:
            raise RuntimeError(f"stage {stage.name} needs $CLAWKUBE_FIRST_RUN (the first run's record)")
        context = context_from_artifacts(first, facts_of(m), record.score.model_dump() if record.score else None,
                                         scratch / "context")
        out.mkdir(parents=True, exist_ok=True)
        workspace.write_json(out / "first_run_context.json", context)
    _, ap, created = write_skills(phase_of(_mode(penv, stage), stage.name), scratch / stage.name, out, bdir, m, agent,
                                  model, agent_args, env, phases.Isolation(mode=POD_BACKEND), timeout, context)
    workspace.write_json(out / "created_skills.json", [c.model_dump() for c in created])
    summary.created_skills = [c.name for c in created]
    summary.skill_quality = scan.skill_quality(created)
    return ap


def _warmup_servers(peer: Optional[str], out: Path):
    """The servers the agent pod's warmup left running, at their loopback ports here for the grader
    (execution/relay.py); nothing to do without a peer. RuntimeError when they cannot be reached: grading them
    as absent would score the agent for the infrastructure's fault."""
    if not peer:
        return contextlib.nullcontext()
    if peer == LOST_PEER:
        raise RuntimeError("the agent pod, which runs the servers the task's warmup started, is gone")
    try:
        ports = peer_ports(peer)
    except (OSError, ValueError) as e:
        raise RuntimeError(f"the warmup's servers in the agent pod ({peer}) cannot be reached: {e}") from e
    workspace.write_json(out / "warmup_relay.json", {"peer": peer, "ports": ports})
    return LoopbackRelay(peer, ports)


def main_grade(args: argparse.Namespace) -> int:
    harden_process()  # where the pod backend falls back to the sweep, the grader shares our uid and pid namespace
    out = Path(args.out)
    summary = GradeTermination()
    try:
        gdir = _bundle_dir(args.grading)
        try:
            fetch_folder(args.agent_artifacts, out)
        except Exception as e:
            raise RuntimeError(f"cannot fetch the agent's artifacts from {args.agent_artifacts}: {e}") from e
        scratch = Path(tempfile.mkdtemp(prefix="clawkube-grade-"))
        atexit.register(shutil.rmtree, scratch, True)  # the firewall's copy holds grading-only files
        dirs = phases.TrialDirs(bundle=gdir, workspace=scratch / "unused", home=scratch / "home",
                                skills=scratch / "skills", out=out, grading=scratch)
        m = bundles.read_grading_manifest(gdir)
        dirs = phases.restore_home(dirs, m)  # the agent's HOME, for graders that look there (TrialMounts.grader_home)
        env = task_env(m.env, dict(os.environ))
        iso = phases.Isolation(mode=POD_BACKEND)  # the grader cannot see this process (nor its store keys)
        ws, m = phases.firewall(dirs, gdir, env, iso, at=Path(args.workspace) if getattr(args, "workspace", None)
                                else None)
        with _warmup_servers(_env().warmup_peer, out):
            score = phases.grade(dirs, gdir, ws, m, {**env, **task_env([judges.KEY_ENV], dict(os.environ))},
                                 judge=_env().judge_config(), iso=iso)
        summary.score = score
    except GradingError as e:
        summary.error_kind, summary.error_message = ErrorKind.GRADING_ERROR, str(e)
    except Exception as e:
        summary.error_kind, summary.error_message = ErrorKind.INFRA, f"grading pod: {type(e).__name__}: {e}"
    _upload(out, summary)
    write_termination(args.termination_log, summary)
    return 0
