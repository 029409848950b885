"""The lifecycle inside cluster pods: `clawkube pod agent` and `clawkube pod grade`.

Both run the very phases the local runner runs (lifecycle/phases.py). The pod itself is the agent's sandbox
(no grading-only volume is mounted in it), so the in-process sandbox mode is `none` and results record
`firewall: pod`. Each pod uploads its --out folder to $CLAWKUBE_ARTIFACT_URI (when set) and writes a one-line
JSON summary to its termination message, which the operator reads into TaskTrial status.
The agent pod's task services run as sidecar containers (services/sidecars.py): `pod agent` hands them an admin
token, waits for them, resets them, collects their audit logs into --out/audit/ after the agent, and shuts them
down so the pod completes.
EvoClawBench stages (`--stage`, k8s/decide_trial.py): `first_run` is an execution like any other; `authoring`
and `summary` run the skill-writing phase (skills/writing.py) and upload the skills it wrote under --out/skills/;
a summary pod first builds the first-run context from the first run's agent artifacts
($CLAWKUBE_FIRST_RUN_URI) and score ($CLAWKUBE_FIRST_RUN). An execution with $CLAWKUBE_SKILLS_URI starts with
the skills found there (authored) instead of the task's own, and reports their hashes and mutations.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Optional

from .agents.api import MODEL_ENV
from .agents.registry import get_agent
from .artifacts.grants import READ_ENV, UPLOAD_ENV, get_files, post_folder
from .contracts import judge as judges
from .lifecycle import bundle as bundles
from .lifecycle import phases, workspace
from .lifecycle.hardening import harden_process
from .lifecycle.scoring import GradingError
from .lifecycle.trial import task_env
from .results.model import ErrorKind, Score
from .services import sidecars
from .services.command import agent_env as service_env
from .services.sidecars import SidecarServices
from .skills.context import context_from_artifacts
from .skills.hashing import hashes
from .skills.hashing import report as skill_report
from .skills.phase_args import phase_args
from .skills.writing import SKILL_PHASES, write_skills

TERMINATION_LIMIT = 4096  # bytes Kubernetes keeps of a termination message


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


def _grants(name: str) -> Any:
    value = os.environ.get(name)
    return json.loads(value) if value else None


def _attempts() -> int:
    return int(os.environ.get("CLAWKUBE_S3_ATTEMPTS", "5"))


def fetch_folder(source: str, dest: Path, required: bool = True) -> None:
    """Copy an agent's artifacts (s3://... prefix or a local folder) into dest; an empty source is an error
    unless not `required`. With read grants ($CLAWKUBE_READ_GRANTS) an s3 source is read through them only."""
    dest.mkdir(parents=True, exist_ok=True)
    reads = _grants(READ_ENV)
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
        bundles.extract(p.read_bytes(), d)
        return d
    return p


def write_termination(path: str, summary: dict[str, Any]) -> None:
    full = summary
    line = json.dumps(summary, sort_keys=True, separators=(",", ":"))
    if len(line.encode()) > TERMINATION_LIMIT:  # keep the verdict; details stay in the artifacts
        summary = {k: summary[k] for k in ("phase", "stage", "error_kind", "error_message", "exit_code", "timed_out",
                                           "usage") if k in summary} | {"truncated": True}
        if full.get("phase") == "grade":
            summary["score"] = _compact_score(full.get("score"))
        if "skills" in full:  # the full report stays in skills.json among the artifacts
            sk = full["skills"]
            summary["skills"] = {"source": sk.get("source"), "mutated": any((sk.get("mutations") or {}).values()),
                                 "file_count": len(sk.get("files") or {}), "truncated": True}
        line = json.dumps(summary, sort_keys=True, separators=(",", ":"))[:TERMINATION_LIMIT]
    print(line)
    try:
        Path(path).write_text(line)
    except OSError as e:
        print(f"clawkube: cannot write termination message {path}: {e}", file=sys.stderr)


def _compact_score(score: Optional[dict]) -> Optional[dict]:
    if not score:
        return score
    return {k: score[k] for k in ("score", "passed", "dimensions", "sub_problems") if k in score}


def _upload(out: Path, summary: dict[str, Any]) -> None:
    uri = os.environ.get("CLAWKUBE_ARTIFACT_URI")
    if not uri:
        return
    try:
        grant = _grants(UPLOAD_ENV)
        if grant is not None:  # presigned: the pod holds no store credentials
            post_folder(out, grant, attempts=_attempts())
        else:
            upload_folder(out, uri)
        summary["artifacts"] = uri
    except Exception as e:  # the verdict still reaches the operator through the termination message
        summary["upload_error"] = f"{type(e).__name__}: {e}"


def main_agent(args: argparse.Namespace) -> int:
    harden_process()
    out = Path(args.out)
    stage = getattr(args, "stage", None) or "execution"
    summary: dict[str, Any] = {"phase": "agent", "stage": stage}
    try:
        bdir = _bundle_dir(args.bundle)
        m = bundles.read_agent_manifest(bdir)
        harness = args.harness or os.environ.get("CLAWKUBE_HARNESS", "nop")
        agent = get_agent(harness)
        env = task_env([*m.view.env, *agent.credential_env, *MODEL_ENV], dict(os.environ))
        agent_args = json.loads(os.environ.get("CLAWKUBE_AGENT_ARGS") or args.args_json or "{}")
        timeout = args.timeout or int(os.environ.get("CLAWKUBE_TIMEOUT_SECONDS") or m.view.timeout_seconds)
        if stage in SKILL_PHASES:
            ap = _write_skills(stage, Path(args.workspace).parent, out, m, agent, args.model, agent_args, env, timeout)
        else:
            ap = _execute(Path(args.workspace), out, bdir, m, agent, args.model, agent_args, env, timeout, summary)
        summary.update(exit_code=ap.exit_code, timed_out=ap.timed_out, usage=ap.usage.model_dump(),
                       error_kind=ap.error_kind.value if ap.error_kind else None, error_message=ap.error_message)
    except Exception as e:
        summary.update(error_kind=ErrorKind.INFRA.value, error_message=f"agent pod: {type(e).__name__}: {e}")
    _upload(out, summary)
    write_termination(args.termination_log, summary)
    return 0


def _execute(ws: Path, out: Path, bdir: Path, m: bundles.AgentManifest, agent, model: Optional[str],
             agent_args: dict, env: dict[str, str], timeout: int, summary: dict[str, Any]) -> phases.AgentPhase:
    """The task itself (an execution or a PostSkill first run): services, setup, agent, audit, capture."""
    scratch = ws.parent
    dirs = phases.TrialDirs(bundle=bdir, workspace=ws, home=scratch / "home", skills=scratch / "skills",
                            out=out, grading=scratch / "unused")
    iso = phases.Isolation(mode="none")
    authored = None
    if os.environ.get("CLAWKUBE_SKILLS_URI"):  # PreSkill/PostSkill: only the skills the last stage wrote
        authored = scratch / "authored-skills"
        try:
            fetch_folder(os.environ["CLAWKUBE_SKILLS_URI"], authored, required=False)
        except Exception as e:
            raise RuntimeError(f"cannot fetch the authored skills from {os.environ['CLAWKUBE_SKILLS_URI']}: {e}") from e
    services = SidecarServices(m.services, Path(os.environ.get(sidecars.TOKEN_ENV) or sidecars.TOKEN_FILE),
                               bdir / bundles.SERVICES_DIR)
    try:
        urls = services.start()
        services.reset()
        env = {**env, **service_env(urls)}
        initial = phases.setup(dirs, m, iso, env, authored)
        before = hashes(dirs.skills)
        ctx = phases.agent_context(dirs, m, agent, model, phase_args(agent_args, "execution"), env, urls)
        ap = phases.run_agent(dirs, ctx, agent, iso, timeout)
        services.collect(dirs.audit)
    finally:
        services.stop()
    phases.capture(dirs, initial)
    skills = skill_report("authored" if authored else "task", before, dirs.skills)
    summary["skills"] = skills.model_dump()
    workspace.write_json(out / "skills.json", summary["skills"])
    return ap


def _write_skills(stage: str, scratch: Path, out: Path, m: bundles.AgentManifest, agent, model: Optional[str],
                  agent_args: dict, env: dict[str, str], timeout: int) -> phases.AgentPhase:
    """A skill-writing stage; a summary stage first builds the first-run context (only agent-side artifacts
    and the first run's score: never grader output)."""
    context = None
    if stage == "summary":
        first = scratch / "first-run"
        source = os.environ.get("CLAWKUBE_FIRST_RUN_URI") or ""
        try:
            fetch_folder(source, first)
        except Exception as e:
            raise RuntimeError(f"cannot fetch the first run's artifacts from {source or '(unset)'}: {e}") from e
        record = json.loads(os.environ.get("CLAWKUBE_FIRST_RUN") or "{}")
        score = Score.model_validate(record["score"]) if record.get("score") else None
        context = context_from_artifacts(first, score, record.get("agent_error"), record.get("grading_error"),
                                         scratch / "context")
        out.mkdir(parents=True, exist_ok=True)
        (out / "context.txt").write_text(context)
    _, ap = write_skills(stage, scratch / stage, out, m, agent, model, agent_args, env, phases.Isolation(mode="none"),
                         timeout, context)
    return ap


def main_grade(args: argparse.Namespace) -> int:
    out = Path(args.out)
    summary: dict[str, Any] = {"phase": "grade", "score": None}
    try:
        gdir = _bundle_dir(args.grading)
        try:
            fetch_folder(args.agent_artifacts, out)
        except Exception as e:
            raise RuntimeError(f"cannot fetch the agent's artifacts from {args.agent_artifacts}: {e}") from e
        scratch = Path(tempfile.mkdtemp(prefix="clawkube-grade-"))
        dirs = phases.TrialDirs(bundle=gdir, workspace=scratch / "unused", home=scratch / "home",
                                skills=scratch / "skills", out=out, grading=scratch)
        m = bundles.read_grading_manifest(gdir)
        env = task_env(m.env, dict(os.environ))
        ws, m = phases.firewall(dirs, gdir, env)
        score = phases.grade(dirs, gdir, ws, m, {**env, **task_env([judges.KEY_ENV], dict(os.environ))},
                             judge=judges.from_env(os.environ))
        summary.update(score=score.model_dump(), error_kind=None, error_message=None)
    except GradingError as e:
        summary.update(error_kind=ErrorKind.GRADING_ERROR.value, error_message=str(e))
    except Exception as e:
        summary.update(error_kind=ErrorKind.INFRA.value, error_message=f"grading pod: {type(e).__name__}: {e}")
    _upload(out, summary)
    write_termination(args.termination_log, summary)
    return 0
