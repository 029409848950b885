"""Execute `decide`'s actions against the API and S3. Every step is idempotent:
creates tolerate AlreadyExists, status writes carry the observed resourceVersion (a stale pass gets 409
and changes nothing), and a failed step skips the rest of that object's actions until the next pass."""
from __future__ import annotations

import base64
import json
import logging
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any, Optional

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from ..artifacts import ArtifactError, S3Store, S3Uri
from ..results.model import TrialState
from ..runspec import ArtifactStore
from ..settings import Settings
from . import conditions as C
from . import stores
from .actions import (Action, CreatePod, CreateTrial, DeletePod, Emit, PatchRun, PatchTrial, StageTasks, UploadResult,
                      UploadSummary)
from .decide_trial import TrialContext
from .metrics import Metrics
from .model import API_VERSION, RUNS, TRIALS, RunPhase, TrialStatus
from .names import L_ROLE, L_TASK, label_value, run_labels
from .observe import RunObs, TrialObs
from .podspec import BUNDLE_KEY, PodParams, agent_pod, claweval_services_image, grade_pod, grading_image
from .schedule import tokens_of
from .staging import StagingError, stage
from .kube import Kube

log = logging.getLogger("clawkube.operator")


def _dump(status: Any) -> dict[str, Any]:
    return status.model_dump(mode="json", by_alias=True)


class Actuator:
    def __init__(self, kube: Kube, settings: Settings, metrics: Metrics, now: datetime):
        self.kube, self.settings, self.metrics, self.now = kube, settings, metrics, now
        self._stores: dict[tuple[str, str], S3Store] = {}

    def execute(self, run: RunObs, actions: list[Action]) -> int:
        """Run `actions` in order; returns how many failed."""
        ns = run.namespace
        rv = {t.name: t.resource_version for t in run.trials}
        rv_run = run.resource_version
        trials = {t.name: t for t in run.trials}
        broken: set[str] = set()  # objects whose remaining actions are skipped this pass
        failed = 0
        for a in actions:
            target = _target(run, a)
            if target in broken:
                continue
            try:
                if isinstance(a, StageTasks):
                    self._stage(run)
                elif isinstance(a, CreateTrial):
                    self._create_trial(run, a)
                elif isinstance(a, CreatePod):
                    self._create_pod(run, trials[a.trial], a)
                elif isinstance(a, DeletePod):
                    self.kube.delete_pod(ns, a.name)
                elif isinstance(a, PatchTrial):
                    rv[a.name] = self.kube.patch_status(ns, TRIALS, a.name, _dump(a.status), rv.get(a.name))
                    self._observe_transition(run, trials[a.name], a.before, a.status)
                elif isinstance(a, UploadResult):
                    rv[a.trial] = self._upload(run, a, rv.get(a.trial))
                elif isinstance(a, PatchRun):
                    rv_run = self.kube.patch_status(ns, RUNS, run.name, _dump(a.status), rv_run)
                elif isinstance(a, UploadSummary):
                    rv_run = self._upload_summary(run, a, rv_run)
                elif isinstance(a, Emit):
                    self._emit(run, a)
            except (ApiException, HTTPError, ArtifactError, OSError, ValueError) as e:
                failed += 1
                broken.add(target)
                if isinstance(a, CreatePod) and isinstance(e, ApiException) and e.status in (400, 403, 422):
                    self._pod_not_created(run, trials[a.trial], "PodRejected", f"pod {a.name} rejected: {_short(e)}", rv)
                elif isinstance(a, CreatePod) and isinstance(e, ArtifactError):  # its presigned grants: S3 down
                    self._pod_not_created(run, trials[a.trial], "ArtifactStoreUnavailable",
                                          f"pod {a.name} waits for the artifact store: {_short(e)}", rv)
                self.metrics.reconcile_errors.labels(ns, "act").inc()
                level = logging.INFO if isinstance(e, ApiException) and e.status == 409 else logging.WARNING
                log.log(level, "%s/%s: %s failed: %s", ns, target, type(a).__name__, _short(e))
        return failed

    # ---- staging
    def _stage(self, run: RunObs) -> None:
        ns, spec = run.namespace, run.spec
        store_spec = stores.resolve(spec, self.settings)

        def read_s3(uri: str) -> dict[str, bytes]:
            if store_spec is None:
                raise StagingError("BadSource", "spec.tasks.s3Prefix needs an artifact store for endpoint/credentials")
            return stores.read_prefix(self._store(ns, store_spec), uri)

        def read_cm(name: str) -> dict[str, bytes]:
            try:
                return self.kube.configmap_data(ns, name)
            except ApiException as e:
                raise StagingError("BadSource", f"ConfigMap {ns}/{name}: {e.reason}") from None

        status = run.status
        try:
            root = Path(self.settings.tasks_root) if self.settings.tasks_root else None
            result = stage(run.name, spec, read_cm, read_s3, tasks_root=root)
        except (StagingError, ArtifactError) as e:
            reason, message = (e.reason, e.message) if isinstance(e, StagingError) else ("SourceUnavailable", str(e))
            conds = C.set_condition(status.conditions, C.TASKS_LOADED, False, reason, message, self.now, run.generation)
            conds = C.set_condition(conds, C.SUCCEEDED, False, reason, message, self.now, run.generation)
            new = status.model_copy(update={"phase": RunPhase.FAILED, "conditions": conds,
                                            "observed_generation": run.generation})
            self.kube.patch_status(ns, RUNS, run.name, _dump(new), run.resource_version)
            self._emit(run, Emit("BenchmarkRun", run.name, "TasksNotLoaded", f"{reason}: {message}", "Warning"))
            return
        owner = [{"apiVersion": API_VERSION, "kind": "BenchmarkRun", "name": run.name, "uid": run.uid,
                  "controller": True, "blockOwnerDeletion": True}]
        for t in result.tasks:
            for role, name, data in (("agent-bundle", t.ref.agent_bundle, t.agent_bundle),
                                     ("grading-bundle", t.ref.grading_bundle, t.grading_bundle)):
                self.kube.apply_configmap(ns, {
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": name, "namespace": ns, "ownerReferences": owner,
                                 "labels": {**run_labels(run.name), L_ROLE: role, L_TASK: label_value(t.ref.id)},
                                 "annotations": {"clawkube.io/content-hash": t.ref.content_hash}},
                    "binaryData": {BUNDLE_KEY: base64.b64encode(data).decode()},
                })
        msg = f"{len(result.tasks)} tasks staged"
        if result.errors:  # the loadable tasks run; the run ends Failed (TasksNotLoaded), never Succeeded
            msg += f"; {len(result.errors)} NOT LOADED (the run will fail): " + "; ".join(result.errors[:5])
        conds = C.set_condition(status.conditions, C.TASKS_LOADED, True,
                                "SomeTasksNotLoaded" if result.errors else "Staged", msg, self.now, run.generation)
        new = status.model_copy(update={"phase": RunPhase.PENDING, "conditions": conds,
                                        "tasks": [t.ref for t in result.tasks], "task_errors": list(result.errors),
                                        "observed_generation": run.generation})
        self.kube.patch_status(ns, RUNS, run.name, _dump(new), run.resource_version)
        self._emit(run, Emit("BenchmarkRun", run.name, "TasksLoaded", msg,
                             "Warning" if result.errors else "Normal"))

    # ---- objects
    def _create_trial(self, run: RunObs, a: CreateTrial) -> None:
        spec = a.spec
        body = {"apiVersion": API_VERSION, "kind": "TaskTrial",
                "metadata": {"name": a.name, "namespace": run.namespace,
                             "labels": {**run_labels(run.name), L_TASK: label_value(spec.task_id)},
                             "ownerReferences": [{"apiVersion": API_VERSION, "kind": "BenchmarkRun", "name": run.name,
                                                  "uid": run.uid, "controller": True, "blockOwnerDeletion": True}]},
                "spec": spec.model_dump(mode="json", by_alias=True)}
        self.kube.create_trial(run.namespace, body)

    def _create_pod(self, run: RunObs, trial, a: CreatePod) -> None:
        spec, s = run.spec, self.settings
        store = stores.resolve(spec, s)
        tctx = TrialContext(now=self.now, run=run.name, timeout_override=spec.timeout_seconds,
                            agent_grace=s.agent_grace_seconds, grade_grace=s.grade_grace_seconds)
        params = PodParams(
            name=a.name, namespace=run.namespace, trial=trial.name, trial_uid=trial.uid, spec=trial.spec,
            run_spec=spec, attempt=a.attempt, artifact_uri=a.artifact_uri,
            image=s.agent_image_for(spec.agent.harness, spec.agent.image) if a.role == "agent" else grading_image(spec, trial.spec.task_format, s.grader_image),
            deadline_seconds=tctx.agent_deadline(trial) + (tctx.grade_deadline(trial) if trial.spec.warmup else 0)
            if a.role == "agent" else tctx.grade_deadline(trial),  # a warmup sidecar serves grading too
            endpoint=store.endpoint if store else None, region=store.region if store else None,
            credentials_secret=store.credentials_secret if store else None,
            image_pull_policy=s.image_pull_policy, service_account=s.service_account,
            services=tuple(trial.spec.services) if a.role == "agent" else (),
            runtime_class=s.agent_runtime_class, model_api_secret=s.model_api_secret, stage=a.stage,
            skills_uri=a.skills_uri, first_run=a.first_run,
            first_run_uri=a.agent_artifacts_uri if a.role == "agent" else None, warmup_peer=a.warmup_peer,
            claweval_services_image=claweval_services_image(spec, trial.spec.task_format) if a.role == "agent" else None)
        if s.presigned_grants and store is not None and a.artifact_uri:  # no store credentials in any trial pod
            reads = [a.skills_uri, params.first_run_uri] if a.role == "agent" else [a.agent_artifacts_uri]
            params = self._with_grants(run.namespace, store, params, reads)
        manifest = agent_pod(params) if a.role == "agent" else grade_pod(params, a.agent_artifacts_uri or "")
        if self.kube.create_pod(run.namespace, manifest):
            self.metrics.pods_created.labels(run.namespace, run.name, a.role).inc()

    def _with_grants(self, ns: str, store_spec: ArtifactStore, p: PodParams, reads: list[Optional[str]]) -> PodParams:
        """Presigned grants for a trial pod (agent or grading role): POST under its own artifact prefix, GET of each
        object it reads (a grading pod: the agent's artifacts); valid while the pod may still be pending or running."""
        s3 = self._store(ns, store_spec)
        seconds = p.deadline_seconds + self.settings.pending_timeout_seconds + self.settings.deadline_slack_seconds
        upload = s3.upload_grant(S3Uri.parse(p.artifact_uri or "").key, seconds)
        grants = {uri: s3.read_grants(S3Uri.parse(uri).key, seconds) for uri in reads if uri}
        return replace(p, upload_grant=json.dumps(upload, sort_keys=True),
                       read_grants=json.dumps(grants, sort_keys=True) if grants else None)

    def _pod_not_created(self, run: RunObs, trial: TrialObs, reason: str, msg: str, rv: dict[str, str]) -> None:
        """The pod could not be created (the API refused it: admission, quota, invalid spec; or its presigned grants
        could not be made: the artifact store is down): say so on the trial; the next pass retries."""
        s = trial.status
        conds = C.set_condition(s.conditions, C.SCHEDULED, False, reason, msg, self.now)
        try:
            rv[trial.name] = self.kube.patch_status(run.namespace, TRIALS, trial.name,
                                                    _dump(s.model_copy(update={"conditions": conds})), rv.get(trial.name))
            if not C.get(s.conditions, C.SCHEDULED) or C.get(s.conditions, C.SCHEDULED).reason != reason:
                self._emit(run, Emit("TaskTrial", trial.name, reason, msg, "Warning"))
        except ApiException as err:
            log.warning("%s/%s: could not record that pod creation failed: %s", run.namespace, trial.name, _short(err))

    # ---- results
    def _store(self, ns: str, store_spec: ArtifactStore) -> S3Store:
        key = (ns, store_spec.model_dump_json())
        if key not in self._stores:  # one client per store and pass
            self._stores[key] = stores.open_store(store_spec, lambda name: self.kube.secret_data(ns, name),
                                                  self.settings)
        return self._stores[key]

    def _upload(self, run: RunObs, a: UploadResult, rv: Optional[str]) -> str:
        s = a.status
        store_spec = stores.resolve(run.spec, self.settings)
        artifacts = dict(s.artifacts)
        try:
            store = self._store(run.namespace, store_spec)
            base = a.prefix_uri.split("/", 3)[3]  # key part of s3://bucket/key/
            if a.result.score is not None:
                artifacts["score"] = store.put_json(base + "score.json", a.result.score.model_dump(mode="json"))
            artifacts["result"] = store.put_json(base + "result.json", a.result.model_dump(mode="json"))
            conds = C.set_condition(s.conditions, C.ARTIFACTS_UPLOADED, True, "Uploaded", a.prefix_uri, self.now)
            ok = True
        except (ArtifactError, ApiException, OSError) as e:
            self.metrics.upload_failures.labels(run.namespace, run.name).inc()
            conds = C.set_condition(s.conditions, C.ARTIFACTS_UPLOADED, False, "UploadFailed", _short(e), self.now)
            ok = False
        new = s.model_copy(update={"conditions": conds, "artifacts": artifacts,
                                   "upload_attempts": s.upload_attempts + 1, "last_upload_attempt": C.ts(self.now)})
        rv = self.kube.patch_status(run.namespace, TRIALS, a.trial, _dump(new), rv)
        if ok:
            self._emit(run, Emit("TaskTrial", a.trial, "ArtifactsUploaded", f"result.json under {a.prefix_uri}"))
        else:
            self._emit(run, Emit("TaskTrial", a.trial, "UploadFailed", _short(new.conditions[-1].message), "Warning"))
        return rv

    def _upload_summary(self, run: RunObs, a: UploadSummary, rv: Optional[str]) -> str:
        s = a.status
        uri = a.prefix_uri + "summary.json"
        try:
            store = self._store(run.namespace, stores.resolve(run.spec, self.settings))
            base = a.prefix_uri.split("/", 3)[3]
            store.put_json(base + "run.json", a.run_record)
            store.put_json(base + "summary.json", a.summary)  # last: its presence means the run's files are all there
            conds = C.set_condition(s.conditions, C.SUMMARY_UPLOADED, True, "Uploaded", uri, self.now)
            ok = True
        except (ArtifactError, ApiException, OSError) as e:
            self.metrics.upload_failures.labels(run.namespace, run.name).inc()
            conds = C.set_condition(s.conditions, C.SUMMARY_UPLOADED, False, "UploadFailed", _short(e), self.now)
            ok = False
        new = s.model_copy(update={"conditions": conds, "summary_uri": uri if ok else s.summary_uri,
                                   "summary_upload_attempts": s.summary_upload_attempts + 1,
                                   "last_summary_upload": C.ts(self.now)})
        rv = self.kube.patch_status(run.namespace, RUNS, run.name, _dump(new), rv)
        if ok:
            self._emit(run, Emit("BenchmarkRun", run.name, "SummaryUploaded", uri))
        else:
            self._emit(run, Emit("BenchmarkRun", run.name, "UploadFailed",
                                 f"summary.json: {_short(new.conditions[-1].message)}", "Warning"))
        return rv

    # ---- metrics and events
    def _observe_transition(self, run: RunObs, trial: TrialObs, before: TrialStatus, after: TrialStatus) -> None:
        m, ns, name = self.metrics, run.namespace, run.name
        for phase in after.phase_seconds:  # agent, grade and the stages of EvoClawBench modes
            if after.phase_seconds.get(phase) != before.phase_seconds.get(phase):
                m.phase_seconds.labels(phase).observe(after.phase_seconds[phase])
        if after.scheduled and not before.scheduled and trial.created_at is not None:
            m.phase_seconds.labels("queue").observe(max(0.0, (self.now - trial.created_at).total_seconds()))
        for kind, n in after.failures.items():
            if n > before.failures.get(kind, 0) and not (after.finished and after.error_kind
                                                         and after.error_kind.value == kind):
                m.retries.labels(ns, name, kind).inc(n - before.failures.get(kind, 0))
        du_in = after.usage.input_tokens - before.usage.input_tokens
        du_out = after.usage.output_tokens - before.usage.output_tokens
        du_tot = tokens_of(after.usage.plain()) - tokens_of(before.usage.plain())
        for kind, v in (("input", du_in), ("output", du_out), ("total", du_tot)):
            if v > 0:
                m.tokens.labels(ns, name, kind).inc(v)
        if after.usage.cost_usd > before.usage.cost_usd:
            m.cost.labels(ns, name).inc(after.usage.cost_usd - before.usage.cost_usd)
        for kind, n in after.usage.tool_calls_by_kind.items():
            if n > before.usage.tool_calls_by_kind.get(kind, 0):
                m.tool_calls.labels(ns, name, kind).inc(n - before.usage.tool_calls_by_kind.get(kind, 0))
        if after.finished and not before.finished:
            start, end = C.parse_ts(after.scheduled_at), C.parse_ts(after.finished_at)
            if start and end:
                m.phase_seconds.labels("total").observe((end - start).total_seconds())
            if after.state == TrialState.SUCCEEDED and after.score is not None:
                m.score.labels(ns, name, trial.spec.category).observe(after.score.score)
            elif after.error_kind is not None:
                m.failures.labels(ns, name, after.error_kind.value).inc()

    def _emit(self, run: RunObs, e: Emit) -> None:
        uid = run.uid if e.kind == "BenchmarkRun" else next((t.uid for t in run.trials if t.name == e.name), "")
        try:
            self.kube.event(run.namespace, {"apiVersion": API_VERSION, "kind": e.kind, "name": e.name, "uid": uid},
                            e.reason, e.message, e.type)
        except ApiException as err:  # an event is not worth failing the pass for
            log.warning("%s/%s: event %s not posted: %s", run.namespace, e.name, e.reason, _short(err))


def _target(run: RunObs, a: Action) -> str:
    """The object an action belongs to (a failure skips that object's later actions in the pass)."""
    if isinstance(a, (PatchRun, StageTasks, UploadSummary)):
        return run.name
    if isinstance(a, (CreatePod, DeletePod, UploadResult)):
        return a.trial
    return a.name


def _short(e: Exception) -> str:
    if isinstance(e, ApiException):
        detail = e.body or ""
        try:
            detail = json.loads(detail).get("message", detail)
        except (ValueError, AttributeError):
            pass
        return f"{e.status} {e.reason}: {str(detail)[:500]}"
    return str(e)[:500]
