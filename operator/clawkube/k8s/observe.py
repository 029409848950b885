"""What the operator observes: plain, typed snapshots parsed from API objects (pure functions).

`gather.py` reads the cluster; these parsers turn the JSON-shaped objects (camelCase keys, as
`kubectl get -o json` shows them) into the inputs of `decide.py`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Optional

from ..agents.registry import known_agents
from ..runspec import BenchmarkRunSpec
from .conditions import parse_ts
from .model import RunStatus, TaskTrialSpec, TrialStatus
from .names import L_ROLE

TERMINAL_PHASES = ("Succeeded", "Failed")


@dataclass(frozen=True)
class Terminated:
    exit_code: Optional[int]
    reason: str = ""  # Completed, Error, OOMKilled, ...
    message: Optional[dict[str, Any]] = None  # the termination message, parsed (None: absent or not JSON)
    raw_message: str = ""
    finished_at: Optional[datetime] = None


@dataclass(frozen=True)
class PodObs:
    name: str
    role: str  # agent | grade
    phase: str  # Pending | Running | Succeeded | Failed | Unknown
    created_at: datetime
    started_at: Optional[datetime] = None  # status.startTime (the kubelet accepted the pod)
    deleting: bool = False
    reason: str = ""  # status.reason: Evicted, DeadlineExceeded, ...
    message: str = ""
    terminated: Optional[Terminated] = None  # the main container (first container)
    waiting_reason: str = ""  # ImagePullBackOff, CreateContainerConfigError, ...
    unschedulable: str = ""  # PodScheduled=False message
    pod_ip: str = ""  # status.podIP (an agent pod's warmup servers are relayed from there to grading)

    @property
    def done(self) -> bool:
        """The pod's main container will not run any more (restartPolicy Never): the pod phase is final, or
        the main container has terminated while service sidecars are still shutting down."""
        return self.phase in TERMINAL_PHASES or self.terminated is not None


def parse_pod(obj: dict[str, Any]) -> PodObs:
    meta, spec, status = obj.get("metadata", {}), obj.get("spec", {}), obj.get("status", {}) or {}
    main = (spec.get("containers") or [{}])[0].get("name")
    term: Optional[Terminated] = None
    waiting = ""
    for cs in status.get("containerStatuses") or []:
        if cs.get("name") != main:
            continue
        state = cs.get("state") or {}
        if "terminated" in state and state["terminated"] is not None:
            t = state["terminated"]
            raw = t.get("message") or ""
            term = Terminated(exit_code=t.get("exitCode"), reason=t.get("reason") or "",
                              message=_json_line(raw), raw_message=raw,
                              finished_at=parse_ts(t.get("finishedAt")))
        elif state.get("waiting"):
            waiting = state["waiting"].get("reason") or ""
    unsched = ""
    for c in status.get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            unsched = c.get("message") or c.get("reason") or "unschedulable"
    return PodObs(
        name=meta["name"], role=(meta.get("labels") or {}).get(L_ROLE, ""),
        phase=status.get("phase") or "Pending",
        created_at=parse_ts(meta.get("creationTimestamp")),
        started_at=parse_ts(status.get("startTime")),
        deleting=bool(meta.get("deletionTimestamp")),
        reason=status.get("reason") or "", message=status.get("message") or "",
        terminated=term, waiting_reason=waiting, unschedulable=unsched, pod_ip=status.get("podIP") or "",
    )


def _json_line(text: str) -> Optional[dict[str, Any]]:
    """The last line of the termination message that is a JSON object."""
    for line in reversed(text.strip().splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


@dataclass(frozen=True)
class TrialObs:
    name: str
    uid: str
    resource_version: str
    spec: TaskTrialSpec
    status: TrialStatus
    created_at: Optional[datetime] = None


def parse_trial(obj: dict[str, Any]) -> TrialObs:
    meta = obj["metadata"]
    return TrialObs(name=meta["name"], uid=meta.get("uid", ""), resource_version=meta.get("resourceVersion", ""),
                    spec=TaskTrialSpec.model_validate(obj["spec"]),
                    status=TrialStatus.model_validate(_known(obj.get("status") or {}, TrialStatus)),
                    created_at=parse_ts(meta.get("creationTimestamp")))


@dataclass(frozen=True)
class RunObs:
    name: str
    namespace: str
    uid: str
    generation: int
    resource_version: str
    spec: Optional[BenchmarkRunSpec]  # None when the spec does not validate (see spec_error)
    status: RunStatus
    created_at: Optional[datetime] = None
    spec_error: str = ""
    trials: list[TrialObs] = field(default_factory=list)
    pods: dict[str, PodObs] = field(default_factory=dict)


def parse_run(obj: dict[str, Any]) -> RunObs:
    meta = obj["metadata"]
    spec, error = None, ""
    try:
        spec = BenchmarkRunSpec.model_validate(obj.get("spec") or {})
        known = known_agents()
        if spec.agent.harness not in known:
            spec, error = None, (f"spec does not validate: field 'agent.harness': unknown harness "
                                 f"{spec.agent.harness!r} (known: {', '.join(known)})")
    except ValueError as e:
        error = f"spec does not validate: {e}"
    return RunObs(name=meta["name"], namespace=meta.get("namespace", ""), uid=meta.get("uid", ""),
                  generation=int(meta.get("generation") or 1), resource_version=meta.get("resourceVersion", ""),
                  spec=spec, status=RunStatus.model_validate(_known(obj.get("status") or {}, RunStatus)),
                  created_at=parse_ts(meta.get("creationTimestamp")), spec_error=error)


def _known(status: dict[str, Any], model: type) -> dict[str, Any]:
    """Drop status keys the model does not know (e.g. written by other tools) instead of failing."""
    names = {f.alias or n for n, f in model.model_fields.items()} | set(model.model_fields)
    return {k: v for k, v in status.items() if k in names}
