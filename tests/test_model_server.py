"""The scripted model server: each API's JSON and SSE shapes, script matching, usage, the request log, the CLI.

The official openai and anthropic SDKs parse the responses (they are the strictest readers of these formats);
raw HTTP checks the event sequences they hide.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from pydantic import ValidationError

from clawkube.modelserver import Script, ServerThread, load_script
from clawkube.modelserver.script import RequestView, choose

SCRIPT = {
    "models": ["scripted", "judge"],
    "rules": [
        {"name": "judge", "when": {"contains": "Rate the answer", "tools": []}, "text": '{"score": 0.75}',
         "usage": {"input_tokens": 50, "output_tokens": 5}},
    ],
    "turns": [
        [
            {"name": "write", "tool_calls": [{"name": "write_file", "arguments": {"path": "out.txt", "content": "hi"}}],
             "usage": {"input_tokens": 100, "output_tokens": 20, "cached_input_tokens": 30}},
            {"name": "bash", "tool_calls": [{"name": "Bash", "arguments": {"command": "echo hi > out.txt"}}]},
        ],
        {"name": "done", "text": "I wrote out.txt.", "usage": {"input_tokens": 130, "output_tokens": 7}},
    ],
}

TOOLS_CHAT = [{"type": "function", "function": {"name": "write_file", "parameters": {"type": "object"}}}]


@pytest.fixture()
def server():
    with ServerThread(Script.model_validate(SCRIPT)) as s:
        yield s


def _post(url: str, body: dict, headers: dict | None = None) -> tuple[int, str]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def _sse(text: str) -> list[tuple[str | None, object]]:
    out = []
    for block in text.strip().split("\n\n"):
        name, data = None, None
        for line in block.splitlines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data = line[6:] if line[6:] == "[DONE]" else json.loads(line[6:])
        out.append((name, data))
    return out


# ---- pure choice ----

def _view(**kw) -> RequestView:
    return RequestView(api="chat", **kw)


def test_choose_turns_by_assistant_count_and_tools_offered():
    s = Script.model_validate(SCRIPT)
    assert choose(s, _view(messages=[("user", "go")], tools={"write_file": "function"})).reply.name == "write"
    assert choose(s, _view(messages=[("user", "go")], tools={"Bash": "function"})).reply.name == "bash"
    # a side request offering no tools never gets a tool call: it falls through to the fallback
    assert choose(s, _view(messages=[("user", "go")])).source == "fallback"
    second = _view(messages=[("user", "go"), ("assistant", "x"), ("tool", "ok")], assistant_turns=1)
    assert choose(s, second).reply.name == "done"
    third = _view(messages=[("user", "go")], assistant_turns=2)
    assert choose(s, third).source == "fallback"


def test_rules_win_over_turns_and_regex_captures_fill_placeholders():
    s = Script.model_validate({"rules": [
        {"when": {"regex": r"Working directory: (?P<cwd>\S+)"},
         "tool_calls": [{"name": "Write", "arguments": {"file_path": "${cwd}/a.txt", "content": "${missing}"}}]}],
        "turns": [{"text": "never"}]})
    v = _view(system="Working directory: /tmp/w1", messages=[("user", "go")], tools={"Write": "function"})
    c = choose(s, v)
    assert c.source == "rules[0]" and c.captures == {"cwd": "/tmp/w1"}
    from clawkube.modelserver.formats import resolve
    from clawkube.modelserver.script import UsageSpec
    r = resolve(c, v, UsageSpec(), 1)
    assert json.loads(r.calls[0].arguments) == {"file_path": "/tmp/w1/a.txt", "content": "${missing}"}


def test_script_rejects_unknown_fields_and_bad_regex(tmp_path):
    with pytest.raises(ValidationError):
        Script.model_validate({"turns": [{"txt": "typo"}]})
    with pytest.raises(ValidationError):
        Script.model_validate({"rules": [{"when": {"regex": "("}, "text": "x"}]})
    p = tmp_path / "s.yaml"
    p.write_text("turns:\n  - text: hello\n")
    assert load_script(p).turns[0].text == "hello"


# ---- OpenAI Chat Completions ----

def test_chat_tool_call_with_openai_sdk_json_and_stream(server):
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="k")
    msgs = [{"role": "user", "content": "write it"}]
    r = client.chat.completions.create(model="scripted", messages=msgs, tools=TOOLS_CHAT)
    call = r.choices[0].message.tool_calls[0]
    assert (call.function.name, json.loads(call.function.arguments)) == ("write_file", {"path": "out.txt",
                                                                                      "content": "hi"})
    assert r.choices[0].finish_reason == "tool_calls"
    assert (r.usage.prompt_tokens, r.usage.completion_tokens, r.usage.prompt_tokens_details.cached_tokens) == (
        130, 20, 30)
    chunks = list(client.chat.completions.create(model="scripted", messages=msgs, tools=TOOLS_CHAT, stream=True,
                                                 stream_options={"include_usage": True}))
    args = "".join(c.choices[0].delta.tool_calls[0].function.arguments or "" for c in chunks
                   if c.choices and c.choices[0].delta.tool_calls)
    assert json.loads(args)["path"] == "out.txt"
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 20
    msgs += [{"role": "assistant", "content": None, "tool_calls": [
        {"id": call.id, "type": "function", "function": {"name": "write_file", "arguments": "{}"}}]},
             {"role": "tool", "tool_call_id": call.id, "content": "written"}]
    r2 = client.chat.completions.create(model="scripted", messages=msgs, tools=TOOLS_CHAT)
    assert r2.choices[0].message.content == "I wrote out.txt." and r2.usage.total_tokens == 137
    log = server.requests()
    assert [e.reply_name for e in log] == ["write", "write", "done"]
    assert log[2].turn == 1 and log[2].last_text == "written" and log[2].api == "chat"


def test_chat_stream_without_include_usage_puts_usage_on_the_last_chunk(server):
    status, text = _post(server.url + "/v1/chat/completions", {
        "model": "scripted", "stream": True, "messages": [{"role": "user", "content": "hello"}]})
    events = _sse(text)
    assert status == 200 and events[-1] == (None, "[DONE]")
    last = events[-2][1]
    assert last["choices"][0]["finish_reason"] == "stop" and last["usage"]["completion_tokens"] >= 1
    assert "".join(e[1]["choices"][0]["delta"].get("content") or "" for e in events[:-1]) == "Done."


# ---- OpenAI Responses ----

def test_responses_function_call_stream_and_second_turn(server):
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="k")
    tools = [{"type": "function", "name": "write_file", "parameters": {"type": "object", "properties": {}}}]
    inp = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "write it"}]}]
    with client.responses.stream(model="scripted", input=inp, tools=tools, instructions="be brief") as st:
        final = st.get_final_response()
    fc = [o for o in final.output if o.type == "function_call"][0]
    assert fc.name == "write_file" and json.loads(fc.arguments)["content"] == "hi"
    assert (final.usage.input_tokens, final.usage.output_tokens) == (130, 20)
    inp += [{"type": "function_call", "call_id": fc.call_id, "name": fc.name, "arguments": fc.arguments},
            {"type": "function_call_output", "call_id": fc.call_id, "output": "ok"}]
    r = client.responses.create(model="scripted", input=inp, tools=tools)
    assert r.output_text == "I wrote out.txt." and r.usage.input_tokens == 130


def test_responses_raw_event_sequence_and_custom_tool(tmp_path):
    script = Script.model_validate({"turns": [{"tool_calls": [{"name": "apply_patch", "arguments": "*** Begin"}]}]})
    with ServerThread(script) as s:
        status, text = _post(s.url + "/v1/responses", {
            "model": "m", "stream": True, "input": "patch it", "tools": [{"type": "custom", "name": "apply_patch"}]})
    names = [n for n, _ in _sse(text)]
    assert status == 200 and names[0] == "response.created" and names[-1] == "response.completed"
    assert "response.custom_tool_call_input.delta" in names
    seq = [d["sequence_number"] for _, d in _sse(text)]
    assert seq == list(range(len(seq)))
    done = [d for n, d in _sse(text) if n == "response.output_item.done"][0]["item"]
    assert done == {"type": "custom_tool_call", "id": done["id"], "status": "completed", "call_id": done["call_id"],
                    "name": "apply_patch", "input": "*** Begin"}


# ---- Anthropic Messages ----

def test_anthropic_tool_use_json_and_stream(server):
    anthropic = pytest.importorskip("anthropic")
    client = anthropic.Anthropic(base_url=server.url, api_key="k")
    tools = [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}]
    msgs = [{"role": "user", "content": "go"}]
    r = client.messages.create(model="scripted", max_tokens=100, messages=msgs, tools=tools)
    use = [b for b in r.content if b.type == "tool_use"][0]
    assert (use.name, use.input, r.stop_reason) == ("Bash", {"command": "echo hi > out.txt"}, "tool_use")
    with client.messages.stream(model="scripted", max_tokens=100, messages=msgs, tools=tools) as st:
        final = st.get_final_message()
    assert [b for b in final.content if b.type == "tool_use"][0].input == {"command": "echo hi > out.txt"}
    assert final.usage.output_tokens == r.usage.output_tokens >= 1
    msgs += [{"role": "assistant", "content": [{"type": "tool_use", "id": use.id, "name": "Bash", "input": {}}]},
             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "done"}]}]
    r2 = client.messages.create(model="scripted", max_tokens=100, messages=msgs, tools=tools)
    assert r2.content[0].text == "I wrote out.txt." and (r2.usage.input_tokens, r2.usage.output_tokens) == (130, 7)
    assert server.requests()[-1].turn == 1 and server.requests()[-1].last_text == "done"


def test_anthropic_raw_events_count_tokens_and_models(server):
    status, text = _post(server.url + "/v1/messages", {"model": "scripted", "max_tokens": 5, "stream": True,
                                                       "messages": [{"role": "user", "content": "Rate the answer"}]})
    events = _sse(text)
    assert [n for n, _ in events] == ["message_start", "ping", "content_block_start", "content_block_delta",
                                      "content_block_stop", "message_delta", "message_stop"]
    assert events[5][1]["usage"]["output_tokens"] == 5 and events[0][1]["message"]["usage"]["input_tokens"] == 50
    status, text = _post(server.url + "/v1/messages/count_tokens", {"model": "x", "messages": []})
    assert status == 200 and json.loads(text)["input_tokens"] >= 1
    with urllib.request.urlopen(server.url + "/v1/models") as r:
        assert [m["id"] for m in json.load(r)["data"]] == ["scripted", "judge"]
    # count_tokens is not a model turn: only the streamed request is logged
    assert [e.reply_name for e in server.requests()] == ["judge"]


# ---- judge, errors, auth, log ----

def test_judge_rule_answers_on_any_api_path_prefix(server):
    status, text = _post(server.url + "/api/v1/chat/completions", {
        "model": "judge", "messages": [{"role": "system", "content": "You grade."},
                                       {"role": "user", "content": "Rate the answer: 42"}]})
    assert status == 200 and json.loads(json.loads(text)["choices"][0]["message"]["content"]) == {"score": 0.75}


def test_api_key_errors_and_bad_json(tmp_path):
    script = Script.model_validate({"api_key": "sekret", "rules": [
        {"when": {"contains": "fail"}, "error": {"status": 429, "message": "slow down"}}]})
    log = tmp_path / "log.jsonl"
    with ServerThread(script, log_file=log) as s:
        assert _post(s.url + "/v1/messages", {"messages": []})[0] == 401
        status, text = _post(s.url + "/v1/messages", {"messages": [{"role": "user", "content": "fail"}]},
                             {"x-api-key": "sekret"})
        assert status == 429 and json.loads(text)["error"]["message"] == "slow down"
        status, _ = _post(s.url + "/v1/chat/completions", {"messages": [{"role": "user", "content": "ok"}]},
                          {"Authorization": "Bearer sekret"})
        assert status == 200
        req = urllib.request.Request(s.url + "/v1/chat/completions", data=b"{nope", method="POST",
                                     headers={"Authorization": "Bearer sekret"})
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req)
        assert e.value.code == 400
        with urllib.request.urlopen(s.url + "/_clawkube/requests") as r:
            assert [e["status"] for e in json.load(r)] == [429, 200]
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [e["status"] for e in lines] == [429, 200] and lines[1]["usage"]["output_tokens"] >= 1


def test_cli_serves_the_script(tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text("turns:\n  - text: from the CLI\n")
    port_file = tmp_path / "port"
    p = subprocess.Popen([sys.executable, "-m", "clawkube", "model-server", "--script", str(script), "--port", "0",
                          "--port-file", str(port_file)], stdout=subprocess.PIPE, text=True)
    try:
        for _ in range(100):
            if port_file.exists():
                break
            time.sleep(0.1)
        status, text = _post(f"http://127.0.0.1:{port_file.read_text()}/v1/chat/completions",
                             {"messages": [{"role": "user", "content": "hi"}]})
        assert json.loads(text)["choices"][0]["message"]["content"] == "from the CLI"
        assert "listening on http://127.0.0.1:" in p.stdout.readline()
    finally:
        p.terminate()
        p.wait(10)


def test_cli_rejects_a_bad_script(tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text("turns: [{txt: 1}]\n")
    r = subprocess.run([sys.executable, "-m", "clawkube", "model-server", "--script", str(script)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "txt" in r.stderr


def test_cli_on_a_taken_port_says_so_in_one_line(tmp_path):
    import socket
    script = tmp_path / "s.yaml"
    script.write_text("turns:\n  - text: hi\n")
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        r = subprocess.run([sys.executable, "-m", "clawkube", "model-server", "--script", str(script), "--port",
                            str(port)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.startswith(f"clawkube: error: model server on 127.0.0.1:{port}") and "--port" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_the_documented_example_script_is_valid():
    import re

    import yaml
    doc = (Path(__file__).parent.parent / "docs" / "model-server.md").read_text()
    example = yaml.safe_load(re.search(r"```yaml\n(.*?)```", doc, re.S).group(1))
    s = Script.model_validate(example)
    v = RequestView(api="anthropic", system="Working directory: /w", messages=[("user", "go")],
                    tools={"Write": "custom"})
    assert choose(s, v).captures == {"cwd": "/w"}
    assert choose(s, RequestView(api="chat", messages=[("user", "Score the response")])).reply.name == "judge"
