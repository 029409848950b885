"""The five real harnesses, each through `clawkube run`, against the scripted model server on 127.0.0.1.

Each harness is the tested version from npm / PyPI (`clawkube harness install`, which tests/run-tests.sh runs
first; here it is a no-op when they are there). One trial per harness: the scripted model calls the harness's
own file tool to write answer.txt. Where the bwrap backend is available (root), the harness runs in it: its install
(`Invocation.read_paths`) seen read-only, its own network namespace where the model server on the host's 127.0.0.1
is forwarded in, a per-trial uid. The test checks the sandbox it ran in, the score, the file in the workspace snapshot, the tool call
in the transcript, the tokens against what the server reported, and the request the harness sent (model name,
key, task prompt). A harness that is not installed fails the test, unless its registry cannot be reached: then
it is skipped with that reason.
"""
from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
import urllib.request
from pathlib import Path

import pytest

from clawkube.agents import install
from clawkube.lifecycle.sandbox import namespace_mode_available
from clawkube.modelserver import Script, ServerThread

from .scenario import ANSWER, EXPECTED_TOOL, PROMPT, SCRIPT, make_task

REGISTRY = {"npm": "https://registry.npmjs.org/", "pypi": "https://pypi.org/simple/"}
KEY = "sk-clawkube-test"
SANDBOX = "bwrap" if namespace_mode_available() else "none"  # without it the harness still runs, unsandboxed


def _reachable(registry: str) -> bool:
    try:
        with urllib.request.urlopen(REGISTRY[registry], timeout=15):
            return True
    except Exception:
        return False


def _installed(name: str) -> None:
    try:
        install.install(name)
    except Exception as e:
        pkg = install.PACKAGES[name]
        if not _reachable(pkg.registry):
            pytest.skip(f"{name}: the {pkg.registry} registry cannot be reached to install {pkg.name}: {e}")
        raise


@pytest.mark.slow
@pytest.mark.parametrize("harness", sorted(EXPECTED_TOOL))
def test_real_harness_scores_with_its_own_tool(harness, tmp_path):
    _installed(harness)
    tasks = make_task(tmp_path)
    out = tmp_path / "results"
    script = Script.model_validate({**SCRIPT, "api_key": KEY})
    with ServerThread(script) as server:
        r = subprocess.run([sys.executable, "-m", "clawkube", "run", "--tasks", str(tasks), "--agent", harness,
                            "--model", "scripted", "--api-base-url", server.url, "--api-key-env", "SCRIPTED_KEY",
                            "--out", str(out), "--quiet", "--sandbox", SANDBOX],
                           env={**_env(), "SCRIPTED_KEY": KEY}, capture_output=True, text=True, timeout=600)
        log = server.requests()
    trial = out / "trials" / "harness-answer" / "0"
    result = json.loads((trial / "result.json").read_text())
    stderr = (trial / "agent.stderr").read_text()[-3000:] if (trial / "agent.stderr").exists() else ""
    assert result["score"] is not None and result["score"]["score"] == 1.0, (r.stdout[-2000:], r.stderr[-2000:],
                                                                            result, stderr)
    assert result["error_kind"] is None, (result, stderr)
    # it ran in the sandbox: the model server was reached from the sandbox's own network namespace
    execd = json.loads((trial / "agent.exec.json").read_text())
    assert result["firewall"] == SANDBOX and execd["backend"] == SANDBOX, (result["firewall"], execd)

    # the harness sent the task to our model, with our model name and key, and got the tool call
    main = [e for e in log if e.reply_name not in ("side", None)]
    assert main and all(e.status == 200 for e in log), [(e.status, e.reply_name, e.path) for e in log]
    assert any(PROMPT in json.dumps(e.body) for e in main)
    assert {e.model for e in main} == {"scripted"}
    assert [e.source.split("[")[0] for e in main] == ["turns", "turns"], [e.source for e in main]

    # the file was written by the harness's own tool, and the snapshot graders see holds it (and nothing of the
    # harness's own bootstrap)
    with tarfile.open(trial / "workspace.tar.gz") as tar:
        names = {Path(n).as_posix().lstrip("./") for n in tar.getnames()}
        member = next(m for m in tar.getmembers() if Path(m.name).name == "answer.txt")
        assert tar.extractfile(member).read().decode().strip() == ANSWER
    assert not names & {"AGENTS.md", "SOUL.md", "USER.md", "HEARTBEAT.md", ".git", "memory", ".nanobot"}, names

    events = [json.loads(line) for line in (trial / "transcript.jsonl").read_text().splitlines()]
    tool, kind = EXPECTED_TOOL[harness]
    calls = [e for e in events if e["type"] == "tool_call"]
    assert [c["tool"] for c in calls] == [tool], events
    assert any(e["type"] == "tool_result" for e in events), events
    # the task is in WildClawBench's format: its prompt comes after the benchmark runner's preamble
    assert events[0]["type"] == "message" and events[0]["role"] == "user" and events[0]["content"].endswith(PROMPT)

    # tokens: what the harness recorded equals what the server reported (fresh input, cache reads, output)
    usage = json.loads((trial / "usage.json").read_text())
    served = [e.usage for e in log if e.usage]
    fresh = sum(u["input_tokens"] + u["cache_creation_input_tokens"] for u in served)
    cached = sum(u["cached_input_tokens"] for u in served)
    output = sum(u["output_tokens"] for u in served)
    assert (usage["input_tokens"], usage["cache_read_tokens"], usage["output_tokens"]) == (fresh, cached, output), (
        usage, [(e.reply_name, e.usage) for e in log])
    assert usage["total_tokens"] == fresh + cached + output
    assert usage["tool_calls"] == 1 and usage["tool_calls_by_kind"] == {kind: 1}
    assert usage["wall_seconds"] > 0


def _env() -> dict[str, str]:
    import os

    keep = ("PATH", "HOME", "LANG", "PYTHONPATH", "CLAWKUBE_HARNESS_HOME", "TMPDIR", "XDG_CACHE_HOME")
    return {k: os.environ[k] for k in keep if k in os.environ}
