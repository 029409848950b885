"""The S3 store (against a moto server) and task staging from each source kind."""
from __future__ import annotations

from pathlib import Path

import boto3
import pytest
from botocore.exceptions import EndpointConnectionError

from clawkube.artifacts import ArtifactError, S3Store, StoreConfig
from clawkube.k8s.staging import StagingError, materialize, stage
from clawkube.k8s.stores import read_prefix
from clawkube.runspec import BenchmarkRunSpec, TaskSource
from tests.k8s.sample import inline_files, task_md


@pytest.fixture
def store(s3_server):
    boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1", aws_access_key_id="k",
                 aws_secret_access_key="s").create_bucket(Bucket="store-test")
    return S3Store(StoreConfig(bucket="store-test", endpoint=s3_server, access_key_id="k", secret_access_key="s"),
                   base_delay=0.01)


@pytest.mark.s3
def test_store_put_get_exists_list(store):
    uri = store.put_json("a/b/result.json", {"x": 1})
    assert uri == "s3://store-test/a/b/result.json"
    assert store.get("a/b/result.json") == b'{\n  "x": 1\n}'
    assert store.exists("a/b/result.json") and not store.exists("a/b/nope.json")
    store.put("a/c.txt", b"c")
    assert sorted(store.list("a/")) == ["a/b/result.json", "a/c.txt"]
    with pytest.raises(ArtifactError):
        store.get("missing")


def test_store_retries_with_backoff_then_gives_up():
    sleeps = []

    class Flaky:
        calls = 0

        def put_object(self, **kw):
            Flaky.calls += 1
            if Flaky.calls < 3:
                raise EndpointConnectionError(endpoint_url="http://x")
            return {}

    s = S3Store(StoreConfig(bucket="b"), attempts=4, base_delay=0.5, sleep=sleeps.append, client=Flaky())
    s.put("k", b"v")
    assert Flaky.calls == 3 and sleeps == [0.5, 1.0]

    class Down:
        def put_object(self, **kw):
            raise EndpointConnectionError(endpoint_url="http://x")
    sleeps.clear()
    with pytest.raises(ArtifactError, match="after 3 attempts"):
        S3Store(StoreConfig(bucket="b"), attempts=3, base_delay=1, sleep=sleeps.append, client=Down()).put("k", b"v")
    assert sleeps == [1, 2]


def _spec(**tasks) -> BenchmarkRunSpec:
    return BenchmarkRunSpec.model_validate({"tasks": tasks})


def test_stage_inline_builds_two_bundles_per_task():
    result = stage("run", _spec(inline=inline_files(["a", "b_2"])), None, None)
    assert [t.ref.id for t in result.tasks] == ["a", "b_2"] and result.errors == []
    ref = result.tasks[0].ref
    assert ref.agent_bundle == "run-a-agent" and ref.grading_bundle == "run-a-grading"
    import io
    import tarfile
    names = tarfile.open(fileobj=io.BytesIO(result.tasks[0].agent_bundle)).getnames()
    assert not any("grader" in n or "grading" in n for n in names)
    again = stage("run", _spec(inline=inline_files(["a", "b_2"])), None, None)
    assert again.tasks[0].ref.content_hash == ref.content_hash  # deterministic bundles


def test_stage_configmap_keys_map_double_underscore_to_slash():
    files = {f["name"].replace("/", "__"): f["content"].encode() for f in inline_files(["cm1"])}
    result = stage("run", _spec(configMap="tasks"), lambda name: files if name == "tasks" else {}, None)
    assert [t.ref.id for t in result.tasks] == ["cm1"]


@pytest.mark.s3
def test_stage_s3_prefix(store):
    for f in inline_files(["s3task"]):
        store.put("tasks/" + f["name"], f["content"].encode())
    result = stage("run", _spec(s3Prefix="s3://store-test/tasks"), None, lambda uri: read_prefix(store, uri))
    assert [t.ref.id for t in result.tasks] == ["s3task"]


@pytest.mark.s3
def test_the_sample_tasks_staged_from_s3_all_load(store):
    """`aws s3 sync tasks/ s3://.../tasks/` (docs/install.md) stages every sample task: each carries its fixtures;
    one whose fixture is missing is a staging error naming it, not a silent drop."""
    repo = Path(__file__).resolve().parents[2]
    files = [f for f in sorted((repo / "tasks").rglob("*")) if f.is_file() and "__pycache__" not in f.parts]
    for f in files:
        store.put("samples/" + f.relative_to(repo / "tasks").as_posix(), f.read_bytes())
    result = stage("run", _spec(s3Prefix="s3://store-test/samples/"), None, lambda uri: read_prefix(store, uri))
    assert result.errors == [] and len(result.tasks) == 6, result.errors
    for f in files:
        if "fixtures/evo-word-stats/" not in f.as_posix():
            store.put("partial/" + f.relative_to(repo / "tasks").as_posix(), f.read_bytes())
    result = stage("run", _spec(s3Prefix="s3://store-test/partial/"), None, lambda uri: read_prefix(store, uri))
    assert len(result.tasks) == 5 and len(result.errors) == 1
    assert "evo-word-stats.md" in result.errors[0] and "workspace_files" in result.errors[0]


def test_stage_refuses_task_files_outside_the_source(tmp_path):
    outside = tmp_path / "secret-ws"
    (outside / "exec").mkdir(parents=True)
    (outside / "exec" / "token").write_text("operator secret")
    evil = {"name": "evil.md", "content": task_md("evil").replace("ws-evil", str(outside))}
    result = stage("run", _spec(inline=inline_files(["ok"]) + [evil]), None, None)
    assert [t.ref.id for t in result.tasks] == ["ok"]
    assert any("outside the task source" in e for e in result.errors)


@pytest.mark.parametrize("path", ["../..", "/etc"])
def test_path_source_cannot_leave_the_tasks_root(tmp_path, path):
    with pytest.raises(StagingError) as e:
        materialize(TaskSource(path=path), tmp_path, None, None, tasks_root=tmp_path)
    assert e.value.reason == "BadSource"


@pytest.mark.parametrize("source,reason", [
    ({"pvc": "claim", "path": "tasks"}, "UnsupportedSource"),
    ({"path": "tasks"}, "UnsupportedSource"),  # no tasks root configured
    ({}, "BadSource"),
    ({"inline": [{"name": "../x.md", "content": "x"}]}, "BadSource"),
    ({"inline": [{"name": "x.md"}]}, "BadSource"),
])
def test_bad_sources_are_named(tmp_path, source, reason):
    with pytest.raises(StagingError) as e:
        materialize(TaskSource.model_validate(source), tmp_path, None, None)
    assert e.value.reason == reason


def test_no_loadable_task_is_an_error_with_the_loader_messages():
    with pytest.raises(StagingError) as e:
        stage("run", _spec(inline=[{"name": "x.md", "content": "not a task"}]), None, None)
    assert e.value.reason == "NoTasks"


def test_unknown_selector_id_is_a_staging_error():
    spec = BenchmarkRunSpec.model_validate({"tasks": {"inline": inline_files(["a"])}, "selector": {"ids": ["zzz"]}})
    with pytest.raises(StagingError) as e:
        stage("run", spec, None, None)
    assert e.value.reason == "BadSelector"
