"""The two halves of a task as deterministic tar.gz bundles.

- agent bundle: `task.json` (AgentView + warmup + services + skills), `workspace/...`, `skills/<name>/...`,
  `authoring-skills/<name>/...` (seeded into PreSkill/PostSkill skill-writing phases only),
  `services/fixtures/...` (the task's CLAW-Eval environment.fixtures: service data, read by the services and
  removed before the agent starts), and `reference_solution.sh` only for the oracle harness.
- grading bundle: `grading.json`, `grader.py`, `files/<dest>/...` (ground truth, sandbox_grader_files).

The same bytes are staged into ConfigMaps by the operator and extracted by the local runner, so both paths
run the same lifecycle. Bundles are byte-for-byte reproducible (sorted entries, zeroed times and owners),
so their hash can name the objects that hold them.
"""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from pathlib import Path
from typing import Any, Iterator

from pydantic import BaseModel

from ..benchmarks import registry
from ..contracts.manifests import AgentManifest, GradingManifest
from ..tasks.model import TaskSpec

AGENT_MANIFEST = "task.json"
GRADING_MANIFEST = "grading.json"
GRADER_FILE = "grader.py"
REFERENCE_FILE = "reference_solution.sh"
SERVICES_DIR = "services"
SERVICE_FIXTURES = f"{SERVICES_DIR}/fixtures"  # a fixture file keeps its name; a folder's contents are merged
AUTHORING_SKILLS_DIR = "authoring-skills"  # skills seeded into skill-writing phases only (Benchmark.authoring_skills)


def _walk(src: Path, dest: str) -> Iterator[tuple[str, Path]]:
    """(archive name, file) pairs for a file or folder copied to `dest`."""
    dest = dest.strip("/") or "."
    if src.is_file():
        name = src.name if dest == "." else dest
        yield name, src
        return
    for f in sorted(p for p in src.rglob("*") if p.is_file()):
        rel = f.relative_to(src).as_posix()
        yield (rel if dest == "." else f"{dest}/{rel}"), f


def _norm(name: str) -> str:
    parts = [p for p in Path(name).as_posix().split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise ValueError(f"bundle entry escapes its folder: {name}")
    return "/".join(parts)


class _Writer:
    def __init__(self) -> None:
        self.entries: dict[str, bytes] = {}

    def add_bytes(self, name: str, data: bytes) -> None:
        self.entries[_norm(name)] = data

    def add_tree(self, prefix: str, src: Path, dest: str) -> None:
        for name, f in _walk(src, dest):
            self.add_bytes(f"{prefix}/{name}", f.read_bytes())

    def bytes(self, compresslevel: int = 9) -> bytes:
        raw = io.BytesIO()
        with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for name in sorted(self.entries):
                data = self.entries[name]
                ti = tarfile.TarInfo(name)
                ti.size, ti.mtime, ti.mode = len(data), 0, 0o644
                tar.addfile(ti, io.BytesIO(data))
        out = io.BytesIO()
        with gzip.GzipFile(fileobj=out, mode="wb", mtime=0, compresslevel=compresslevel) as gz:
            gz.write(raw.getvalue())
        return out.getvalue()


def agent_bundle(task: TaskSpec, harness: str, compresslevel: int = 9) -> bytes:
    """The agent side of a task as a tar.gz (a ConfigMap on the cluster; `compresslevel` 0 where it is extracted
    at once, as the local runner does: the same bytes inside, no time spent compressing them)."""
    plugin = registry.get(task.format)
    layout = plugin.workspace_layout(task)
    w = _Writer()
    for m in layout.agent_files:
        w.add_tree("workspace", m.src, m.dest)
    for s in task.skills:
        w.add_tree("skills", s, s.name)
    authoring = plugin.authoring_skills(task)
    for s in authoring:
        w.add_tree(AUTHORING_SKILLS_DIR, s, s.name)
    for f in task.fixtures:
        w.add_tree(SERVICE_FIXTURES, f, ".")
    with_ref = harness == "oracle" and bool(task.reference_solution)
    if with_ref:
        w.add_bytes(REFERENCE_FILE, task.reference_solution.encode())
    manifest = AgentManifest(view=task.agent_view(), format=task.format, workspace_mount=layout.mount,
                             mounts=plugin.trial_mounts,
                             warmup=task.warmup, services=task.services, skills=[s.name for s in task.skills],
                             has_reference=with_ref, setup_error=task.setup_error, workspace_dirs=layout.dirs,
                             skills_path=layout.skills_path, authoring_skills=[s.name for s in authoring],
                             benchmark_data=plugin.agent_data(task))
    w.add_bytes(AGENT_MANIFEST, manifest.model_dump_json(indent=1).encode())
    return w.bytes(compresslevel)


def grading_bundle(task: TaskSpec, compresslevel: int = 9) -> bytes:
    plugin = registry.get(task.format)
    layout = plugin.workspace_layout(task)
    w = _Writer()
    g = task.grader
    code = g.inline_code if g.inline_code is not None else Path(g.source_file).read_text()
    w.add_bytes(GRADER_FILE, code.encode())
    dests: list[str] = []
    for m in layout.grading_files:
        w.add_tree("files", m.src, m.dest)
        dests.append(m.dest)
    manifest = GradingManifest(
        task_id=task.id, category=task.category, format=task.format, workspace_mount=layout.mount,
        mounts=plugin.trial_mounts,
        entry=g.entry, needs_judge=plugin.needs_judge(task), timeout_seconds=g.timeout_seconds,
        pass_threshold=task.pass_threshold, env=task.env,
        safety_checks=task.safety_checks, expected_actions=task.expected_actions, sub_problems=task.sub_problems,
        grading_weights=task.grading_weights, env_snapshot_files=task.env_snapshot_files,
        env_snapshot_commands=task.env_snapshot_commands, files=dests, benchmark_data=plugin.grading_data(task))
    w.add_bytes(GRADING_MANIFEST, manifest.model_dump_json(indent=1).encode())
    return w.bytes(compresslevel)


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def extract(data: bytes, dest: Path, only: str = "") -> None:
    """Unpack a bundle (refusing links and paths that leave `dest`); with `only`, just that folder's contents
    (e.g. "workspace": the workspace as handed over), into `dest` itself."""
    dest.mkdir(parents=True, exist_ok=True)
    prefix = f"{_norm(only)}/" if only else ""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for m in tar.getmembers():
            if not m.isfile():
                raise ValueError(f"bundle entry {m.name!r} is not a regular file")
            name = _norm(m.name)
            if not name.startswith(prefix):
                continue
            target = dest / name[len(prefix):]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(tar.extractfile(m).read())


def read_agent_manifest(folder: Path) -> AgentManifest:
    return AgentManifest.model_validate_json((folder / AGENT_MANIFEST).read_text())


def read_grading_manifest(folder: Path) -> GradingManifest:
    return GradingManifest.model_validate_json((folder / GRADING_MANIFEST).read_text())


def manifest_json(m: BaseModel) -> dict[str, Any]:
    return json.loads(m.model_dump_json())
