"""The skill-writing phases (PreSkill `preskill_author`, PostSkill `postskill_summary`), shared by the local runner
and the pods, as EvoClawBench's runner runs them.

The same agent adapter runs in a fresh copy of the task's workspace (its files and empty folders, no services),
with the phase's prompt (the mode prefix before the task prompt), the seeded skills (`skill-creator`) in the
skills dir and, for the summary, the first run's context at `.evoclawbench/first_run_context.json`. What it leaves
in the skills dir as `<name>/SKILL.md` folders (seeded ones excluded) are the authored skills: copied into
`out/skills/` (evidence, and on the cluster what the execution pod downloads) and scanned (name, size,
frontmatter, scripts, references). The phase's workspace is scratch.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

from ..agents.base import Agent
from ..benchmarks import registry
from ..contracts.manifests import AgentManifest
from ..lifecycle import phases, workspace
from ..lifecycle.bundle import AUTHORING_SKILLS_DIR
from ..benchmarks.evoclaw import protocol
from . import scan
from .phase_args import phase_args

SKILL_PHASES = ("preskill_author", "postskill_summary")


def phase_manifest(m: AgentManifest, phase: str, services: bool = True) -> AgentManifest:
    """The manifest an agent runs with in `phase`: its prompt as the task's benchmark puts it for that phase."""
    view = m.view.model_copy(update={"prompt": registry.get(m.format).phase_prompt(phase, m.view.prompt)})
    return m.model_copy(update={"view": view, **({} if services else {"services": []})})


def write_skills(phase: str, base: Path, out: Path, bundle: Path, m: AgentManifest, agent: Agent,
                 model: Optional[str], args: dict, env: dict[str, str], iso: phases.Isolation, timeout: float,
                 context: Optional[dict[str, Any]] = None
                 ) -> tuple[Path, phases.AgentPhase, list[scan.CreatedSkill]]:
    """Run one skill-writing phase under `base`; returns the authored skills folder (`out/skills`), the phase's
    outcome (transcript, agent.stdout/err and usage.json in `out`) and the skills it created."""
    if phase not in SKILL_PHASES:
        raise ValueError(f"unknown skill-writing phase {phase!r} (known: {', '.join(SKILL_PHASES)})")
    dirs = phases.TrialDirs(bundle=bundle, workspace=base / "workspace", home=base / "home", skills=base / "skills",
                            out=out, grading=base / "unused").for_manifest(m)
    pm = phase_manifest(m, phase, services=False)
    files = {protocol.CONTEXT_FILE: json.dumps(context, indent=2, ensure_ascii=False)} if context is not None else None
    _, box = phases.setup(dirs, pm, iso, env, seed=bundle / AUTHORING_SKILLS_DIR, files=files, agent=agent)
    with box:  # every process of the phase is gone before its skills are read
        ctx = phases.agent_context(dirs, pm, agent, model, phase_args(args, protocol.adapter_phase(phase)), env, {},
                                   box)
        ap = phases.run_agent(dirs, ctx, agent, box, timeout)
    if dirs.audit.is_dir() and not any(dirs.audit.iterdir()):
        dirs.audit.rmdir()  # no services in a skill-writing phase: nothing audited
    created = scan.created_skills(dirs.skills)
    kept = out / "skills"
    kept.mkdir(parents=True, exist_ok=True)
    for s in created:
        workspace.copy_tree(dirs.skills / s.name, kept / s.name)
    return kept, ap, created
