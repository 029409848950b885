"""The agent and grading pod manifests (pure).

The firewall on the cluster: the agent pod mounts only the task's agent bundle ConfigMap; the grading
bundle (grader code, ground truth) is mounted only by the grading pod, which the operator creates after
the agent pod has terminated. Neither pod gets a service-account token. The agent pod hands its
workspace/transcript to the grading pod through the artifact store (CLAWKUBE_ARTIFACT_URI). Agent-role and grading
pods get presigned grants instead of the store's credentials (CLAWKUBE_UPLOAD_GRANT: write under their own prefix
only; CLAWKUBE_READ_GRANTS: the objects they read, for a grading pod the agent's artifacts), so nothing in them - the
agent, or agent code a grader runs - can read other trials' or grading output, or rewrite earlier results.

    agent pod   <trial>-a<N>-agent      init "unpack": agent bundle ConfigMap -> /clawkube/bundle
                                        main "agent":  clawkube pod agent --bundle --workspace --out ...
                                        "svc-<name>":  one sidecar per task service (PodParams.services)
                                        "svc-warmup":  a task with Warmup lines: runs them as root, then relays
                                                       the servers they started to grading (_add_warmup_sidecar)
    grading pod <trial>-a<N>-grade[-G]  init "unpack": grading bundle ConfigMap -> /clawkube/grading
                                        main "grade":  clawkube pod grade --grading --agent-artifacts --out
                                                       (+ CLAWKUBE_WARMUP_PEER: the agent pod's relay)
Both see the workspace at the benchmark's mount point (`workspace_path`) and its read-only views
(`_add_initial_workspace`: WildClawBench's /app), as in the benchmark's container.

EvoClawBench stages (decide_trial.STAGES) are agent pods with `--stage`: `<trial>-a<N>-author` (PreSkill
authoring), `-first` (PostSkill first run, with the task's services), `-summary` (gets the first run's agent
artifacts URI and its score as CLAWKUBE_FIRST_RUN_URI / CLAWKUBE_FIRST_RUN), and a grading pod `-first-grade`
for the first run. The graded execution of those modes gets CLAWKUBE_SKILLS_URI: the skills its last stage wrote.
Skill-writing stages get no service sidecars (they see no task files and no services).

Every container has a read-only root filesystem: /tmp (also HOME: uid 65534 cannot write the image's HOME)
and the /clawkube folders are emptyDirs; service sidecars get their own /tmp.
Agent pods only: `runtimeClassName` (PodParams.runtime_class, e.g. gVisor) and the model API Secret as env of
the agent container (PodParams.model_api_secret; for harnesses that pass credentials through, never a sidecar
and never a grading pod).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Optional

from ..agents.api import BASE_URL_ENV as MODEL_BASE_URL_ENV, KEY_ENV as MODEL_KEY_ENV
from ..agents.registry import get_agent
from ..artifacts import grants
from ..contracts.pod_env import FirstRunRecord, PodEnv, judge_env
from ..runspec import BenchmarkRunSpec
from ..benchmarks import registry
from ..benchmarks.claweval import sidecar as claweval_sidecar
from ..contracts.manifests import TrialMounts
from ..lifecycle.bundle import AGENT_MANIFEST
from ..services import sidecars
from ..tasks.model import ServiceSpec
from .model import API_VERSION, TaskTrialSpec
from ..execution.relay import RELAY_PORT
from .names import L_ATTEMPT, L_ROLE, L_STAGE, L_WARMUP, trial_labels

BUNDLE_KEY = "bundle.tar.gz"
ROOT = "/clawkube"
UNPACK = ("import pathlib, sys; from clawkube.lifecycle.bundle import extract; "
          "extract(pathlib.Path(sys.argv[1]).read_bytes(), pathlib.Path(sys.argv[2]), *sys.argv[3:])")
SCRATCH = f"{ROOT}/work"  # the supervisor's scratch: the agent's HOME and skills, the grader's scratch
DEFAULT_WORKSPACE = f"{SCRATCH}/workspace"  # a benchmark without a mount point of its own
INITIAL = f"{ROOT}/initial"  # the agent bundle's workspace/ as handed over (TrialMounts.initial_workspace)


def _plugin(task_format: str):
    try:
        return registry.get(task_format)
    except Exception:  # an unknown or empty format (older trials): no mount point, no trial mounts
        return None


def workspace_path(task_format: str) -> str:
    """Where agent and grader see the task's workspace in their pods: the benchmark's mount point
    (Benchmark.workspace_mount, e.g. /tmp_workspace), as in its own container and the local sandbox."""
    plugin = _plugin(task_format)
    return (plugin.workspace_mount if plugin is not None else None) or DEFAULT_WORKSPACE


def trial_mounts(task_format: str) -> TrialMounts:
    plugin = _plugin(task_format)
    return plugin.trial_mounts if plugin is not None else TrialMounts()


@dataclass(frozen=True)
class PodParams:
    name: str
    namespace: str
    trial: str
    trial_uid: str
    spec: TaskTrialSpec
    run_spec: BenchmarkRunSpec
    image: str
    deadline_seconds: int
    attempt: int
    artifact_uri: Optional[str]  # where this pod uploads --out
    endpoint: Optional[str] = None  # S3 endpoint for the pods
    region: Optional[str] = None
    credentials_secret: Optional[str] = None  # Secret with AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY
    image_pull_policy: str = "IfNotPresent"
    service_account: Optional[str] = None
    services: tuple[ServiceSpec, ...] = ()  # the task's mock services: sidecars of the agent pod
    runtime_class: Optional[str] = None  # agent pods' runtimeClassName
    model_api_secret: Optional[str] = None  # Secret: the harness's credential keys -> env of the agent container
    stage: str = "execution"  # agent pods: execution | authoring | first_run | summary
    skills_uri: Optional[str] = None  # execution pods of PreSkill/PostSkill: the authored skills
    first_run_uri: Optional[str] = None  # summary pods: the first run's agent artifacts
    first_run: Optional[FirstRunRecord] = None  # summary pods: the first run's score and errors
    # agent-role pods (Settings.presigned_grants): JSON of a presigned POST under artifact_uri, and of presigned GET
    # URLs of what the pod reads ({s3 uri: {relative path: url}}); with them the pod gets no store credentials
    upload_grant: Optional[str] = None
    read_grants: Optional[str] = None
    claweval_services_image: Optional[str] = None  # CLAW-Eval trials: the "svc-claweval" sidecar's image
    warmup_peer: Optional[str] = None  # grading pods: the agent pod's warmup relay (execution/relay.py)


def _s3_env(p: PodParams) -> list[dict[str, Any]]:
    env: list[dict[str, Any]] = PodEnv(artifact_uri=p.artifact_uri).k8s()
    if p.endpoint:
        env += [{"name": "AWS_ENDPOINT_URL", "value": p.endpoint}, {"name": "AWS_ENDPOINT_URL_S3", "value": p.endpoint}]
    if p.region:
        env.append({"name": "AWS_DEFAULT_REGION", "value": p.region})
    if p.upload_grant:  # presigned: no credentials in the pod
        env += PodEnv(upload_grant=p.upload_grant, read_grants=p.read_grants).k8s()
    elif p.credentials_secret:
        env += [{"name": k, "valueFrom": {"secretKeyRef": {"name": p.credentials_secret, "key": k}}}
                for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")]
    return env


def _hardened() -> dict[str, Any]:
    """Every container's securityContext (a fresh dict each time)."""
    return {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}}


def _pod(p: PodParams, role: str, bundle_cm: str, bundle_dir: str, argv: list[str],
         env: list[dict[str, Any]]) -> dict[str, Any]:
    res = {"cpu": p.run_spec.resources.cpu, "memory": p.run_spec.resources.memory}
    mounts = [{"name": "bundle", "mountPath": bundle_dir}, {"name": "work", "mountPath": SCRATCH},
              {"name": "out", "mountPath": f"{ROOT}/out"}, {"name": "tmp", "mountPath": "/tmp"}]
    ws = workspace_path(p.spec.task_format)
    if ws != DEFAULT_WORKSPACE:  # the benchmark's mount point: a volume of its own there
        mounts.append({"name": "workspace", "mountPath": ws})
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "activeDeadlineSeconds": p.deadline_seconds,
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "securityContext": {"runAsNonRoot": True, "runAsUser": 65534, "runAsGroup": 65534, "fsGroup": 65534,
                            "seccompProfile": {"type": "RuntimeDefault"}},
        "volumes": [
            {"name": "bundle-src", "configMap": {"name": bundle_cm, "items": [{"key": BUNDLE_KEY, "path": BUNDLE_KEY}]}},
            {"name": "bundle", "emptyDir": {}}, {"name": "work", "emptyDir": {}},
            {"name": "out", "emptyDir": {}}, {"name": "tmp", "emptyDir": {}},
            *([{"name": "workspace", "emptyDir": {}}] if ws != DEFAULT_WORKSPACE else []),
        ],
        "initContainers": [{
            "name": "unpack", "image": p.image, "imagePullPolicy": p.image_pull_policy,
            "command": ["python", "-c", UNPACK, f"{ROOT}/bundle-src/{BUNDLE_KEY}", bundle_dir],
            "volumeMounts": [{"name": "bundle-src", "mountPath": f"{ROOT}/bundle-src", "readOnly": True},
                             {"name": "bundle", "mountPath": bundle_dir}, {"name": "tmp", "mountPath": "/tmp"}],
            "resources": {"requests": res, "limits": res}, "securityContext": _hardened(),
        }],
        "containers": [{
            "name": role, "image": p.image, "imagePullPolicy": p.image_pull_policy, "command": argv,
            # uid 65534 cannot write the image's HOME (/home/clawkube, uid 10001): HOME is the /tmp emptyDir
            "env": [{"name": "HOME", "value": "/tmp"}, *env],
            "volumeMounts": mounts, "resources": {"requests": res, "limits": res}, "securityContext": _hardened(),
            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
        }],
    }
    if p.service_account:
        spec["serviceAccountName"] = p.service_account
    _add_initial_workspace(spec, p, bundle_cm)
    labels = {**trial_labels(p.spec.run, p.trial, p.spec.task_id), L_ROLE: role, L_ATTEMPT: str(p.attempt),
              L_STAGE: p.stage.replace("_", "-")}
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": p.name, "namespace": p.namespace, "labels": labels,
            "annotations": {"clawkube.io/content-hash": p.spec.content_hash},
            "ownerReferences": [{"apiVersion": API_VERSION, "kind": "TaskTrial", "name": p.trial,
                                 "uid": p.trial_uid, "controller": True, "blockOwnerDeletion": True}],
        },
        "spec": spec,
    }


def _add_initial_workspace(spec: dict[str, Any], p: PodParams, bundle_cm: str) -> None:
    """The benchmark's read-only view of the workspace as handed over (TrialMounts.initial_workspace, WildClawBench's
    /app), in agent and grading pods alike, as locally: an init container unpacks the agent bundle's workspace/
    (the agent's own material, never grading-only files) into a volume the main container mounts read-only there."""
    at = trial_mounts(p.spec.task_format).initial_workspace
    if not at:
        return
    spec["volumes"] += [{"name": "initial", "emptyDir": {}}]
    src = "bundle-src"  # an agent pod's own bundle; a grading pod mounts the agent bundle for this alone
    if bundle_cm != p.spec.agent_bundle:
        src = "agent-bundle-src"
        spec["volumes"].append({"name": src, "configMap": {
            "name": p.spec.agent_bundle, "items": [{"key": BUNDLE_KEY, "path": BUNDLE_KEY}]}})
    init = spec["initContainers"][0]
    spec["initContainers"].append({
        **init, "name": "initial",
        "command": ["python", "-c", UNPACK, f"{ROOT}/{src}/{BUNDLE_KEY}", INITIAL, "workspace"],
        "volumeMounts": [{"name": src, "mountPath": f"{ROOT}/{src}", "readOnly": True},
                         {"name": "initial", "mountPath": INITIAL}, {"name": "tmp", "mountPath": "/tmp"}],
        "securityContext": _hardened()})
    spec["containers"][0]["volumeMounts"].append({"name": "initial", "mountPath": at, "readOnly": True})


def agent_pod(p: PodParams) -> dict[str, Any]:
    a = p.run_spec.agent
    argv = ["clawkube", "pod", "agent", "--bundle", f"{ROOT}/bundle", "--workspace", workspace_path(p.spec.task_format),
            "--scratch", SCRATCH, "--out", f"{ROOT}/out", "--harness", a.harness]
    if p.stage != "execution":
        argv += ["--stage", p.stage]
    if a.model:
        argv += ["--model", a.model]
    env = PodEnv(trial=p.trial, attempt=p.attempt, mode=p.spec.mode, error_injection_rate=p.run_spec.error_injection_rate,
                 seed=p.run_spec.seed, timeout_seconds=p.run_spec.timeout_seconds or None, agent_args=a.args or None,
                 skills_uri=p.skills_uri or None, first_run_uri=p.first_run_uri or None,
                 first_run=p.first_run).k8s()
    pod = _pod(p, "agent", p.spec.agent_bundle, f"{ROOT}/bundle", argv, env + _s3_env(p))
    if p.runtime_class:
        pod["spec"]["runtimeClassName"] = p.runtime_class
    if p.model_api_secret:
        pod["spec"]["containers"][0]["env"] += model_api_secret_env(p.model_api_secret, a.harness, p.run_spec.judge)
    pod["spec"]["containers"][0]["env"] += model_api_env(a.api)
    if p.services and p.stage in ("execution", "first_run"):
        _add_service_sidecars(pod, p)
    if p.spec.task_format == CLAWEVAL_FORMAT and p.claweval_services_image and p.stage in ("execution", "first_run"):
        _add_claweval_sidecar(pod, p)
    if p.spec.warmup and p.stage in ("execution", "first_run"):
        _add_warmup_sidecar(pod, p)
    return pod


WARMUP_CONTAINER = "svc-warmup"
WARMUP_DIR = f"{ROOT}/warmup"
# a container root's file capabilities (as the local sandbox gives warmup: execution/bwrap.py ROOT_CAPS): enough for
# apt-get (drops to _apt), pip and npm installs, chown of what it made; nothing that reaches past the container
WARMUP_CAPS = ["CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "SETUID", "SETGID", "KILL"]
WARMUP_REQUESTS = {"cpu": "100m", "memory": "128Mi"}


def _add_warmup_sidecar(pod: dict[str, Any], p: PodParams) -> None:
    """The task's Warmup as upstream runs it, as root, in a sidecar of the agent pod (lifecycle/warmup_sidecar.py):
    the agent image, its own writable root filesystem (what the lines install stays there), sharing the workspace,
    the agent's HOME and the pod's network; the servers the lines start keep running after the agent container
    ended, relayed to the grading pod on RELAY_PORT. The agent container stays non-root and read-only; the
    handshake is two volumes (contracts/warmup.py), each written by one side only."""
    spec = pod["spec"]
    main = spec["containers"][0]
    res = {"cpu": p.run_spec.resources.cpu, "memory": p.run_spec.resources.memory}
    spec["volumes"] += [{"name": "warmup-request", "emptyDir": {}}, {"name": "warmup-status", "emptyDir": {}}]
    main["volumeMounts"] += [{"name": "warmup-request", "mountPath": f"{WARMUP_DIR}/request"},
                             {"name": "warmup-status", "mountPath": f"{WARMUP_DIR}/status", "readOnly": True}]
    main["env"] += PodEnv(warmup_dir=WARMUP_DIR).k8s()
    shared = [m for m in main["volumeMounts"] if m["name"] in ("work", "workspace")]
    spec["containers"].append({
        "name": WARMUP_CONTAINER, "image": p.image, "imagePullPolicy": p.image_pull_policy,
        "command": ["clawkube", "pod", "warmup", "--bundle", f"{ROOT}/bundle", "--control", WARMUP_DIR],
        "env": [{"name": "HOME", "value": "/root"}],
        "volumeMounts": [{"name": "bundle", "mountPath": f"{ROOT}/bundle", "readOnly": True}, *shared,
                         {"name": "warmup-request", "mountPath": f"{WARMUP_DIR}/request", "readOnly": True},
                         {"name": "warmup-status", "mountPath": f"{WARMUP_DIR}/status"}],
        "ports": [{"name": "warmup-relay", "containerPort": RELAY_PORT, "protocol": "TCP"}],
        "resources": {"requests": WARMUP_REQUESTS, "limits": res},
        "securityContext": {"runAsUser": 0, "runAsGroup": 0, "runAsNonRoot": False, "allowPrivilegeEscalation": False,
                            "readOnlyRootFilesystem": False, "capabilities": {"drop": ["ALL"], "add": WARMUP_CAPS}},
    })
    pod["metadata"]["labels"][L_WARMUP] = "true"  # the NetworkPolicy lets grading pods reach its relay port


def model_api_env(api) -> list[dict[str, Any]]:
    """spec.agent.api for the agent pod (agents/api.py): the base URL, and the key from its Secret; the adapter
    maps both to the harness's own mechanism. Never on grading pods."""
    if api is None or not api.base_url:
        return []
    env: list[dict[str, Any]] = [{"name": MODEL_BASE_URL_ENV, "value": api.base_url}]
    if api.api_key_secret is not None:
        env.append({"name": MODEL_KEY_ENV, "valueFrom": {"secretKeyRef": {
            "name": api.api_key_secret.name, "key": api.api_key_secret.key}}})
    return env


def model_api_secret_env(secret: str, harness: str, judge) -> list[dict[str, Any]]:
    """The operator's model API Secret (Settings.model_api_secret) for the agent container: only the keys named
    by the harness's `Agent.credential_env`, each on its own (optional: a key the Secret lacks stays unset), never
    the Secret as a whole (envFrom), so that other keys in it, such as the judge's, never reach an agent. A key
    the run's judge takes from this same Secret is left out even when the harness would read that name."""
    try:
        names = get_agent(harness).credential_env
    except KeyError:  # an unknown harness: its pod fails on the name anyway; it gets nothing
        return []
    ref = getattr(judge, "api_key_secret", None)
    judge_key = ref.key if ref is not None and ref.name == secret else None
    return [{"name": k, "valueFrom": {"secretKeyRef": {"name": secret, "key": k, "optional": True}}}
            for k in names if k != judge_key]


SIDECAR_RESOURCES = {"cpu": "100m", "memory": "128Mi"}


def _add_service_sidecars(pod: dict[str, Any], p: PodParams) -> None:
    """The task's services as sidecars on localhost (services/sidecars.py), sharing the token volume."""
    spec = pod["spec"]
    main = spec["containers"][0]
    spec["volumes"] += [sidecars.VOLUME, {"name": "svc-tmp", "emptyDir": {}}]
    main["volumeMounts"].append(sidecars.MOUNT)
    main["env"] += sidecars.AGENT_ENV
    containers = sidecars.sidecar_containers(
        list(p.services), image=p.image, image_pull_policy=p.image_pull_policy,
        bundle_mount={"name": "bundle", "mountPath": f"{ROOT}/bundle"}, fixtures_dir=f"{ROOT}/bundle/services/fixtures",
        trial_key=f"{p.spec.task_id}/{p.spec.trial_index}", error_injection_rate=p.run_spec.error_injection_rate,
        seed=p.run_spec.seed, resources={"requests": SIDECAR_RESOURCES, "limits": SIDECAR_RESOURCES})
    for c in containers:  # read-only root like the rest, with a /tmp apart from the agent's
        c["securityContext"] = {**c["securityContext"], **_hardened()}
        c["volumeMounts"].append({"name": "svc-tmp", "mountPath": "/tmp"})
    spec["containers"] += containers


CLAWEVAL_FORMAT = "claw-eval"
CLAWEVAL_SIDECAR_REQUESTS = {"cpu": "100m", "memory": "256Mi"}
CLAWEVAL_SIDECAR_LIMITS = {"cpu": "1", "memory": "768Mi"}  # up to 4 mock services (uvicorn each), gateway, user


def grading_image(run_spec: BenchmarkRunSpec, task_format: str, default: str) -> str:
    """The grading pod's image: for a CLAW-Eval trial the run's CLAW-Eval image (the checkout with its graders)."""
    ce = run_spec.claw_eval
    return ce.image if task_format == CLAWEVAL_FORMAT and ce is not None and ce.image else default


def claweval_services_image(run_spec: BenchmarkRunSpec, task_format: str) -> Optional[str]:
    """The "svc-claweval" sidecar's image for a CLAW-Eval trial (None: no sidecar)."""
    ce = run_spec.claw_eval
    return ce.services_image_ref() if task_format == CLAWEVAL_FORMAT and ce is not None else None


def _add_claweval_sidecar(pod: dict[str, Any], p: PodParams) -> None:
    """A CLAW-Eval trial's environment as one sidecar (benchmarks/claweval/sidecar.py) in the CLAW-Eval services
    image: the task's real mock services behind the tool gateway on the task's own ports, and the simulated user
    (on the run's judge: this container's env only, never the agent container's). It reads which task from the
    unpacked agent bundle (read-only) and takes its admin token from the shared "services" volume."""
    spec = pod["spec"]
    main = spec["containers"][0]
    if sidecars.VOLUME not in spec["volumes"]:
        spec["volumes"].append(sidecars.VOLUME)
        main["volumeMounts"].append(sidecars.MOUNT)
        main["env"] += sidecars.AGENT_ENV
    spec["volumes"].append({"name": "claweval-tmp", "emptyDir": {}})
    main["env"].append({"name": claweval_sidecar.ADMIN_PORT_ENV, "value": str(claweval_sidecar.ADMIN_PORT)})
    env = [{"name": "HOME", "value": "/tmp"}, *sidecars.AGENT_ENV,
           *PodEnv(error_injection_rate=p.run_spec.error_injection_rate, seed=p.run_spec.seed).k8s(),
           {"name": "CLAWKUBE_TRIAL_KEY", "value": f"{p.spec.task_id}/{p.spec.trial_index}"},
           *judge_env(p.run_spec.judge)]  # the simulated user's model: this container only
    spec["containers"].append({
        "name": claweval_sidecar.CONTAINER, "image": p.claweval_services_image,
        "imagePullPolicy": p.image_pull_policy,
        "command": ["python", "-m", "clawkube.benchmarks.claweval.sidecar", "--manifest",
                    f"{ROOT}/bundle/{AGENT_MANIFEST}"],
        "env": env,
        "volumeMounts": [{"name": "bundle", "mountPath": f"{ROOT}/bundle", "readOnly": True},
                         {**sidecars.MOUNT, "readOnly": True}, {"name": "claweval-tmp", "mountPath": "/tmp"}],
        "resources": {"requests": CLAWEVAL_SIDECAR_REQUESTS, "limits": CLAWEVAL_SIDECAR_LIMITS},
        "securityContext": _hardened(),
        **({"envFrom": [{"secretRef": {"name": p.run_spec.claw_eval.services_secret}}]}
           if p.run_spec.claw_eval is not None and p.run_spec.claw_eval.services_secret else {}),
    })


def grade_pod(p: PodParams, agent_artifacts_uri: str) -> dict[str, Any]:
    argv = ["clawkube", "pod", "grade", "--grading", f"{ROOT}/grading", "--agent-artifacts", agent_artifacts_uri,
            "--out", f"{ROOT}/out", "--workspace", workspace_path(p.spec.task_format)]
    env = [*PodEnv(trial=p.trial, attempt=p.attempt, warmup_peer=p.warmup_peer).k8s(),
           *judge_env(p.run_spec.judge)]  # the judge: grading pods only, never agent pods
    return _pod(p, "grade", p.spec.grading_bundle, f"{ROOT}/grading", argv, env + _s3_env(p))
