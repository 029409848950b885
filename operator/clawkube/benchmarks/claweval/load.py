"""Load a real CLAW-Eval task (`tasks/<id>/task.yaml`, schema in taskyaml.py) into the common `TaskSpec`.

Only the task spec is needed to load (so ../shared/benchmarks/claw-eval, which holds no code, loads all 300
tasks); running needs the benchmark's code, a checkout (checkout.py), found now when the task lives in one or
named by $CLAWKUBE_CLAWEVAL_CHECKOUT (`--claw-eval`); without one the task loads with a setup error that says
what to do (`validate` prints it; its trials end as setup errors, never retried).

What goes where (as the benchmark's sandboxed runner does it):
- agent workspace (/workspace): `sandbox_files` (else `environment.fixtures`) at their paths relative to the task
  folder, so `fixtures/gmail/inbox.json` is `/workspace/fixtures/gmail/inbox.json`. Files the benchmark's data
  does not hold (large videos published elsewhere) are left out, as its runner leaves them out, and listed in
  `extra["missing_files"]`;
- grading-only, added to the workspace after the agent: `sandbox_grader_files`, same paths;
- the agent sees the task's `tools` (served over MCP by the trial, see environment.py), never `tool_endpoints`;
- services, the simulated user, safety checks and expected actions are the benchmark's business: its mocks
  start per trial (environment.py) and its own grader applies its checks; none of them go to this project's
  generic service and evidence machinery;
- `reference_solution` is prose for humans, not a script: there is no oracle run for CLAW-Eval.
"""
from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Optional

from ...tasks import markdown
from ...tasks.field_errors import validated
from ...tasks.model import FileMapping, GraderSpec, TaskLoadError, TaskSpec
from .checkout import resolve_checkout
from .names import GRADER_FILE, NAME, TASK_FILE

if TYPE_CHECKING:
    from .taskyaml import TaskYaml

__all__ = ["NAME", "TASK_FILE", "GRADER_FILE", "load", "task_file"]


def task_file(path: Path) -> Path:
    """The task.yaml of a task folder (or the file itself)."""
    return path / TASK_FILE if path.is_dir() else path


def _relative(raw: str, yaml_path: Path, field: str) -> str:
    p = PurePosixPath(raw.strip().replace("\\", "/"))
    if not raw.strip() or p.is_absolute() or ".." in p.parts:
        raise TaskLoadError(yaml_path, field, f"{raw!r} must be a path inside the task folder")
    return str(p)


def _mappings(files: list[str], folder: Path, yaml_path: Path, field: str,
              missing: list[str]) -> list[FileMapping]:
    out = []
    for i, raw in enumerate(files):
        rel = _relative(raw, yaml_path, f"{field}[{i}]")
        src = folder / rel
        if src.exists():
            out.append(FileMapping(src=src.resolve(), dest=rel))
        else:
            missing.append(rel)
    return out


def load(path: Path) -> TaskSpec:
    yaml_path = task_file(Path(path)).resolve()
    folder = yaml_path.parent
    if not yaml_path.is_file():
        raise TaskLoadError(yaml_path, TASK_FILE, "missing")
    from .taskyaml import TaskYaml, consistency_problems  # the schema only when a CLAW-Eval task is loaded

    raw = markdown.load_yaml(yaml_path, markdown.read_text(yaml_path), TASK_FILE)
    t = validated(TaskYaml, raw, yaml_path)
    problems = consistency_problems(t)
    if problems:
        field, problem = problems[0]
        more = f" ({len(problems) - 1} more)" if len(problems) > 1 else ""
        raise TaskLoadError(yaml_path, field, problem + more)
    if not t.prompt.text.strip():
        raise TaskLoadError(yaml_path, "prompt.text", "empty")
    missing: list[str] = []
    workspace = _mappings(t.agent_files(), folder, yaml_path, "sandbox_files", missing)
    grading = _mappings(t.sandbox_grader_files, folder, yaml_path, "sandbox_grader_files", missing)
    for i, f in enumerate(t.local_grader_files):
        _relative(f, yaml_path, f"local_grader_files[{i}]")
    root = resolve_checkout(None, folder)
    code_dir = root / "tasks" / folder.name if root is not None else None
    grader_file = code_dir / GRADER_FILE if code_dir is not None else None
    extra: dict[str, Any] = {
        "task_dir": folder.name,
        "checkout": str(root) if root is not None else None,
        "missing_files": missing,
        "multi_turn": t.user_agent.enabled,
        "services": [s.name for s in t.services],
        # the checkout's task folder holds the grader and the answers: never for the agent
        "grading_only_paths": [str(code_dir)] if code_dir is not None and code_dir.is_dir() else [],
    }
    if grader_file is not None and grader_file.is_file():
        grader = GraderSpec(source_file=grader_file, entry="grade")
    else:
        grader = GraderSpec(inline_code=f"# graded by the CLAW-Eval checkout's tasks/{folder.name}/{GRADER_FILE}\n",
                            entry="grade")
    setup_error = None
    try:
        checkout_of(extra)
    except Exception as e:  # CodeMissing: the task loads, its trials end as a setup error saying what to do
        setup_error = str(e)
    data = dict(
        setup_error=setup_error,
        id=t.task_id, name=t.task_name or t.task_id, category=t.category or "uncategorized", format=NAME,
        source_path=folder, difficulty=t.difficulty, tags=t.tags, prompt=t.prompt.text,
        language=t.prompt.language, attachments=t.prompt.attachments,
        timeout_seconds=t.environment.timeout_seconds, max_turns=t.environment.max_turns,
        workspace=workspace, tools=[x.model_dump() for x in t.tools], judge_rubric=t.judge_rubric,
        grader=grader, grading_files=grading, env_snapshot_files=t.env_snapshot_files,
        env_snapshot_commands=t.env_snapshot_commands, extra=extra,
    )
    return validated(TaskSpec, data, yaml_path, _yaml_field)


def _yaml_field(f: str) -> str:
    head = f.split(".")[0].split("[")[0]
    return {"id": "task_id", "name": "task_name", "prompt": "prompt.text", "timeout_seconds":
            "environment.timeout_seconds", "workspace": "sandbox_files", "grading_files": "sandbox_grader_files"
            }.get(head, f)


def task_yaml(task_dir: Path) -> TaskYaml:
    """The task.yaml of a task folder (trial and grading side), validated."""
    from .taskyaml import TaskYaml

    p = Path(task_dir) / TASK_FILE
    return validated(TaskYaml, markdown.load_yaml(p, markdown.read_text(p), TASK_FILE), p)


def checkout_of(extra: dict[str, Any], explicit: Optional[str] = None) -> Path:
    """The run's checkout for a task (explicit setting / env first, then what load found), or TaskLoadError-like
    CodeMissing with what to do."""
    from .grading import CodeMissing
    from .checkout import missing_parts

    named = resolve_checkout(explicit)
    root = named or (Path(extra["checkout"]) if extra.get("checkout") else None)
    if root is None:
        raise CodeMissing("CLAW-Eval tasks run with the benchmark's own code (grader classes, the claw_eval "
                          "package, mock_services/), which these task files do not include: point the run at a "
                          "checkout of claw-eval/claw-eval (--claw-eval DIR, or $CLAWKUBE_CLAWEVAL_CHECKOUT), or "
                          "run the tasks from the checkout's tasks/ folder")
    gaps = missing_parts(root)
    if gaps:
        raise CodeMissing(f"{root} is not a CLAW-Eval checkout: missing {', '.join(gaps)}")
    if not (root / "tasks" / extra["task_dir"] / TASK_FILE).is_file():
        raise CodeMissing(f"the checkout {root} has no tasks/{extra['task_dir']}/{TASK_FILE}")
    return root
