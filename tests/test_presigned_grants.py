"""Presigned grants (agent-role pods hold no store credentials): the operator's side (S3Store.upload_grant,
read_grants), the pod's side (artifacts/grants.py) against a real HTTP S3 endpoint (moto server), and the pod
specs (grant env instead of the credentials Secret)."""
from __future__ import annotations

import json
import uuid
from pathlib import Path

import boto3
import pytest

from clawkube.artifacts import ArtifactError, S3Store, StoreConfig
from clawkube.artifacts.grants import READ_ENV, UPLOAD_ENV, get_files, post_folder
from clawkube.k8s.model import TaskTrialSpec
from clawkube.k8s.podspec import PodParams, agent_pod, grade_pod
from clawkube.runspec import BenchmarkRunSpec

pytestmark = pytest.mark.s3


@pytest.fixture
def store(s3_server) -> S3Store:
    name = f"g-{uuid.uuid4().hex[:8]}"
    boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1", aws_access_key_id="test",
                 aws_secret_access_key="test").create_bucket(Bucket=name)
    return S3Store(StoreConfig(bucket=name, endpoint=s3_server, access_key_id="test", secret_access_key="test"))


def test_a_folder_goes_up_through_a_post_grant_and_comes_back_through_read_grants(tmp_path: Path, store: S3Store):
    out = tmp_path / "out"
    (out / "audit").mkdir(parents=True)
    (out / "transcript.jsonl").write_text('{"type": "message"}\n')
    (out / "audit" / "mail.json").write_bytes(b'{"calls": []}')
    grant = store.upload_grant("runs/r/t/0/a1/agent/", 600)
    assert set(grant) == {"url", "fields", "prefix"} and "AWSAccessKeyId" not in json.dumps(grant["prefix"])
    keys = post_folder(out, json.loads(json.dumps(grant)))  # as it travels: JSON in an env var
    assert keys == ["runs/r/t/0/a1/agent/audit/mail.json", "runs/r/t/0/a1/agent/transcript.jsonl"]
    assert sorted(store.list("runs/")) == keys
    reads = store.read_grants("runs/r/t/0/a1/agent/", 600)
    assert set(reads) == {"audit/mail.json", "transcript.jsonl"} and all(u.startswith("http") for u in reads.values())
    back = tmp_path / "back"
    get_files(reads, back)
    assert (back / "audit" / "mail.json").read_bytes() == b'{"calls": []}'
    assert (back / "transcript.jsonl").read_text() == '{"type": "message"}\n'


def test_read_grants_refuse_paths_that_leave_the_folder_and_missing_objects_fail_fast(tmp_path: Path, store: S3Store):
    with pytest.raises(ArtifactError, match="unsafe path"):
        get_files({"../escape": "http://127.0.0.1:1/x"}, tmp_path / "d")
    url = store._client.generate_presigned_url("get_object", Params={"Bucket": store.config.bucket, "Key": "nope"})
    sleeps: list[float] = []
    with pytest.raises(ArtifactError, match="HTTP 404"):
        get_files({"a": url}, tmp_path / "d", sleep=sleeps.append)
    assert sleeps == []  # a refusal is final, not retried


def test_an_unreachable_endpoint_is_retried_then_reported(tmp_path: Path):
    (tmp_path / "f").write_text("x")
    sleeps: list[float] = []
    with pytest.raises(ArtifactError, match="failed after 3 attempts"):
        post_folder(tmp_path, {"url": "http://127.0.0.1:1/b", "fields": {}, "prefix": "p/"}, attempts=3,
                    sleep=sleeps.append)
    assert sleeps == [0.5, 1.0]


def _params(**kw) -> PodParams:
    run_spec = BenchmarkRunSpec.model_validate({"tasks": {"inline": []}, "agent": {"harness": "script"}})
    spec = TaskTrialSpec(run="r", task_id="t", trial_index=0, content_hash="h", agent_bundle="ab",
                         grading_bundle="gb", timeout_seconds=60, grader_timeout_seconds=30)
    base = dict(name="p", namespace="ns", trial="tr", trial_uid="u", spec=spec, run_spec=run_spec, image="i",
                deadline_seconds=99, attempt=1, artifact_uri="s3://b/r/t/0/a1/agent/", credentials_secret="s3")
    return PodParams(**{**base, **kw})


def test_pods_with_grants_carry_no_store_credentials():
    env = {e["name"]: e for e in agent_pod(_params(upload_grant='{"u": 1}', read_grants='{"r": 2}'))["spec"]
           ["containers"][0]["env"]}
    assert env[UPLOAD_ENV]["value"] == '{"u": 1}' and env[READ_ENV]["value"] == '{"r": 2}'
    assert "AWS_ACCESS_KEY_ID" not in env and "AWS_SECRET_ACCESS_KEY" not in env
    assert not any("secretKeyRef" in json.dumps(e) for e in env.values())
    genv = {e["name"]: e for e in grade_pod(_params(upload_grant='{"u": 1}', read_grants='{"r": 2}'),
                                            "s3://b/r/t/0/a1/agent/")["spec"]["containers"][0]["env"]}
    assert genv[UPLOAD_ENV]["value"] == '{"u": 1}' and not any("secretKeyRef" in json.dumps(e) for e in genv.values()
                                                               if e["name"].startswith("AWS_"))
    # without grants (Settings.presigned_grants off): the credentials Secret as before
    for pod in (agent_pod(_params()), grade_pod(_params(), "s3://b/r/t/0/a1/agent/")):
        names = {e["name"] for e in pod["spec"]["containers"][0]["env"]}
        assert {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} <= names and UPLOAD_ENV not in names
