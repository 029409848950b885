"""The Kubernetes API calls the operator makes (one small adapter over the official client)."""
from __future__ import annotations

import base64
import json
from datetime import datetime, timezone
from typing import Any, Callable, Iterator, Optional

import kubernetes
from kubernetes.client import ApiClient, CoreV1Api, CustomObjectsApi
from kubernetes.client.exceptions import ApiException

from ..settings import Settings
from .model import GROUP, RUNS, TRIALS, VERSION
from .names import MANAGED_BY, MANAGER


# (connect, read) seconds of every API call that does not set its own: one hung connection (an apiserver restart
# mid-request, a half-open TCP connection) must fail that call, not stall the single reconcile loop for good
REQUEST_TIMEOUT = (10.0, 120.0)


class _BoundedApiClient(ApiClient):
    def call_api(self, *args: Any, _request_timeout: Any = None, **kwargs: Any):
        return super().call_api(*args, _request_timeout=_request_timeout or REQUEST_TIMEOUT, **kwargs)


def api_client(settings: Settings) -> ApiClient:
    cfg = kubernetes.client.Configuration()
    if settings.kubeconfig:
        kubernetes.config.load_kube_config(config_file=settings.kubeconfig, client_configuration=cfg)
    else:
        try:
            kubernetes.config.load_incluster_config(client_configuration=cfg)
        except kubernetes.config.ConfigException:
            kubernetes.config.load_kube_config(client_configuration=cfg)
    return _BoundedApiClient(cfg)


# objects per LIST page: a pass holds one page of raw objects at a time, never the whole namespace
LIST_PAGE = 500


def pages(fetch: Callable[[Optional[str]], dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Every item of a chunked LIST (`limit` + `continue`); `fetch(token)` returns one page as JSON."""
    token: Optional[str] = None
    while True:
        page = fetch(token)
        yield from page.get("items") or []
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return


def conflict(e: ApiException) -> bool:
    return e.status == 409


def not_found(e: ApiException) -> bool:
    return e.status == 404


class Kube:
    def __init__(self, client: ApiClient):
        self.client = client
        self.core = CoreV1Api(client)
        self.custom = CustomObjectsApi(client)

    # ---- reads
    def list_runs(self, ns: str) -> list[dict[str, Any]]:
        return self.custom.list_namespaced_custom_object(GROUP, VERSION, ns, RUNS)["items"]

    def run_namespaces(self) -> set[str]:
        """The namespaces holding BenchmarkRuns, from one cluster-wide LIST (cluster-wide mode)."""
        return {obj["metadata"]["namespace"] for obj in pages(lambda token: self.custom.list_cluster_custom_object(
            GROUP, VERSION, RUNS, limit=LIST_PAGE, **({"_continue": token} if token else {})))}

    def list_trials(self, ns: str) -> Iterator[dict[str, Any]]:
        return pages(lambda token: self.custom.list_namespaced_custom_object(
            GROUP, VERSION, ns, TRIALS, label_selector=f"{MANAGED_BY}={MANAGER}", limit=LIST_PAGE,
            **({"_continue": token} if token else {})))

    def list_pods(self, ns: str) -> Iterator[dict[str, Any]]:
        """Pods as plain JSON (as `kubectl get -o json` shows them): the client's model objects cost ~15x the
        time and twice the memory of the raw JSON (bench/RESULTS.md)."""
        def fetch(token: Optional[str]) -> dict[str, Any]:
            r = self.core.list_namespaced_pod(ns, label_selector=f"{MANAGED_BY}={MANAGER}", limit=LIST_PAGE,
                                              _preload_content=False, **({"_continue": token} if token else {}))
            return json.loads(r.data)
        return pages(fetch)

    def configmap_data(self, ns: str, name: str) -> dict[str, bytes]:
        cm = self.core.read_namespaced_config_map(name, ns)
        data = {k: v.encode() for k, v in (cm.data or {}).items()}
        data.update({k: base64.b64decode(v) for k, v in (cm.binary_data or {}).items()})
        return data

    def secret_data(self, ns: str, name: str) -> dict[str, str]:
        sec = self.core.read_namespaced_secret(name, ns)
        return {k: base64.b64decode(v).decode() for k, v in (sec.data or {}).items()}

    # ---- writes (create: 409 AlreadyExists means a previous pass did it: fine)
    def create_pod(self, ns: str, manifest: dict[str, Any]) -> bool:
        try:
            self.core.create_namespaced_pod(ns, manifest)
            return True
        except ApiException as e:
            if conflict(e):
                return False
            raise

    def delete_pod(self, ns: str, name: str) -> None:
        try:
            self.core.delete_namespaced_pod(name, ns, grace_period_seconds=5)
        except ApiException as e:
            if not not_found(e):
                raise

    def create_trial(self, ns: str, body: dict[str, Any]) -> bool:
        try:
            self.custom.create_namespaced_custom_object(GROUP, VERSION, ns, TRIALS, body)
            return True
        except ApiException as e:
            if conflict(e):
                return False
            raise

    def apply_configmap(self, ns: str, body: dict[str, Any]) -> None:
        """Create, or replace when it exists (a re-stage after a lost status write)."""
        try:
            self.core.create_namespaced_config_map(ns, body)
        except ApiException as e:
            if not conflict(e):
                raise
            self.core.replace_namespaced_config_map(body["metadata"]["name"], ns, body)

    def patch_status(self, ns: str, plural: str, name: str, status: dict[str, Any],
                     resource_version: Optional[str]) -> str:
        """Merge-patch .status; with `resource_version` the write fails (409) if the object changed since.
        Returns the new resourceVersion."""
        body: dict[str, Any] = {"status": status}
        if resource_version:
            body["metadata"] = {"resourceVersion": resource_version}
        out = self.custom.patch_namespaced_custom_object_status(GROUP, VERSION, ns, plural, name, body)
        return out["metadata"]["resourceVersion"]

    def event(self, ns: str, involved: dict[str, Any], reason: str, message: str, type_: str) -> None:
        now = datetime.now(timezone.utc)
        body = {
            "metadata": {"generateName": f"{involved['name'][:200]}.", "namespace": ns},
            "involvedObject": {**involved, "namespace": ns},
            "reason": reason, "message": message[:1024], "type": type_,
            "source": {"component": "clawkube-operator"},
            "firstTimestamp": now.isoformat(), "lastTimestamp": now.isoformat(), "count": 1,
            "reportingComponent": "clawkube.io/operator", "reportingInstance": "clawkube-operator",
        }
        self.core.create_namespaced_event(ns, body)
