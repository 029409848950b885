"""The BenchmarkRun spec: one model shared by `run.yaml` for the CLI and the BenchmarkRun CR."""
from __future__ import annotations

from enum import Enum
from typing import Any, Literal, Optional

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class _Camel(BaseModel):
    """CR fields are camelCase (Kubernetes conventions); Python attributes are snake_case."""

    model_config = ConfigDict(
        populate_by_name=True,
        alias_generator=lambda s: s.split("_")[0] + "".join(w.title() for w in s.split("_")[1:]),
        extra="forbid",
    )


class EvalMode(str, Enum):
    BASELINE = "baseline"
    PRESKILL = "preskill"
    POSTSKILL = "postskill"


class TaskSource(_Camel):
    """Where task files come from. Exactly one of the fields is set."""

    path: Optional[str] = None  # local folder (CLI) or a path inside `pvc` (cluster)
    config_map: Optional[str] = None  # ConfigMap whose keys are task files (cluster)
    pvc: Optional[str] = None  # PersistentVolumeClaim holding task files at `path` (cluster)
    s3_prefix: Optional[str] = None  # s3://bucket/prefix holding task files
    inline: list[dict[str, Any]] = Field(default_factory=list)  # [{name: file name, content: text}]


class TaskSelector(_Camel):
    ids: list[str] = Field(default_factory=list)
    categories: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)


class SecretRef(_Camel):
    """A key of a Kubernetes Secret in the run's namespace."""

    name: str = Field(min_length=1)
    key: str = Field(min_length=1)


class ModelApi(_Camel):
    """Where model requests go: an OpenAI- or Anthropic-compatible endpoint and its key.

    The key is never written into the spec: locally it is read from the environment variable `apiKeyEnv`,
    on a cluster from `apiKeySecret`. Each harness adapter maps this to its own mechanism (flags, env, config).
    """

    base_url: Optional[str] = None  # e.g. http://127.0.0.1:8765/v1; unset: the harness's own default
    api_key_env: Optional[str] = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    api_key_secret: Optional[SecretRef] = None


class JudgeSpec(ModelApi):
    """The LLM judge graders may call (every benchmark): grading processes and pods only, never the agent."""

    model: str = Field(min_length=1)


class AgentSpec(_Camel):
    harness: str = "oracle"  # oracle | nop | script | openclaw | claude-code | codex | hermes | nanobot
    model: Optional[str] = None
    image: Optional[str] = None  # cluster: the agent-runner image
    args: dict[str, Any] = Field(default_factory=dict)  # adapter options, e.g. script commands
    api: Optional[ModelApi] = None  # the model API the harness talks to (base URL, key); unset: harness default


# Kubernetes quantities, as the trial pods' requests = limits: cpu in cores (1, 0.5) or millicores (500m);
# memory in bytes, with a binary (Ki..Ei) or decimal (k, M..E) suffix or an exponent (129e6). The CRD carries the
# same patterns, so the apiserver refuses a bad value too.
CPU_PATTERN = r"^([0-9]+(\.[0-9]+)?|\.[0-9]+)m?$"
MEMORY_PATTERN = r"^([0-9]+(\.[0-9]+)?|\.[0-9]+)([KMGTPE]i|[kMGTPE]|[eE][0-9]+)?$"


class Resources(_Camel):
    """CPU and memory of each trial container (requests = limits), and locally of each sandboxed process tree
    (agent with its warmup servers; grader). The defaults fit the real harnesses (OpenClaw on Node needs more than
    512Mi)."""

    cpu: str = Field(default="1", json_schema_extra={"pattern": CPU_PATTERN})
    memory: str = Field(default="2Gi", json_schema_extra={"pattern": MEMORY_PATTERN})

    @field_validator("cpu")
    @classmethod
    def _cpu(cls, v: str) -> str:
        if not re.match(CPU_PATTERN, v) or float(v.rstrip("m")) == 0:
            raise ValueError(f"cpu {v!r} is not a Kubernetes CPU quantity above 0: cores like 1 or 0.5, "
                             f"or millicores like 500m")
        return v

    @field_validator("memory")
    @classmethod
    def _memory(cls, v: str) -> str:
        if not re.match(MEMORY_PATTERN, v):
            hint = f" (did you mean {v[:-1]}Mi? a lowercase m means milli-bytes)" if v.endswith("m") else ""
            raise ValueError(f"memory {v!r} is not a Kubernetes memory quantity: bytes with a suffix like "
                             f"512Mi, 1Gi or 500M{hint}")
        if float(re.match(r"[0-9.]+", v).group()) == 0:
            raise ValueError(f"memory {v!r} must be above 0")
        return v

    def memory_bytes(self) -> int:
        m = re.fullmatch(r"([0-9.]+)([KMGTPE]i|[kMGTPE]|[eE][0-9]+)?", self.memory)
        num, suffix = float(m.group(1)), m.group(2) or ""
        if suffix[:1] in "eE" and suffix:
            return int(num * 10 ** int(suffix[1:]))
        scale = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
        if suffix.endswith("i"):
            return int(num * 1024 ** ("KMGTPE".index(suffix[0]) + 1))
        return int(num * scale[suffix])

    def cpu_cores(self) -> float:
        return float(self.cpu[:-1]) / 1000 if self.cpu.endswith("m") else float(self.cpu)


class RetryPolicy(_Camel):
    """Attempts per trial by error kind (1 = no retry)."""

    agent_timeout: int = Field(default=1, ge=1)
    agent_error: int = Field(default=1, ge=1)
    grading_error: int = Field(default=2, ge=1)
    infra: int = Field(default=3, ge=1)


class Budgets(_Camel):
    max_cost_usd: Optional[float] = Field(default=None, ge=0)
    max_tokens: Optional[int] = Field(default=None, ge=0)


class ArtifactStore(_Camel):
    bucket: str
    prefix: str = ""
    endpoint: Optional[str] = None
    region: Optional[str] = None
    credentials_secret: Optional[str] = None  # Secret with AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY


class ClawEvalSpec(_Camel):
    """CLAW-Eval's code for a run. Locally the checkout is named by `--claw-eval` (or found above the tasks); on a
    cluster the pods take it from an image built from a checkout (`images/build.sh --claw-eval DIR`):
    `image` (the whole checkout: the grading pods of CLAW-Eval trials) and `servicesImage` (the checkout without
    graders and grading-only files: the agent pod's "svc-claweval" sidecar, with the task's mock services).
    Unset `servicesImage`: `image` with `-services` added to its repository (as build.sh names it)."""

    image: Optional[str] = None
    services_image: Optional[str] = None
    # a Secret whose keys become env of the svc-claweval sidecar only (its mocks inherit them), for mocks that call
    # real APIs, e.g. SERP_DEV_KEY of the web_real services; never of the agent container or the grading pod
    services_secret: Optional[str] = Field(default=None, pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")

    def services_image_ref(self) -> Optional[str]:
        if self.services_image or not self.image:
            return self.services_image
        return services_image_of(self.image)


def services_image_of(image: str) -> str:
    """`reg/clawkube-claweval:dev` -> `reg/clawkube-claweval-services:dev` (a digest or tag stays as it is)."""
    for sep in ("@", ":"):
        head, found, tail = image.rpartition(sep)
        if found and "/" not in tail:
            return f"{head}-services{sep}{tail}"
    return f"{image}-services"


class BenchmarkRunSpec(_Camel):
    tasks: TaskSource
    selector: TaskSelector = Field(default_factory=TaskSelector)
    agent: AgentSpec = Field(default_factory=AgentSpec)
    trials: int = Field(default=1, ge=1, le=1000)
    parallelism: int = Field(default=4, ge=1, le=10000)
    timeout_seconds: Optional[int] = Field(default=None, ge=1)  # overrides every task's timeout
    resources: Resources = Field(default_factory=Resources)
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    budgets: Budgets = Field(default_factory=Budgets)
    artifacts: Optional[ArtifactStore] = None
    mode: EvalMode = EvalMode.BASELINE
    # several EvoClawBench modes in one run: every task's K trials in each mode; the summary's byMode gives
    # each mode's ratios against baseline. Empty: just `mode`.
    modes: list[EvalMode] = Field(default_factory=list)
    error_injection_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    seed: int = 0
    judge: Optional[JudgeSpec] = None  # LLM judge for graders; unset: judge-dependent trials are grading errors
    claw_eval: Optional[ClawEvalSpec] = None  # cluster: the images holding a CLAW-Eval checkout


    @model_validator(mode="after")
    def _modes(self) -> "BenchmarkRunSpec":
        if len(set(self.modes)) != len(self.modes):
            raise ValueError(f"modes {[m.value for m in self.modes]} names a mode twice")
        if self.modes and "mode" in self.model_fields_set and self.mode not in self.modes:
            raise ValueError(f"mode {self.mode.value!r} is not among modes {[m.value for m in self.modes]}: "
                             "set one of the two")
        return self

    def mode_list(self) -> list[str]:
        """The run's evaluation modes, in order (`modes`, else `[mode]`)."""
        return [m.value for m in self.modes] if self.modes else [self.mode.value]


class RunFile(_Camel):
    """A run.yaml: either a bare spec or a full BenchmarkRun manifest (apiVersion/kind/metadata/spec)."""

    api_version: Optional[str] = None
    kind: Optional[Literal["BenchmarkRun"]] = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    spec: BenchmarkRunSpec
