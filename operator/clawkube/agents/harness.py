"""Real harness adapters as data: the package and tested versions, the adapter options that become flags or
environment variables, tool kinds, where the transcript and bootstrap files go. A subclass adds only what
cannot be data: mapping the model API to the harness's own mechanism, and parsing its transcript.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal, Optional

from pydantic import BaseModel

from . import install
from .base import Agent, AgentContext, Invocation
from .harnesses import prelude

Source = Literal["args", "task.max_turns", "task.timeout_seconds"]


class CliFlag(BaseModel):
    """An adapter option (spec.agent.args[arg]) as a command-line flag."""

    arg: str
    flag: str
    kind: Literal["value", "bool", "csv", "equals"] = "value"  # equals: --flag=VALUE (values starting with "-")
    task_default: Optional[Literal["max_turns", "timeout_seconds"]] = None  # used when the arg is unset
    default: Optional[Any] = None

    def render(self, ctx: AgentContext) -> list[str]:
        value = ctx.args.get(self.arg)
        if value is None and self.task_default:
            value = getattr(ctx.task, self.task_default, None) or None
        if value is None:
            value = self.default
        if value is None or value is False:
            return []
        if self.kind == "bool":
            return [self.flag]
        if self.kind == "csv":
            items = [value] if isinstance(value, str) else value
            if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
                raise ValueError(f"args.{self.arg} must be a list of strings")
            return [self.flag, ",".join(items)]
        if self.kind == "equals":
            return [f"{self.flag}={value}"]
        return [self.flag, str(int(value) if isinstance(value, float) and value.is_integer() else value)]


class EnvVar(BaseModel):
    """An adapter option (spec.agent.args[arg]) as an environment variable of the harness."""

    arg: str
    env: str
    default: Optional[str] = None

    def render(self, ctx: AgentContext) -> dict[str, str]:
        value = ctx.args.get(self.arg, self.default)
        if value is None:
            return {}
        return {self.env: str(value).lower() if isinstance(value, bool) else str(value)}


class Launch(BaseModel):
    """What a subclass builds: the harness command (argv[0] is the binary) and its setup around it."""

    argv: list[str]
    env: dict[str, str] = {}
    before: list[str] = []  # prelude steps
    after: list[str] = []
    transcript_file: Optional[str] = None


class HarnessAgent(Agent):
    package: ClassVar[str]  # key of install.PACKAGES
    flags: ClassVar[tuple[CliFlag, ...]] = ()
    env_vars: ClassVar[tuple[EnvVar, ...]] = ()
    fixed_env: ClassVar[dict[str, str]] = {}
    apis: ClassVar[tuple[str, ...]] = ()  # model APIs the harness speaks: anthropic, chat, responses
    transcript: ClassVar[str] = ""  # where the harness keeps its transcript, tokens and cost (docs, doctor)
    bootstrap: ClassVar[str] = ""  # which files it writes where, and how they stay out of the graded workspace

    def installed(self) -> install.Installed:
        return install.find(self.package)

    def launch(self, ctx: AgentContext, binary: str) -> Launch:
        raise NotImplementedError

    def invocation(self, ctx: AgentContext) -> Invocation:
        try:
            inst = self.installed()
        except install.NotInstalled as e:
            raise ValueError(str(e)) from None
        if ctx.api is not None and not ctx.model:
            raise ValueError("spec.agent.model is required with spec.agent.api (the model name to ask for)")
        la = self.launch(ctx, str(inst.bin))
        flags = [a for f in self.flags for a in f.render(ctx)]
        argv = la.argv
        if "--" in argv:  # flags go before the "--" that ends options (the prompt follows it)
            i = argv.index("--")
            argv = argv[:i] + flags + argv[i:]
        else:
            argv = argv + flags
        env = {**self.fixed_env, **{k: v for e in self.env_vars for k, v in e.render(ctx).items()}, **la.env}
        env["PATH"] = ":".join([str(d) for d in inst.path_dirs] + install.SYSTEM_PATH)
        return Invocation(argv=prelude.wrap(argv, before=la.before, after=la.after), env=env,
                          transcript_file=la.transcript_file, read_paths=list(inst.read_paths))


def home_path(ctx: AgentContext, *parts: str) -> Path:
    return ctx.home.joinpath(*parts)
