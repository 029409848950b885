"""CLAW-Eval: a folder per task holding `task.yaml`, `grader.py` and `fixtures/`.

task.yaml: `task_id, task_name, category, difficulty, tags, prompt{text, language, attachments}, tools[],
tool_endpoints[], environment{timeout_seconds, max_turns, fixtures}, services[{name, command, port,
health_check, reset_endpoint, env}], safety_checks[], expected_actions[], judge_rubric, reference_solution,
sandbox_files, sandbox_grader_files, env_snapshot_files, env_snapshot_commands`. Unknown keys are ignored.
- `prompt` may also be a plain string; `command` a string (shlex-split) or a list;
- `reference_solution`: inline shell text, or the name of a file in the task folder (read);
- `sandbox_files` -> workspace, `sandbox_grader_files` -> grading files (injected only after the agent);
  entries are paths or {source, dest} mappings (paths.mapping).
"""
from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any, Optional, Union

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator

from ...tasks import markdown, paths
from ...tasks.grader_code import check_grader
from ...tasks.model import GraderSpec, ServiceSpec, TaskLoadError, TaskSpec
from ...tasks.field_errors import validated

NAME = "claw-eval"  # the format id (TaskSpec.format)

TASK_FILE = "task.yaml"
GRADER_FILE = "grader.py"


class _Loose(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Prompt(_Loose):
    text: str = Field(min_length=1)
    language: Optional[str] = None
    attachments: list[str] = Field(default_factory=list)


class Environment(_Loose):
    timeout_seconds: int = Field(default=600, ge=1)
    max_turns: Optional[int] = Field(default=None, ge=1)
    fixtures: list[str] = Field(default_factory=list)


class Service(_Loose):
    name: str = Field(min_length=1)
    command: Union[str, list[str]]
    port: int = Field(ge=1, le=65535)
    health_check: Optional[str] = None
    reset_endpoint: Optional[str] = None
    env: dict[str, Union[str, int, float, bool]] = Field(default_factory=dict)

    @field_validator("command")
    @classmethod
    def _argv(cls, v: Union[str, list[str]]) -> list[str]:
        argv = shlex.split(v) if isinstance(v, str) else v
        if not argv:
            raise ValueError("command is empty")
        return argv

    def spec(self) -> ServiceSpec:
        env = {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in self.env.items()}
        return ServiceSpec(name=self.name, command=list(self.command), port=self.port,
                           health_check=self.health_check, reset_endpoint=self.reset_endpoint, env=env)


class TaskYaml(_Loose):
    task_id: str = Field(min_length=1)
    task_name: Optional[str] = None
    category: str = "uncategorized"
    difficulty: Optional[str] = None
    tags: list[str] = Field(default_factory=list)
    prompt: Union[str, Prompt]
    tools: list[Any] = Field(default_factory=list)
    tool_endpoints: list[Any] = Field(default_factory=list)
    environment: Environment = Field(default_factory=Environment)
    services: list[Service] = Field(default_factory=list)
    safety_checks: list[Any] = Field(default_factory=list)
    expected_actions: list[Any] = Field(default_factory=list)
    judge_rubric: Any = ""
    reference_solution: Optional[str] = None
    sandbox_files: list[Any] = Field(default_factory=list)
    sandbox_grader_files: list[Any] = Field(default_factory=list)
    env_snapshot_files: list[str] = Field(default_factory=list)
    env_snapshot_commands: list[str] = Field(default_factory=list)

    @field_validator("tags", "tools", "tool_endpoints", "services", "safety_checks", "expected_actions",
                     "sandbox_files", "sandbox_grader_files", "env_snapshot_files", "env_snapshot_commands",
                     mode="before")
    @classmethod
    def _null_is_empty(cls, v: Any) -> Any:
        return [] if v is None else v

    def prompt_obj(self) -> Prompt:
        return Prompt(text=self.prompt) if isinstance(self.prompt, str) else self.prompt


def task_file(path: Path) -> Path:
    """The task.yaml of a task folder (or the file itself)."""
    return path / TASK_FILE if path.is_dir() else path


def reference_solution(folder: Path, yaml_path: Path, value: Optional[str]) -> Optional[str]:
    """Inline shell text, or the contents of the named file in the task folder."""
    if value is None or not value.strip():
        return None
    v = value.strip()
    if "\n" not in v and (folder / v).is_file():
        return markdown.read_text(folder / v)
    if "\n" not in v and " " not in v and v.endswith((".sh", ".bash")):
        raise TaskLoadError(yaml_path, "reference_solution", f"file '{v}' does not exist in {folder}")
    return value if value.endswith("\n") else value + "\n"


def grader(folder: Path) -> GraderSpec:
    src = folder / GRADER_FILE
    if not src.is_file():
        raise TaskLoadError(folder, GRADER_FILE, f"missing: a CLAW-Eval task folder needs {GRADER_FILE}")
    check_grader(markdown.read_text(src), src, "grade")
    return GraderSpec(source_file=src.resolve())


def load(path: Path) -> TaskSpec:
    yaml_path = task_file(Path(path)).resolve()
    folder = yaml_path.parent
    if not yaml_path.is_file():
        raise TaskLoadError(yaml_path, TASK_FILE, "missing")
    raw = markdown.load_yaml(yaml_path, markdown.read_text(yaml_path), TASK_FILE)
    t = validated(TaskYaml, raw, yaml_path)
    prompt = t.prompt_obj()
    bases = paths.search_bases(folder)
    fixtures = [paths.resolve(f, folder, yaml_path, f"environment.fixtures[{i}]", bases)
                for i, f in enumerate(t.environment.fixtures)]
    rubric = t.judge_rubric if isinstance(t.judge_rubric, str) else yaml.safe_dump(t.judge_rubric, sort_keys=False)
    data = dict(
        id=t.task_id, name=t.task_name or t.task_id, category=t.category, format=NAME,
        source_path=folder, difficulty=t.difficulty, tags=t.tags,
        prompt=prompt.text, language=prompt.language, attachments=prompt.attachments,
        timeout_seconds=t.environment.timeout_seconds, max_turns=t.environment.max_turns,
        workspace=paths.mappings(t.sandbox_files, folder, yaml_path, "sandbox_files"),
        services=[s.spec() for s in t.services], fixtures=fixtures, tools=t.tools, tool_endpoints=t.tool_endpoints,
        judge_rubric=rubric, grader=grader(folder),
        grading_files=paths.mappings(t.sandbox_grader_files, folder, yaml_path, "sandbox_grader_files"),
        reference_solution=reference_solution(folder, yaml_path, t.reference_solution),
        safety_checks=t.safety_checks, expected_actions=t.expected_actions,
        env_snapshot_files=t.env_snapshot_files, env_snapshot_commands=t.env_snapshot_commands,
    )
    return validated(TaskSpec, data, yaml_path, _yaml_field)


def _yaml_field(f: str) -> str:
    head = f.split(".")[0].split("[")[0]
    return {"id": "task_id", "name": "task_name", "prompt": "prompt.text", "timeout_seconds":
            "environment.timeout_seconds", "workspace": "sandbox_files", "grading_files": "sandbox_grader_files"
            }.get(head, f)
