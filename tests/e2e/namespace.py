"""A fresh namespace for an end-to-end test's runs, with an S3 endpoint on the pod bridge and its credentials Secret."""
from __future__ import annotations

import uuid
from typing import Any, Callable

from tests.e2e.s3 import ACCESS, S3Outage
from tests.polling import wait_for


def new_namespace(core, prefix: str) -> str:
    """A namespace named `<prefix>-<random>`, returned once pods can be created in it (its default service
    account exists)."""
    from kubernetes import client

    ns = f"{prefix}-{uuid.uuid4().hex[:6]}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
    wait_for("the namespace's default service account",
             lambda: core.list_namespaced_service_account(ns, field_selector="metadata.name=default").items, 60)
    return ns


def s3_for(core, ns: str, host: str, bucket: str) -> S3Outage:
    """A moto S3 reachable from pods at `host`, with `bucket`, and the Secret "s3" holding its keys in `ns`."""
    s3 = S3Outage.start(host)
    s3.client().create_bucket(Bucket=bucket)
    core.create_namespaced_secret(ns, {"metadata": {"name": "s3"}, "stringData": {
        "AWS_ACCESS_KEY_ID": ACCESS["aws_access_key_id"], "AWS_SECRET_ACCESS_KEY": ACCESS["aws_secret_access_key"]}})
    return s3


def wait_run_finished(get_run: Callable[[str], dict[str, Any]], name: str, timeout: float, operator,
                      log: Callable[[str], None], tail: int = 80) -> dict[str, Any]:
    """The BenchmarkRun `name` (as `get_run(name)` reads it) once its phase is Succeeded or Failed; on a timeout the
    operator's log tail goes to `log` before the AssertionError."""
    def done():
        r = get_run(name)
        return r if (r.get("status") or {}).get("phase") in ("Succeeded", "Failed") else None
    try:
        return wait_for(f"BenchmarkRun {name} to finish", done, timeout, every=1)
    except AssertionError:
        log(f"operator log tail:\n{operator.tail(tail)}")
        raise
