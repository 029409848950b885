"""How the run's LLM judge (`spec.judge`) reaches the grading process, and only it.

- The grading request (`GradeRequest.judge`) carries the judge's base URL and model, never its key.
- The key crosses into the grading process as the environment variable `KEY_ENV` only: locally the trial
  process reads it from the variable `spec.judge.apiKeyEnv` names; on a cluster the grading pod gets it from
  `spec.judge.apiKeySecret` (a secretKeyRef). Agent processes and agent pods never get any of these variables,
  nor the variable `apiKeyEnv` names (unless it is also the agent's own model key, `spec.agent.api.apiKeyEnv`).
- Grading pods get base URL and model as `BASE_URL_ENV` / `MODEL_ENV` (contracts/pod_env.py).
- Inside the grading process the benchmark plugin hands the `Judge` to its graders as they expect
  (`Benchmark.judge_env`, the `judge` grader argument).
"""
from __future__ import annotations

from typing import Mapping, Optional

from pydantic import BaseModel, ConfigDict, Field

from ..runspec import AgentSpec, JudgeSpec

KEY_ENV = "CLAWKUBE_JUDGE_API_KEY"
BASE_URL_ENV = "CLAWKUBE_JUDGE_BASE_URL"
MODEL_ENV = "CLAWKUBE_JUDGE_MODEL"
ALL_ENV = (KEY_ENV, BASE_URL_ENV, MODEL_ENV)


class JudgeConfig(BaseModel):
    """The judge as the grading request carries it (no key)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    model: str = Field(min_length=1)
    base_url: Optional[str] = None

    @classmethod
    def of(cls, spec: Optional[JudgeSpec]) -> Optional["JudgeConfig"]:
        return None if spec is None else cls(model=spec.model, base_url=spec.base_url)


class Judge(JudgeConfig):
    """The judge inside the grading process: config + the key from `KEY_ENV` (None when none was given)."""

    api_key: Optional[str] = None


def key_env(spec: Optional[JudgeSpec], source: Mapping[str, str]) -> dict[str, str]:
    """Local grading: {KEY_ENV: key} read from the variable `spec.apiKeyEnv` names, when set and present."""
    if spec is None or not spec.api_key_env or spec.api_key_env not in source:
        return {}
    return {KEY_ENV: source[spec.api_key_env]}


def missing_key(spec: Optional[JudgeSpec], source: Mapping[str, str]) -> Optional[str]:
    """A message when the judge names a key variable that is not set (locally), else None."""
    if spec is not None and spec.api_key_env and spec.api_key_env not in source:
        return f"spec.judge.apiKeyEnv names {spec.api_key_env}, which is not set in the environment"
    return None


def agent_must_not_see(spec: Optional[JudgeSpec], agent: AgentSpec) -> set[str]:
    """Variable names kept out of every agent-side environment."""
    names = set(ALL_ENV)
    if spec is not None and spec.api_key_env:
        own = agent.api.api_key_env if agent.api is not None else None
        if spec.api_key_env != own:
            names.add(spec.api_key_env)
    return names
