"""Deterministic agents for tests and validation: oracle, nop, script."""
from __future__ import annotations

from .base import Agent, AgentContext, AgentOutput, Invocation
from .transcript import TranscriptEvent

# Each scripted command runs in bash; markers in stdout let parse() split outputs per command.
_MARK = "__CLAWKUBE_STEP__"


def _prompt_event(ctx: AgentContext) -> TranscriptEvent:
    return TranscriptEvent(type="message", role="user", content=ctx.task.prompt)


def _script(commands: list[str]) -> str:
    lines = ["set +e"]
    for i, cmd in enumerate(commands):
        lines.append(f"echo {_MARK}{i}")
        lines.append(cmd)
        lines.append(f"echo {_MARK}{i}:rc=$?")
    return "\n".join(lines) + "\n"


def _parse_steps(commands: list[str], stdout: str) -> list[TranscriptEvent]:
    events: list[TranscriptEvent] = []
    buf: list[str] = []
    current: int | None = None
    for line in stdout.splitlines():
        if line.startswith(_MARK):
            tag = line[len(_MARK):]
            if ":rc=" in tag:
                idx, rc = tag.split(":rc=")
                i = int(idx)
                events.append(TranscriptEvent(type="tool_result", role="tool", tool="bash", call_id=f"step-{i}",
                                              content="\n".join(buf), arguments={"exit_code": int(rc)}))
                buf, current = [], None
            else:
                current = int(tag)
                events.append(TranscriptEvent(type="tool_call", role="assistant", tool="bash",
                                              call_id=f"step-{current}",
                                              arguments={"command": commands[current]}))
            continue
        if current is not None:
            buf.append(line)
    return events


class NopAgent(Agent):
    """Does nothing. Every sane task must fail with it."""

    name = "nop"

    def invocation(self, ctx: AgentContext) -> Invocation:
        return Invocation(argv=["true"])

    def parse(self, ctx: AgentContext, out: AgentOutput) -> list[TranscriptEvent]:
        return [_prompt_event(ctx), TranscriptEvent(type="message", role="assistant", content="")]


class ScriptAgent(Agent):
    """Replays `args.commands` (a list of shell commands) in the workspace; each is a tool call."""

    name = "script"
    tool_kinds = {"bash": "exec"}

    def _commands(self, ctx: AgentContext) -> list[str]:
        cmds = ctx.args.get("commands", [])
        if isinstance(cmds, str):
            cmds = [cmds]
        if not isinstance(cmds, list) or not all(isinstance(c, str) for c in cmds):
            raise ValueError("script agent: args.commands must be a list of shell commands")
        return cmds

    def invocation(self, ctx: AgentContext) -> Invocation:
        return Invocation(argv=["bash", "-s"], stdin=_script(self._commands(ctx)))

    def parse(self, ctx: AgentContext, out: AgentOutput) -> list[TranscriptEvent]:
        events = [_prompt_event(ctx), *_parse_steps(self._commands(ctx), out.stdout)]
        final = ctx.args.get("final_message", "done")
        events.append(TranscriptEvent(type="message", role="assistant", content=final))
        return events


class OracleAgent(Agent):
    """Runs the task's reference solution (a shell script) in the workspace."""

    name = "oracle"
    tool_kinds = {"bash": "exec"}
    needs_reference = True

    def invocation(self, ctx: AgentContext) -> Invocation:
        if not ctx.reference_solution:
            raise ValueError(f"task {ctx.task.id} has no reference solution: the oracle agent cannot run it")
        return Invocation(argv=["bash", "-s"], stdin=_script([ctx.reference_solution]))

    def parse(self, ctx: AgentContext, out: AgentOutput) -> list[TranscriptEvent]:
        events = [_prompt_event(ctx), *_parse_steps([ctx.reference_solution or ""], out.stdout)]
        events.append(TranscriptEvent(type="message", role="assistant",
                                      content="Reference solution applied."))
        return events
