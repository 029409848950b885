"""What keeps grading-only material and the judge's key out of a CLAW-Eval agent pod's sidecar (no checkout needed):
- the split of a checkout into the services and grading layers of the CLAW-Eval images
  (benchmarks/claweval/imagefiles.py): graders and grading-only files never in the services layer, everything else
  there once; no VCS or virtual-environment files in either (a made-up checkout here);
- the mock services' environment: without the judge's variables, which the sidecar holds for the simulated user."""
from __future__ import annotations

from pathlib import Path

import pytest

from clawkube.benchmarks.claweval.imagefiles import main, split

TASK = """task_id: T1
task_name: t
prompt: {text: hi}
sandbox_files: [fixtures/in.txt]
sandbox_grader_files: [fixtures/gt.json, fixtures/answers/]
local_grader_files: [fixtures/check.py]
"""


def _checkout(root: Path) -> Path:
    files = {
        "src/claw_eval/__init__.py": "", "src/claw_eval/graders/base.py": "class AbstractGrader: ...",
        "mock_services/gmail/server.py": "# mock", "pyproject.toml": "[project]\nname='claw-eval'\n",
        "tasks/T1/task.yaml": TASK, "tasks/T1/grader.py": "# grader", "tasks/T1/fixtures/in.txt": "input",
        "tasks/T1/fixtures/gmail/inbox.json": "[]", "tasks/T1/fixtures/gt.json": "{}",
        "tasks/T1/fixtures/answers/a.txt": "42", "tasks/T1/fixtures/check.py": "# check",
        "tasks/T2/task.yaml": "task_id: [broken", "tasks/T2/fixtures/x.json": "{}",
        ".git/HEAD": "ref", ".venv/pyvenv.cfg": "home=/x", ".venv/lib/x.py": "", "env2/pyvenv.cfg": "x",
        "src/claw_eval/__pycache__/x.cpython-311.pyc": "", "mock_services/gmail/old.pyc": "",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _files(d: Path) -> set[str]:
    return {p.relative_to(d).as_posix() for p in d.rglob("*") if p.is_file()}


def test_graders_and_grading_files_only_in_the_grading_layer(tmp_path):
    root = _checkout(tmp_path / "ce")
    n_s, n_g = split(root, tmp_path / "s", tmp_path / "g", "/opt/claw-eval")
    services, grading = _files(tmp_path / "s" / "opt/claw-eval"), _files(tmp_path / "g" / "opt/claw-eval")
    assert services == {"src/claw_eval/__init__.py", "src/claw_eval/graders/base.py", "mock_services/gmail/server.py",
                        "pyproject.toml", "tasks/T1/task.yaml", "tasks/T1/fixtures/in.txt",
                        "tasks/T1/fixtures/gmail/inbox.json"}
    # a task.yaml that does not parse: its whole folder is kept out of the services layer
    assert grading == {"tasks/T1/grader.py", "tasks/T1/fixtures/gt.json", "tasks/T1/fixtures/answers/a.txt",
                       "tasks/T1/fixtures/check.py", "tasks/T2/task.yaml", "tasks/T2/fixtures/x.json"}
    assert (n_s, n_g) == (len(services), len(grading))
    assert not _files(tmp_path / "s") - {f"opt/claw-eval/{f}" for f in services}


def test_not_a_checkout_is_refused(tmp_path, capsys):
    (tmp_path / "x").mkdir()
    assert main([str(tmp_path / "x"), str(tmp_path / "s"), str(tmp_path / "g")]) == 2
    assert "not a CLAW-Eval checkout" in capsys.readouterr().err
    with pytest.raises(ValueError, match="missing src/claw_eval/__init__.py, mock_services, tasks"):
        split(tmp_path / "x", tmp_path / "s", tmp_path / "g")


def test_mock_services_never_get_the_judge_key():
    """In the svc-claweval sidecar the judge's variables are there for the simulated user; the mocks started
    beside it get the environment without them (and without proxy variables), plus the task's env and PORT."""
    from clawkube.benchmarks.claweval.mocks import service_env
    from clawkube.benchmarks.claweval.taskyaml import Service
    from clawkube.contracts import judge

    svc = Service.model_validate({"name": "gmail", "command": "python mock_services/gmail/server.py",
                                  "port": 9100, "health_check": "http://localhost:9100/gmail/health",
                                  "env": {"GMAIL_FIXTURES": "tasks/T1/fixtures/gmail/inbox.json"}})
    base = {"PATH": "/usr/bin", judge.KEY_ENV: "secret", judge.MODEL_ENV: "j", judge.BASE_URL_ENV: "http://j",
            "HTTP_PROXY": "http://proxy:3128"}
    env = service_env(svc, 41000, base)
    assert env["PORT"] == "41000" and env["GMAIL_FIXTURES"].endswith("inbox.json") and env["PATH"] == "/usr/bin"
    assert not {judge.KEY_ENV, judge.MODEL_ENV, judge.BASE_URL_ENV, "HTTP_PROXY"} & set(env)
