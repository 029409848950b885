"""The environment a task's processes get from the host's: only the variables the task (or the harness) names."""
from __future__ import annotations

from typing import Iterable, Mapping


def task_env(names: Iterable[str], source: Mapping[str, str]) -> dict[str, str]:
    return {n: source[n] for n in names if n in source}
