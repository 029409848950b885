"""Task staging: task source -> files on disk -> TaskSpecs -> agent and grading bundles (one pair per task).

Sources: `inline` ([{name, content}]), `configMap` (keys are file names; `__` in a key stands for `/`,
since ConfigMap keys cannot hold slashes; binaryData supported), `s3Prefix` (every object under the
prefix), `path` (a folder on the operator's own filesystem, e.g. tasks baked into its image).
`path` is a folder under the operator's CLAWKUBE_TASKS_ROOT (e.g. the sample tasks baked into its image);
without that setting `path` sources are refused. `pvc` is not supported by this operator (it would need a
staging pod): the run gets TasksLoaded=False with reason UnsupportedSource.
A task may only bundle files inside its source (inline/configMap/s3: the staged copy; path: the tasks root).
"""
from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Callable, Optional

from ..runspec import BenchmarkRunSpec, TaskSource
from .model import TaskRef
from .names import bundle_name

MAX_BUNDLE_BYTES = 1_000_000  # a ConfigMap holds at most 1 MiB (base64 inflates binaryData by 4/3 on the wire)

ReadConfigMap = Callable[[str], dict[str, bytes]]  # name -> {key: content}
ReadS3Prefix = Callable[[str], dict[str, bytes]]  # s3://bucket/prefix -> {relative path: content}


class StagingError(Exception):
    def __init__(self, reason: str, message: str):
        self.reason, self.message = reason, message
        super().__init__(f"{reason}: {message}")


@dataclass
class StagedTask:
    ref: TaskRef
    agent_bundle: bytes
    grading_bundle: bytes


@dataclass
class StageResult:
    tasks: list[StagedTask] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # per-task problems (the other tasks still run)


def _safe_rel(name: str, where: str) -> PurePosixPath:
    rel = PurePosixPath(name)
    if not name or rel.is_absolute() or ".." in rel.parts:
        raise StagingError("BadSource", f"{where}: file name {name!r} must be a relative path without '..'")
    return rel


def materialize(source: TaskSource, dest: Path, read_configmap: ReadConfigMap,
                read_s3: ReadS3Prefix, tasks_root: Optional[Path] = None) -> tuple[Path, Path]:
    """Write the source's files under `dest`; returns (folder to load tasks from, folder tasks must stay in)."""
    chosen = [n for n in ("inline", "config_map", "s3_prefix", "pvc", "path") if getattr(source, n)]
    if chosen == ["pvc", "path"] or chosen == ["pvc"]:
        raise StagingError("UnsupportedSource", "spec.tasks.pvc is not supported by the operator yet: "
                                                "put the tasks in a ConfigMap, an S3 prefix or inline")
    if len(chosen) != 1:
        raise StagingError("BadSource", f"spec.tasks must set exactly one of inline, configMap, s3Prefix, path "
                                        f"(got: {', '.join(chosen) or 'none'})")
    kind = chosen[0]
    if kind == "path":
        if tasks_root is None:
            raise StagingError("UnsupportedSource", "spec.tasks.path needs the operator setting CLAWKUBE_TASKS_ROOT "
                                                    "(the folder path sources are read from)")
        allowed = tasks_root.resolve()
        root = (allowed / source.path).resolve()
        if not root.is_relative_to(allowed):
            raise StagingError("BadSource", f"spec.tasks.path {source.path!r} leaves the tasks root {allowed}")
        if not root.exists():
            raise StagingError("BadSource", f"spec.tasks.path {source.path!r} does not exist under {allowed}")
        return root, allowed
    files: dict[str, bytes] = {}
    if kind == "inline":
        for i, item in enumerate(source.inline):
            if not isinstance(item.get("name"), str) or not isinstance(item.get("content"), str):
                raise StagingError("BadSource", f"spec.tasks.inline[{i}] needs string fields 'name' and 'content'")
            files[item["name"]] = item["content"].encode()
    elif kind == "config_map":
        files = {k.replace("__", "/"): v for k, v in read_configmap(source.config_map).items()}
    else:
        files = read_s3(source.s3_prefix)
    for name, data in files.items():
        target = dest / _safe_rel(name, f"spec.tasks.{kind}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return dest, dest


def _outside(task, root: Path) -> list[Path]:
    """Files a task would bundle that lie outside the staged source (e.g. an absolute or '../' workspace path
    in a CR could otherwise copy the operator's own files, such as its service-account token, into a bundle)."""
    root = root.resolve()
    paths = [m.src for m in task.workspace] + list(task.skills) + task.grading_only_paths()
    return [p for p in paths if not Path(p).resolve().is_relative_to(root)]


def stage(run: str, spec: BenchmarkRunSpec, read_configmap: ReadConfigMap, read_s3: ReadS3Prefix,
          tasks_root: Optional[Path] = None, workdir: Optional[Path] = None) -> StageResult:
    """Load and select the run's tasks and build both bundles of each. Raises StagingError if none is usable."""
    from ..lifecycle.bundle import agent_bundle, grading_bundle
    from ..benchmarks import registry
    from ..benchmarks.loader import load_tasks, select

    with tempfile.TemporaryDirectory(prefix=f"clawkube-stage-{run}-", dir=workdir) as tmp:
        root, allowed = materialize(spec.tasks, Path(tmp), read_configmap, read_s3, tasks_root)
        report = load_tasks(root)
        result = StageResult(errors=[str(e) for e in report.errors])
        try:
            tasks = select(report.tasks, spec.selector)
        except ValueError as e:
            raise StagingError("BadSelector", str(e)) from None
        for task in tasks:
            try:
                task = registry.get(task.format).cluster_task(task, spec)
            except (KeyError, ValueError) as e:
                result.errors.append(f"{task.id}: {e}")
                continue
            outside = _outside(task, allowed)
            if outside:
                result.errors.append(f"{task.source_path}: refers to files outside the task source: "
                                     + ", ".join(str(p) for p in outside[:3]))
                continue
            try:
                agent = agent_bundle(task, spec.agent.harness)
                grading = grading_bundle(task)
            except (OSError, ValueError) as e:
                result.errors.append(f"{task.source_path}: bundle: {e}")
                continue
            big = [n for n, b in (("agent", agent), ("grading", grading)) if len(b) > MAX_BUNDLE_BYTES]
            if big:
                result.errors.append(f"{task.id}: {' and '.join(big)} bundle larger than {MAX_BUNDLE_BYTES} "
                                     "bytes (too big for a ConfigMap)")
                continue
            digest = hashlib.sha256(agent + b"\0" + grading).hexdigest()[:16]
            ref = TaskRef(id=task.id, category=task.category, format=task.format, content_hash=digest,
                          agent_bundle=bundle_name(run, task.id, "agent"),
                          grading_bundle=bundle_name(run, task.id, "grading"),
                          timeout_seconds=spec.timeout_seconds or task.timeout_seconds,
                          grader_timeout_seconds=task.grader.timeout_seconds, services=task.services,
                          warmup=bool(task.warmup))
            result.tasks.append(StagedTask(ref, agent, grading))
    if not result.tasks:
        detail = "; ".join(result.errors[:5]) or "the source holds no task files matching the selector"
        raise StagingError("NoTasks", f"no task could be staged: {detail}")
    return result
