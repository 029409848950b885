"""The skill-writing phases (PreSkill `authoring`, PostSkill `summary`), shared by the local runner and the pods.

The same agent adapter runs with the phase's prompt in a fresh, empty workspace (scratch, discarded), with no
task services and a fresh skills dir: that skills dir is the phase's only output. A copy of it is kept in
`out/skills/` as evidence (and, on the cluster, it is what the execution pod downloads).
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from ..agents.base import Agent
from ..lifecycle import phases, sandbox, workspace
from ..contracts.manifests import AgentManifest
from .phase_args import phase_args
from .prompts import authoring_prompt, summary_prompt

SKILL_PHASES = ("authoring", "summary")


def write_skills(phase: str, base: Path, out: Path, manifest: AgentManifest, agent: Agent, model: Optional[str],
                 args: dict, env: dict[str, str], iso: phases.Isolation, timeout: float,
                 context: Optional[str] = None) -> tuple[Path, phases.AgentPhase]:
    """Run one skill-writing phase under `base`; returns the skills dir and the phase's outcome (transcript,
    agent.stdout/err and usage.json in `out`). `context` is the first-run record (summary phase only)."""
    if phase not in SKILL_PHASES:
        raise ValueError(f"unknown skill phase {phase!r} (known: {', '.join(SKILL_PHASES)})")
    dirs = phases.TrialDirs(bundle=base / "no-bundle", workspace=base / "workspace", home=base / "home",
                            skills=base / "skills", out=out, grading=base / "unused")
    for d in (dirs.workspace, dirs.home, dirs.skills, dirs.out):
        d.mkdir(parents=True, exist_ok=True)
    sandbox.give_to_sandbox_user(dirs.workspace, dirs.home, dirs.skills)
    task_prompt = manifest.view.prompt
    prompt = (authoring_prompt(task_prompt, str(dirs.skills)) if phase == "authoring"
              else summary_prompt(task_prompt, context or "", str(dirs.skills)))
    view = manifest.view.model_copy(update={"prompt": prompt, "attachments": []})
    m = manifest.model_copy(update={"view": view, "services": []})
    ctx = phases.agent_context(dirs, m, agent, model, phase_args(args, phase), env, {})
    ap = phases.run_agent(dirs, ctx, agent, iso, timeout)
    workspace.copy_tree(dirs.skills, out / "skills")
    return dirs.skills, ap
