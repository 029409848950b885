"""This project's transcript -> CLAW-Eval's conversation (what the benchmark's graders read)."""
from __future__ import annotations

import json

from clawkube.benchmarks.claweval.messages import final_assistant_text, task_tool_name, to_messages


def _shape(msgs):
    return [(m["message"]["role"], [b["type"] for b in m["message"]["content"]]) for m in msgs]


def test_turns_group_as_the_benchmarks_loop_writes_them():
    ev = [
        {"type": "message", "role": "user", "content": "triage my mail"},
        {"type": "usage", "usage": {"input_tokens": 5}},
        {"type": "message", "role": "assistant", "content": ""},
        {"type": "tool_call", "tool": "gmail_list_messages", "call_id": "a", "arguments": {"days_back": 7}},
        {"type": "tool_call", "tool": "gmail_get_message", "call_id": "b", "arguments": {"message_id": "m1"}},
        {"type": "tool_result", "call_id": "a", "content": "[1]"},
        {"type": "tool_result", "call_id": "b", "content": "{\"error\": 1}", "is_error": True},
        {"type": "message", "role": "assistant", "content": "done: m1 needs a reply"},
    ]
    msgs = to_messages(ev, ["gmail_list_messages", "gmail_get_message"])
    assert _shape(msgs) == [("user", ["text"]), ("assistant", ["tool_use", "tool_use"]),
                            ("user", ["tool_result", "tool_result"]), ("assistant", ["text"])]
    assert msgs[1]["message"]["content"][1] == {"type": "tool_use", "id": "b", "name": "gmail_get_message",
                                                "input": {"message_id": "m1"}}
    assert msgs[2]["message"]["content"][1]["is_error"] is True
    assert final_assistant_text(msgs) == "done: m1 needs a reply"


def test_harness_prefixes_are_removed_and_text_keeps_its_tool_calls():
    known = {"todo_list_tasks", "todo_update_task"}
    assert task_tool_name("mcp__claweval__todo_list_tasks", known) == "todo_list_tasks"
    assert task_tool_name("claweval__todo_update_task", known) == "todo_update_task"
    assert task_tool_name("claweval.todo_update_task", known) == "todo_update_task"
    assert task_tool_name("Bash", known) == "Bash"
    ev = [{"type": "message", "role": "assistant", "content": "let me look"},
          {"type": "tool_call", "tool": "mcp__claweval__todo_list_tasks", "call_id": "1"},
          {"type": "tool_result", "call_id": "1", "content": "[]"},
          {"type": "tool_call", "tool": "Bash", "call_id": "2", "arguments": {"command": "ls"}},
          {"type": "tool_result", "call_id": "2", "content": "a.txt"}]
    msgs = to_messages(ev, known)
    assert _shape(msgs) == [("assistant", ["text", "tool_use"]), ("user", ["tool_result"]),
                            ("assistant", ["tool_use"]), ("user", ["tool_result"])]
    assert msgs[0]["message"]["content"][1]["name"] == "todo_list_tasks"


def test_the_simulated_users_rounds_become_user_agent_messages_and_end_the_conversation():
    def ask(cid, msg, reply, done=False):
        return [{"type": "tool_call", "tool": "mcp__claweval__ask_user", "call_id": cid, "arguments": {"message": msg}},
                {"type": "tool_result", "call_id": cid, "content": json.dumps({"reply": reply, "done": done})}]
    ev = [{"type": "message", "role": "user", "content": "mortgage?"},
          *ask("1", "how much is left?", "1.3M"),
          {"type": "message", "role": "assistant", "content": ""},
          *ask("2", "prepay: shorten the term", "", done=True),
          {"type": "message", "role": "assistant", "content": "bye (not seen by the user)"}]
    msgs = to_messages(ev, set())
    texts = [(m["message"]["role"], m["message"]["content"][0]["text"] if m["message"]["content"] else "")
             for m in msgs]
    # the empty assistant turn before the second ask takes its message: one assistant turn, as upstream
    assert texts == [("user", "mortgage?"), ("assistant", "how much is left?"), ("user", "[user_agent]\n1.3M"),
                     ("assistant", "prepay: shorten the term")]
    # a failed ask (no JSON answer) is no round
    failed = to_messages([{"type": "tool_call", "tool": "ask_user", "call_id": "9", "arguments": {"message": "hi"}},
                          {"type": "tool_result", "call_id": "9", "content": "Error: refused"}], set())
    assert _shape(failed) == [("assistant", ["text"])]


def test_events_without_conversation_are_skipped():
    assert to_messages([{"type": "usage"}, {"type": "meta"}, {"type": "error", "content": "x"}]) == []
