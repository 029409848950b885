"""WildClawBench task files, read the way the benchmark's own parser (`src/utils/task_parser.py`) reads them.

A task is `tasks/<category>/<id>.md`: YAML frontmatter between `---` lines (`id`, default the file stem;
`timeout_seconds`, default 120; `name`, `category`, `modality`), then `## <Title>` sections, split at every line
`## <text>` (fences are not special, as upstream). Sections used, each with one surrounding code fence stripped:
- `Prompt`: what the agent is asked; the agent gets it after the benchmark's own preamble (PREAMBLE);
- `Workspace Path` (required): `workspace/<category>/<task>`, relative to the benchmark's root (the folder holding
  `tasks/`), holding `exec/` (copied to /tmp_workspace), `tmp/` (copied to /tmp_workspace/tmp) and `gt/` (ground
  truth, added for grading only). These folders are a separate Hugging Face download (DOWNLOAD): a task whose
  folder is missing still loads, with `setup_error` set, so `validate` says what to download and a run records
  each of its trials as a setup error, never retried;
- `Automated Checks`: the grader, Python defining `grade(transcript, workspace_path)`;
- `Skills`: one name per line, a folder under the benchmark's `skills/`, copied to the agent's skills folder
  under its last path part (a missing one is a warning, as upstream, and the agent runs without it);
- `Env`: variable names handed to the task (upstream: to the container and to the grader);
- `Warmup`: shell lines run one by one as root in the task's sandbox before the agent (blank lines and `#`
  comments skipped).
This project's own sample tasks add `Reference Solution` (```bash, for the oracle agent) and name workspaces
relative to their repository; both layouts load.
"""
from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Any, Optional

import yaml

from ...tasks import paths
from ...tasks.field_errors import validated
from ...tasks.grader_code import check_grader
from ...tasks.model import FileMapping, GraderSpec, TaskLoadError, TaskSpec

NAME = "wildclawbench"  # the format id (TaskSpec.format)

DOWNLOAD = "hf download internlm/WildClawBench workspace --repo-type dataset --local-dir {root}"
DEFAULT_TIMEOUT = 120  # upstream's default when the frontmatter has no timeout_seconds

# The benchmark runner's preamble before every task prompt (eval/run_batch.py, run_single_task), so the agent
# reads exactly what it reads under the benchmark's own runner.
PREAMBLE = ("You are an expert in a restricted, non-interactive environment. Solve the task efficiently before the "
            "timeout ({timeout}s). Run all processes in the foreground without user input or background services. "
            "Provide a complete, functional solution in a single pass with no placeholders. \n")

_FRONTMATTER = re.compile(r"^---\s*\n(.*?)\n---\s*\n(.*)", re.DOTALL)
_HEADER = re.compile(r"^##\s+(.+)$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SECTION_OF_FIELD = {"prompt": "Prompt", "workspace": "Workspace Path", "skills": "Skills", "env": "Env",
                    "warmup": "Warmup", "reference_solution": "Reference Solution", "grader": "Automated Checks",
                    "timeout_seconds": "timeout_seconds", "id": "id"}


def split_sections(body: str) -> dict[str, str]:
    """`## Title` -> text up to the next such line (stripped); a repeated title keeps its last text."""
    sections: dict[str, str] = {}
    current: Optional[str] = None
    lines: list[str] = []
    for line in body.split("\n"):
        m = _HEADER.match(line)
        if m:
            if current is not None:
                sections[current] = "\n".join(lines).strip()
            current, lines = m.group(1), []
        else:
            lines.append(line)
    if current is not None:
        sections[current] = "\n".join(lines).strip()
    return sections


def strip_codeblock(raw: str) -> str:
    s = re.sub(r"^```[^\n]*\n?", "", raw.strip())
    return re.sub(r"\n?```$", "", s).strip()


def plain(item: str) -> str:
    """A path as this project's own sample tasks may write it: `- `a/b``; the benchmark's tasks write `a/b`."""
    return re.sub(r"^[-*+]\s+", "", item.strip()).strip("`").strip()


def lines_of(text: str) -> list[str]:
    """Non-empty lines that are not `#` comments, stripped (Env, Warmup)."""
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]


def parse(path: Path) -> tuple[dict[str, Any], dict[str, str]]:
    """(frontmatter, sections) of a task file; TaskLoadError when there is no frontmatter."""
    text = path.read_text(encoding="utf-8")
    m = _FRONTMATTER.match(text)
    if not m:
        problem = "no closing '---'" if text.startswith("---") else "no YAML frontmatter (between '---' lines)"
        raise TaskLoadError(path, "frontmatter", problem)
    try:
        meta = yaml.safe_load(m.group(1))
    except yaml.YAMLError as e:
        raise TaskLoadError(path, "frontmatter", f"invalid YAML: {e}") from None
    if not isinstance(meta, dict):
        raise TaskLoadError(path, "frontmatter", f"expected a mapping, got {type(meta).__name__}")
    return meta, split_sections(m.group(2))


def benchmark_root(task_file: Path) -> Path:
    """The folder holding `tasks/` (the benchmark's repository root), or the task file's folder."""
    for parent in task_file.parents:
        if parent.name == "tasks":
            return parent.parent
    return task_file.parent


def is_template(path: Path) -> bool:
    """Upstream runs `tasks/<category>/*task_*.md`; its `tasks/task0_template.md` is the annotated template."""
    if "template" in path.stem.lower():
        return True
    try:
        meta, _ = parse(path)
    except (TaskLoadError, OSError, UnicodeDecodeError):
        return False
    return "<" in str(meta.get("id", ""))  # the template's placeholder id: <category>_task_<N>_<short_name>


def resolve_workspace(raw: str, task_file: Path) -> tuple[Optional[Path], Path]:
    """(the folder if it exists, where the benchmark's layout expects it)."""
    p = Path(raw).expanduser()
    root = benchmark_root(task_file)
    expected = p if p.is_absolute() else root / p
    if p.is_absolute():
        return (p.resolve() if p.is_dir() else None), expected
    for base in [root, *paths.search_bases(task_file.parent)]:
        if (base / p).is_dir():
            return (base / p).resolve(), expected
    return None, expected


def missing_workspace_message(raw: str, expected: Path, task_file: Path) -> str:
    root = benchmark_root(task_file)
    return (f"workspace folder {expected} is missing: WildClawBench's task workspaces ({raw} with exec/, tmp/, "
            f"gt/) are a separate Hugging Face download; get them with `{DOWNLOAD.format(root=root)}`")


def workspace(folder: Path) -> tuple[list[FileMapping], list[FileMapping]]:
    """(agent files, grading files): tmp/ -> /tmp_workspace/tmp, then exec/ -> /tmp_workspace (upstream's order:
    exec/ is copied over tmp/); gt/ -> /tmp_workspace/gt for grading only."""
    agent = [FileMapping(src=folder / d, dest=dest) for d, dest in (("tmp", "tmp"), ("exec", "."))
             if (folder / d).is_dir()]
    grading = [FileMapping(src=folder / "gt", dest="gt")] if (folder / "gt").is_dir() else []
    return agent, grading


def skills(text: str, task_file: Path) -> tuple[list[Path], list[str]]:
    """(skill folders, warnings): each line a folder under the benchmark's skills/ (this project's samples may name
    one relative to their repository); copied under its last path part; duplicates and missing ones skipped."""
    root = benchmark_root(task_file)
    bases = [root / "skills", *paths.search_bases(task_file.parent)]
    found: list[Path] = []
    warnings: list[str] = []
    seen: set[str] = set()
    for line in (plain(ln) for ln in text.splitlines()):
        if not line or line.lower() in ("none", "n/a", "-"):
            continue
        rel = line.replace("\\", "/").strip("/")
        dest = PurePosixPath(rel).name
        if not dest or dest in (".", ".."):
            warnings.append(f"skill {line!r} is not a folder name: skipped")
            continue
        if dest in seen:
            warnings.append(f"skill {line!r}: another skill is already copied as {dest!r}: skipped")
            continue
        seen.add(dest)
        hit = next((b / rel for b in bases if (b / rel).is_dir()), None)
        if hit is None:
            warnings.append(f"skill {line!r} not found under {root / 'skills'}: the agent runs without it "
                            f"(upstream only warns, too)")
            continue
        found.append(hit.resolve())
    return found, warnings


def env_names(text: str, path: Path) -> list[str]:
    names = [plain(n) for n in lines_of(text)]
    for n in names:
        if not _ENV_NAME.match(n):
            raise TaskLoadError(path, "Env", f"'{n}' is not an environment variable name")
    return names


def grader(sections: dict[str, str], path: Path) -> GraderSpec:
    if "Automated Checks" not in sections:
        raise TaskLoadError(path, "Automated Checks", "missing section '## Automated Checks'")
    if not sections["Automated Checks"].lstrip().startswith("```"):
        raise TaskLoadError(path, "Automated Checks", "no fenced ```python code block")
    code = strip_codeblock(sections["Automated Checks"])
    check_grader(code, path, "Automated Checks", first_line=code_line(path, "Automated Checks"))
    return GraderSpec(inline_code=code)


def prompt_of(sections: dict[str, str], path: Path) -> str:
    if "Prompt" not in sections:
        raise TaskLoadError(path, "Prompt", "missing section '## Prompt'")
    if not sections["Prompt"].strip():
        raise TaskLoadError(path, "Prompt", "section is empty")
    return sections["Prompt"].strip()


def reference_solution(sections: dict[str, str], path: Path) -> Optional[str]:
    if "Reference Solution" not in sections:
        return None
    code = strip_codeblock(sections["Reference Solution"])
    if not code:
        raise TaskLoadError(path, "Reference Solution", "section is empty")
    return code


def timeout_of(meta: dict[str, Any], path: Path) -> int:
    try:
        return int(meta.get("timeout_seconds", DEFAULT_TIMEOUT))
    except (TypeError, ValueError):
        raise TaskLoadError(path, "timeout_seconds",
                            f"not a valid integer: {meta.get('timeout_seconds')!r}") from None


def code_line(path: Path, title: str) -> int:
    """The file line (1-based) where the code of the last `## title` section starts (after its fence)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    heads = [i for i, ln in enumerate(lines) if (m := _HEADER.match(ln)) and m.group(1) == title]
    if not heads:
        return 1
    for i in range(heads[-1] + 1, len(lines)):
        if lines[i].strip():
            return i + 2 if lines[i].strip().startswith("```") else i + 1
    return heads[-1] + 1


def load(path: Path) -> TaskSpec:
    path = Path(path).resolve()
    meta, sections = parse(path)
    raw_ws = plain(strip_codeblock(sections.get("Workspace Path", "")))
    if not raw_ws:
        raise TaskLoadError(path, "Workspace Path", "missing section '## Workspace Path'")
    folder, expected = resolve_workspace(raw_ws, path)
    agent_files, grading_files = workspace(folder) if folder else ([], [])
    skill_dirs, warnings = skills(strip_codeblock(sections.get("Skills", "")), path)
    timeout = timeout_of(meta, path)
    prompt = prompt_of(sections, path)
    task_id = str(meta.get("id", path.stem))
    data = dict(
        id=task_id, name=str(meta.get("name") or task_id), category=str(meta.get("category") or path.parent.name),
        format=NAME, source_path=path, modality=meta.get("modality"), tags=meta.get("tags") or [],
        difficulty=meta.get("difficulty"), prompt=PREAMBLE.format(timeout=timeout) + prompt,
        timeout_seconds=timeout, workspace=agent_files, skills=skill_dirs,
        env=env_names(strip_codeblock(sections.get("Env", "")), path),
        warmup=lines_of(strip_codeblock(sections.get("Warmup", ""))),
        expected_behavior=sections.get("Expected Behavior", ""), grading_criteria=sections.get("Grading Criteria", ""),
        grader=grader(sections, path), grading_files=grading_files,
        reference_solution=reference_solution(sections, path), load_warnings=warnings,
        setup_error=None if folder else missing_workspace_message(raw_ws, expected, path),
    )
    return validated(TaskSpec, data, path, lambda f: SECTION_OF_FIELD.get(f.split(".")[0].split("[")[0], f))


