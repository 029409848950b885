"""Every malformed task file under tests/data/tasks_malformed/ fails with an error naming file, field, problem."""
from __future__ import annotations

from pathlib import Path

import pytest

from clawkube.benchmarks.loader import load_task, load_tasks
from clawkube.tasks.model import TaskLoadError

DATA = Path(__file__).resolve().parent / "data" / "tasks_malformed"

# file (relative to DATA) -> (name of the file the error must point at, field, problem substring)
CASES = {
    "markdown/wild_no_frontmatter.md": (None, "frontmatter", "no YAML frontmatter"),
    "markdown/wild_bad_yaml.md": (None, "frontmatter", "invalid YAML: line 4"),
    "markdown/wild_unclosed_frontmatter.md": (None, "frontmatter", "no closing '---'"),
    "markdown/wild_bad_timeout.md": (None, "timeout_seconds", "valid integer"),
    "markdown/wild_bad_id.md": (None, "id", "pattern"),
    "markdown/wild_missing_prompt.md": (None, "Prompt", "missing section '## Prompt'"),
    "markdown/wild_empty_prompt.md": (None, "Prompt", "empty"),
    "markdown/wild_missing_checks.md": (None, "Automated Checks", "missing section"),
    "markdown/wild_checks_no_code_block.md": (None, "Automated Checks", "no fenced ```python code block"),
    "markdown/wild_grader_syntax_error.md": (None, "Automated Checks", "does not compile: '{' was never closed (line 15)"),
    "markdown/wild_grader_no_grade.md": (None, "Automated Checks", "defines no top-level function 'grade'"),
    "markdown/wild_grader_unknown_arg.md": (None, "Automated Checks", "requires ['answer_key']"),
    "markdown/wild_missing_workspace_section.md": (None, "Workspace Path", "missing section"),
    "markdown/wild_bad_env_name.md": (None, "Env", "'MY-TOKEN' is not an environment variable name"),
    "markdown/evo_sub_count_mismatch.md": (None, "sub_problems", "says 3 sub-problems but the file has 2"),
    "markdown/evo_sub_bad_heading.md": (None, "Sub-Problems", "'### Part A' (line 14) is not"),
    "markdown/evo_sub_out_of_order.md": (None, "Sub-Problems", "should be Sub-Problem 2"),
    "markdown/evo_bad_grading_type.md": (None, "grading_type", "'automated', 'hybrid' or 'llm_judge'"),
    "markdown/evo_workspace_file_missing.md": (None, "workspace_files[0]", "does not exist"),
    "markdown/evo_workspace_file_bad_dest.md": (None, "workspace_files[0]", "must stay inside the target folder"),
    "markdown/evo_workspace_file_bad_entry.md": (None, "workspace_files[0]", "must be a path or a mapping"),
    "markdown/evo_negative_weight.md": (None, "grading_weights", "must be >= 0"),
    "markdown/evo_weights_not_mapping.md": (None, "grading_weights", "valid dictionary"),
    "claw-eval/bad_yaml": ("task.yaml", "task.yaml", "invalid YAML: line 4"),
    "claw-eval/not_a_mapping": ("task.yaml", "task.yaml", "must be a YAML mapping, got list"),
    "claw-eval/missing_task_id": ("task.yaml", "task_id", "Field required"),
    "claw-eval/missing_task_name": ("task.yaml", "task_name", "Field required"),
    "claw-eval/missing_prompt": ("task.yaml", "prompt", "Field required"),
    "claw-eval/tags_not_list": ("task.yaml", "tags", "valid list"),
    "claw-eval/bad_max_turns": ("task.yaml", "environment.max_turns", "valid integer"),
    "claw-eval/missing_health_check": ("task.yaml", "services[0].health_check", "Field required"),
    "claw-eval/bad_port": ("task.yaml", "services[0].port", "99999 is not a TCP port"),
    "claw-eval/empty_command": ("task.yaml", "services[0].command", "empty"),
    "claw-eval/endpoint_unknown_tool": ("task.yaml", "tool_endpoints[0].tool_name", "no tool named 'gmail_send'"),
    "claw-eval/endpoint_wrong_port": ("task.yaml", "tool_endpoints[0].url", "port 9199 is not the port of any service"),
    "claw-eval/sandbox_file_escapes": ("task.yaml", "sandbox_files[0]", "must be a path inside the task folder"),
    "claw-eval/bad_check_field": ("task.yaml", "scoring_components[0].check.tool", "Extra inputs are not permitted"),
}


@pytest.mark.parametrize("rel", sorted(CASES))
def test_malformed_task_names_file_field_problem(rel):
    target = DATA / rel
    file_name, field, problem = CASES[rel]
    with pytest.raises(TaskLoadError) as info:
        load_task(target)
    err = info.value
    assert err.path.name == (file_name or target.name)
    assert err.field == field
    assert problem in err.problem
    assert str(err.path) in str(err) and field in str(err)


def test_every_malformed_file_has_a_case():
    found = {str(p.relative_to(DATA)) for p in (DATA / "markdown").glob("*.md")}
    found |= {str(p.relative_to(DATA)) for p in (DATA / "claw-eval").iterdir() if p.is_dir()}
    assert found == set(CASES)


def test_load_tasks_records_every_malformed_file_and_goes_on():
    report = load_tasks(DATA)
    assert report.tasks == []
    by_file = {}
    for e in report.errors:
        rel = e.path.relative_to(DATA)
        key = str(rel.parent if rel.name in ("task.yaml", "grader.py") else rel)
        by_file[key] = e
    assert set(by_file) == set(CASES)
    for rel, (_, field, problem) in CASES.items():
        assert (by_file[rel].field, problem in by_file[rel].problem) == (field, True), rel
