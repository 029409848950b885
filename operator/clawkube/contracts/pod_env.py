"""The environment of a trial pod's main container: set by the operator (k8s/podspec.py), read by the pod process
(pod.py). One model, so a variable's name is written once: `PodEnv(...).k8s()` gives the container's `env`
entries, `PodEnv.from_environ(os.environ)` reads them back (a malformed value is an error, not a default).

Agent-role pods (agent, stage) and grading pods get different subsets; the judge's variables (contracts/judge.py)
only ever reach grading pods, and the judge's key only as a secretKeyRef (not in this model).
"""
from __future__ import annotations

import json
from typing import Any, Mapping, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..results.model import Score
from ..runspec import EvalMode
from . import judge as judges
from ..runspec import JudgeSpec


class FirstRunRecord(BaseModel):
    """What a PostSkill summary pod is told of the first run (CLAWKUBE_FIRST_RUN): its score without details, the
    agent's own error, and only *whether* grading failed (never the grader's message)."""

    model_config = ConfigDict(extra="forbid")

    score: Optional[Score] = None
    agent_error: Optional[str] = None
    grading_error: Optional[str] = None


class PodEnv(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    trial: Optional[str] = Field(default=None, alias="CLAWKUBE_TRIAL")
    attempt: Optional[int] = Field(default=None, alias="CLAWKUBE_ATTEMPT", ge=1)
    artifact_uri: Optional[str] = Field(default=None, alias="CLAWKUBE_ARTIFACT_URI")  # where --out is uploaded
    s3_attempts: Optional[int] = Field(default=None, alias="CLAWKUBE_S3_ATTEMPTS", ge=1)
    upload_grant: Optional[str] = Field(default=None, alias="CLAWKUBE_UPLOAD_GRANT")  # JSON presigned POST
    read_grants: Optional[str] = Field(default=None, alias="CLAWKUBE_READ_GRANTS")  # JSON {uri: {path: url}}
    # agent-role pods
    mode: Optional[EvalMode] = Field(default=None, alias="CLAWKUBE_MODE")
    harness: Optional[str] = Field(default=None, alias="CLAWKUBE_HARNESS")
    error_injection_rate: Optional[float] = Field(default=None, alias="CLAWKUBE_ERROR_INJECTION_RATE")
    seed: Optional[int] = Field(default=None, alias="CLAWKUBE_SEED")
    timeout_seconds: Optional[int] = Field(default=None, alias="CLAWKUBE_TIMEOUT_SECONDS", ge=1)
    agent_args: Optional[dict[str, Any]] = Field(default=None, alias="CLAWKUBE_AGENT_ARGS")
    skills_uri: Optional[str] = Field(default=None, alias="CLAWKUBE_SKILLS_URI")  # the skills to start with
    first_run_uri: Optional[str] = Field(default=None, alias="CLAWKUBE_FIRST_RUN_URI")  # summary pods
    first_run: Optional[FirstRunRecord] = Field(default=None, alias="CLAWKUBE_FIRST_RUN")  # summary pods
    # agent pods with a warmup sidecar (contracts/warmup.py): the folder of its request/ and status/ volumes
    warmup_dir: Optional[str] = Field(default=None, alias="CLAWKUBE_WARMUP_DIR")
    # grading pods of a trial with a warmup: the agent pod's relay (execution/relay.py) as host:port; LOST_PEER
    # when the agent pod had no address any more (its servers are gone: grading cannot be done as upstream does)
    warmup_peer: Optional[str] = Field(default=None, alias="CLAWKUBE_WARMUP_PEER")
    # grading pods (the key: judge.KEY_ENV, from a Secret)
    judge_model: Optional[str] = Field(default=None, alias=judges.MODEL_ENV)
    judge_base_url: Optional[str] = Field(default=None, alias=judges.BASE_URL_ENV)

    @field_validator("agent_args", "first_run", mode="before")
    @classmethod
    def _json(cls, v: Any) -> Any:
        return json.loads(v) if isinstance(v, str) else v

    @classmethod
    def names(cls) -> list[str]:
        return [f.alias for f in cls.model_fields.values()]

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> "PodEnv":
        return cls.model_validate({k: v for k, v in environ.items() if k in cls.names() and v != ""})

    def k8s(self) -> list[dict[str, str]]:
        """The set variables as Kubernetes env entries, in field order."""
        out = []
        for name, field in type(self).model_fields.items():
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, BaseModel):
                text = value.model_dump_json(exclude_defaults=True)
            elif isinstance(value, dict):
                text = json.dumps(value, sort_keys=True)
            elif isinstance(value, EvalMode):
                text = value.value
            else:
                text = str(value)
            out.append({"name": field.alias, "value": text})
        return out

    def judge_config(self) -> Optional[judges.JudgeConfig]:
        if not self.judge_model:
            return None
        return judges.JudgeConfig(model=self.judge_model, base_url=self.judge_base_url or None)


def judge_env(spec: Optional[JudgeSpec]) -> list[dict[str, Any]]:
    """A grading pod's judge variables: model and base URL, and the key from `spec.apiKeySecret`."""
    if spec is None:
        return []
    env: list[dict[str, Any]] = PodEnv(judge_model=spec.model, judge_base_url=spec.base_url).k8s()
    if spec.api_key_secret is not None:
        env.append({"name": judges.KEY_ENV, "valueFrom": {"secretKeyRef": {"name": spec.api_key_secret.name,
                                                                           "key": spec.api_key_secret.key}}})
    return env
