"""One `Settings` object for the operator, read from `CLAWKUBE_*` environment variables.

Every field `foo_bar` is read from `CLAWKUBE_FOO_BAR`; list fields take comma-separated values, map fields
comma-separated `key=value` pairs.
Example: `CLAWKUBE_NAMESPACES=bench,dev CLAWKUBE_HARNESS_IMAGES=codex=reg/codex:1 python -m clawkube.k8s`.
"""
from __future__ import annotations

import os
from typing import Mapping, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from . import __version__

ENV_PREFIX = "CLAWKUBE_"
IMAGE_REPO = "ghcr.io/clawkube"  # images/images.json builds the same names under local.test/


class SettingsError(ValueError):
    """A CLAWKUBE_* variable has a bad value; the message names the variable."""


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    # what to watch
    namespaces: list[str] = Field(default_factory=lambda: ["default"])  # CLAWKUBE_NAMESPACES=a,b; "" = all (cluster-wide)
    kubeconfig: Optional[str] = None  # unset: in-cluster service account, else $KUBECONFIG / ~/.kube/config

    # endpoints served by the operator (0 = disabled)
    metrics_port: int = Field(default=9090, ge=0, le=65535)
    liveness_port: int = Field(default=8080, ge=0, le=65535)
    listen_address: str = "0.0.0.0"  # address of both endpoints (127.0.0.1: this machine only)

    # task sources
    tasks_root: Optional[str] = None  # folder that BenchmarkRun spec.tasks.path is relative to (unset: refused)

    # pod images and placement
    agent_image: str = f"{IMAGE_REPO}/clawkube-agent:{__version__}"  # when neither the run nor harness_images name one
    grader_image: str = f"{IMAGE_REPO}/clawkube-grader:{__version__}"
    harness_images: dict[str, str] = Field(default_factory=dict)  # CLAWKUBE_HARNESS_IMAGES=codex=reg/codex:1,...
    agent_runtime_class: Optional[str] = None  # runtimeClassName of agent pods (e.g. gvisor); unset: the default
    model_api_secret: Optional[str] = None  # Secret whose keys become env of model-calling agent containers only
    image_pull_policy: str = "IfNotPresent"
    service_account: Optional[str] = None  # for the trial pods; their token is never mounted

    # default artifact store (used when a BenchmarkRun has no spec.artifacts)
    artifact_bucket: Optional[str] = None
    artifact_prefix: str = ""
    artifact_endpoint: Optional[str] = None
    artifact_region: Optional[str] = None
    artifact_credentials_secret: Optional[str] = None

    # scheduling and clocks
    max_concurrent_pods: int = Field(default=0, ge=0)  # across all runs; 0 = only per-run parallelism
    requeue_seconds: float = Field(default=5.0, gt=0)  # full reconcile at least this often
    pending_timeout_seconds: int = Field(default=600, ge=1)  # a pod Pending longer is stuck -> retried
    agent_grace_seconds: int = Field(default=300, ge=0)  # setup + upload time on top of the task timeout
    grade_grace_seconds: int = Field(default=300, ge=0)  # fetch + upload time on top of the grader timeout
    deadline_slack_seconds: int = Field(default=60, ge=0)  # operator clock beyond activeDeadlineSeconds
    upload_retry_seconds: float = Field(default=10.0, gt=0)  # first backoff after a failed S3 upload
    s3_attempts: int = Field(default=4, ge=1)  # per S3 call, with exponential backoff
    # agent and grading pods get presigned grants (POST under their own prefix, GET of what they read) instead of
    # the store's credentials; off: they get the credentials Secret
    presigned_grants: bool = True

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "Settings":
        env = os.environ if env is None else env
        raw: dict[str, object] = {}
        for name, field in cls.model_fields.items():
            key = ENV_PREFIX + name.upper()
            if key not in env:
                continue
            value = env[key]
            if field.annotation == list[str]:
                raw[name] = [v.strip() for v in value.split(",") if v.strip()]
            elif field.annotation == dict[str, str]:
                raw[name] = _pairs(key, value)
            elif value != "" or field.annotation is str:
                raw[name] = value
            elif field.default is None:  # an empty optional value: unset
                raw[name] = None
            # else: empty for a field with a default (e.g. a Helm value left empty): keep the default
        try:
            return cls.model_validate(raw)
        except ValidationError as e:
            problems = "; ".join(
                f"{ENV_PREFIX}{str(err['loc'][0]).upper()}: {err['msg']}" for err in e.errors())
            raise SettingsError(f"bad operator settings: {problems}") from None

    def agent_image_for(self, harness: str, run_image: Optional[str] = None) -> str:
        """The agent pod's image: the run's spec.agent.image, else the harness's default, else agent_image."""
        return run_image or self.harness_images.get(harness) or self.agent_image


def _pairs(key: str, value: str) -> dict[str, str]:
    """`a=x,b=y` -> {"a": "x", "b": "y"}; the error names the variable and the bad item."""
    out: dict[str, str] = {}
    for item in (i.strip() for i in value.split(",")):
        if not item:
            continue
        name, sep, val = item.partition("=")
        if not sep or not name.strip() or not val.strip():
            raise SettingsError(f"bad operator settings: {key}: item {item!r} is not NAME=VALUE")
        out[name.strip()] = val.strip()
    return out
