"""How a task's service command is run, and how its URL reaches the agent (pure)."""
from __future__ import annotations

import re
import sys
from typing import Optional

from ..tasks.model import ServiceSpec
from .admin import RESET_PATH

_NAME = re.compile(r"[^A-Za-z0-9]+")


def service_argv(spec: ServiceSpec, port: int, fixtures: str, python: Optional[str] = None) -> list[str]:
    """The service's command with `{port}`/`{fixtures}` filled in, the value after a literal `--port` replaced by
    `port` and after `--fixtures` by `fixtures` (tasks write the natural CLAW-Eval form, the runner picks the port),
    and a leading `python`/`python3` replaced by `python` (the engine's interpreter)."""
    argv = [a.replace("{port}", str(port)).replace("{fixtures}", fixtures) for a in spec.command]
    for flag, value in (("--port", str(port)), ("--fixtures", fixtures)):
        for i, a in enumerate(argv[:-1]):
            if a == flag:
                argv[i + 1] = value
        argv = [f"{flag}={value}" if a.startswith(flag + "=") else a for a in argv]
    if argv and argv[0] in ("python", "python3"):
        argv[0] = python or sys.executable
    return argv


def is_clawkube_service(spec: ServiceSpec) -> bool:
    """Our own mocks (python -m clawkube.services ...): they keep an audit log and honour fault injection."""
    return "clawkube.services" in spec.command


def env_name(name: str) -> str:
    return _NAME.sub("_", name).strip("_").upper()


def agent_env(urls: dict[str, str]) -> dict[str, str]:
    """The env an agent gets for the services: CLAWKUBE_SERVICE_<NAME>_URL and <NAME>_API_URL (e.g. MAIL_API_URL)."""
    env: dict[str, str] = {}
    for name, url in urls.items():
        n = env_name(name)
        env[f"CLAWKUBE_SERVICE_{n}_URL"] = url
        env[f"{n}_API_URL"] = url
    return env


def reset_path(spec: ServiceSpec) -> Optional[str]:
    """The task's reset endpoint; our own services reset at /_admin/reset when the task names none."""
    return spec.reset_endpoint or (RESET_PATH if is_clawkube_service(spec) else None)


def health_path(spec: ServiceSpec) -> str:
    return spec.health_check or "/health"
