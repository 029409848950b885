"""The run's LLM judge as the grading side receives it: `spec.judge` with its key resolved.

The trial process resolves `JudgeSpec` (base URL, model, key from `apiKeyEnv` in its own environment; on the
cluster from `apiKeySecret`) into a `Judge` and hands each benchmark plugin's `judge_env(judge)` to the grading
process only, never to an agent.
"""
from __future__ import annotations

import os
from typing import Mapping, Optional

from pydantic import BaseModel, ConfigDict

OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1"  # where a judge without baseUrl is asked (OpenRouter)


class Judge(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str  # OpenAI-compatible, ending in /v1 (e.g. http://127.0.0.1:8765/v1)
    model: str
    api_key: str = ""


class JudgeKeyMissing(ValueError):
    """The judge's key variable is named but not set."""


def resolve(spec, env: Optional[Mapping[str, str]] = None) -> Optional[Judge]:
    """A `runspec.JudgeSpec` (or None) -> `Judge` (or None); the key from `apiKeyEnv` in `env` (default: ours)."""
    if spec is None:
        return None
    env = os.environ if env is None else env
    key = ""
    if spec.api_key_env:
        if spec.api_key_env not in env:
            raise JudgeKeyMissing(f"judge.apiKeyEnv names {spec.api_key_env}, which is not set")
        key = env[spec.api_key_env]
    return Judge(base_url=(spec.base_url or OPENROUTER_BASE_URL).rstrip("/"), model=spec.model, api_key=key)
