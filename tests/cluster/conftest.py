"""Session fixtures for tests that need the whole single-node cluster (marker `cluster`); tests/e2e imports them.

- `cluster`: reuses $CLAWKUBE_CLUSTER_KUBECONFIG or the machine's running cluster, else starts one with up.sh in
  $CLAWKUBE_CLUSTER_STATE (default .state/cluster) and stops it at the end (unless CLAWKUBE_CLUSTER_KEEP=1).
  Skips with the reason when no cluster can be started here; CLAWKUBE_REQUIRE_CLUSTER=1 turns that into a failure.
- `cluster_images`: images/build.sh into the cluster's containerd (once per session; CLAWKUBE_SKIP_IMAGE_BUILD=1 skips
  the build when the images are already imported). Returns {"operator"|"agent"|"grader": image reference}.
- `cluster_api`: a kubernetes ApiClient for the cluster's admin; `cluster_namespace`: a fresh namespace per test.
"""
from __future__ import annotations

import os
import subprocess
import time
import uuid

import pytest

from tests.polling import wait_for
from tests.cluster.cluster import IMAGES, Cluster, build_images, unavailable_reason


@pytest.fixture(scope="session")
def cluster():
    reason = unavailable_reason()
    if reason:
        if os.environ.get("CLAWKUBE_REQUIRE_CLUSTER") == "1":
            pytest.fail(f"CLAWKUBE_REQUIRE_CLUSTER=1 but no cluster can be started: {reason}")
        pytest.skip(f"no single-node cluster: {reason}")
    try:
        c = Cluster.ensure()
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:  # up.sh could not start (or build) it here
        if os.environ.get("CLAWKUBE_REQUIRE_CLUSTER") == "1":
            pytest.fail(f"CLAWKUBE_REQUIRE_CLUSTER=1 but tests/cluster/up.sh failed: {e}")
        pytest.skip(f"no single-node cluster: tests/cluster/up.sh failed: {str(e)[-1500:]}")
    yield c
    if os.environ.get("CLAWKUBE_CLUSTER_KEEP") != "1":
        c.stop()


@pytest.fixture(scope="session")
def cluster_images(cluster) -> dict[str, str]:
    if os.environ.get("CLAWKUBE_SKIP_IMAGE_BUILD") != "1":
        build_images()
    return dict(IMAGES)


@pytest.fixture(scope="session")
def cluster_api(cluster):
    from kubernetes import config

    client = config.new_client_from_config(config_file=str(cluster.kubeconfig))
    yield client
    client.close()


@pytest.fixture
def cluster_namespace(cluster_api):
    from kubernetes import client

    core = client.CoreV1Api(cluster_api)
    name = f"t-{uuid.uuid4().hex[:8]}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    # pods are refused until the namespace's default service account exists
    wait_for(f"namespace {name}'s default service account",
             lambda: core.list_namespaced_service_account(name, field_selector="metadata.name=default").items, 60)
    yield name
    core.delete_namespace(name)
