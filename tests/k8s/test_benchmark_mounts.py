"""The benchmark's own paths in trial pods (k8s/podspec.py): the workspace at the benchmark's mount point
(Benchmark.workspace_mount, WildClawBench's /tmp_workspace) in agent and grading pods, the workspace as handed over
read-only at /app (TrialMounts.initial_workspace) from the agent bundle only, and the supervisor's folders apart."""
from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from clawkube.k8s.podspec import DEFAULT_WORKSPACE, SCRATCH, agent_pod, grade_pod
from clawkube.lifecycle import bundle
from tests.k8s.test_units import _params
from tests.k8s.builders import spec


def _main(pod: dict) -> dict:
    return pod["spec"]["containers"][0]


def _mounts(c: dict) -> dict[str, dict]:
    return {m["mountPath"]: m for m in c["volumeMounts"]}


def _arg(c: dict, flag: str) -> str:
    return c["command"][c["command"].index(flag) + 1]


def _volumes(pod: dict) -> dict[str, dict]:
    return {v["name"]: v for v in pod["spec"]["volumes"]}


def _grade(fmt: str) -> dict:
    return grade_pod(_params(name="tr-a1-grade", spec=spec().model_copy(update={"task_format": fmt})), "s3://b/a/")


def _agent(fmt: str) -> dict:
    return agent_pod(_params(spec=spec().model_copy(update={"task_format": fmt})))


@pytest.mark.parametrize("make", [_agent, _grade], ids=["agent", "grade"])
@pytest.mark.parametrize("fmt,mount", [("wildclawbench", "/tmp_workspace"), ("claw-eval", "/workspace"),
                                       ("evoclawbench", DEFAULT_WORKSPACE), ("", DEFAULT_WORKSPACE)])
def test_the_workspace_is_at_the_benchmarks_mount_point(make, fmt, mount):
    pod = make(fmt)
    c = _main(pod)
    assert _arg(c, "--workspace") == mount
    if mount == DEFAULT_WORKSPACE:  # inside the supervisor's scratch volume, as before
        assert "workspace" not in _volumes(pod) and mount.startswith(SCRATCH + "/")
    else:  # a volume of its own, writable by the pod's uid, at the path the prompts and graders name
        m = _mounts(c)[mount]
        assert m["name"] == "workspace" and not m.get("readOnly")
        assert _volumes(pod)["workspace"] == {"name": "workspace", "emptyDir": {}}
    if c["command"][2] == "agent":  # HOME and skills stay in the scratch, never in the workspace
        assert _arg(c, "--scratch") == SCRATCH


def test_wildclawbench_pods_see_the_workspace_as_handed_over_read_only_at_app():
    for pod in (_agent("wildclawbench"), _grade("wildclawbench")):
        c = _main(pod)
        app = _mounts(c)["/app"]
        assert app["name"] == "initial" and app["readOnly"] is True
        init = {i["name"]: i for i in pod["spec"]["initContainers"]}["initial"]
        assert init["command"][-1] == "workspace" and init["securityContext"]["readOnlyRootFilesystem"] is True
        src = init["volumeMounts"][0]
        cm = _volumes(pod)[src["name"]]["configMap"]["name"]
        assert cm == "r-t1-agent" and src["readOnly"] is True  # the agent bundle: never the grading bundle
        assert "initial" not in {m["name"] for m in init["volumeMounts"] if m.get("readOnly")}
    # the grading bundle stays out of every agent pod
    assert all("grading" not in v.get("configMap", {}).get("name", "") for v in _agent("wildclawbench")["spec"]["volumes"])


@pytest.mark.parametrize("fmt", ["claw-eval", "evoclawbench"])
def test_other_benchmarks_get_no_app(fmt):
    for pod in (_agent(fmt), _grade(fmt)):
        assert "/app" not in _mounts(_main(pod)) and "initial" not in _volumes(pod)


def _tgz(files: dict[str, bytes]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as tar:
        for name, data in files.items():
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tar.addfile(ti, io.BytesIO(data))
    return raw.getvalue()


def test_extract_only_one_folder(tmp_path: Path):
    data = _tgz({"task.json": b"{}", "workspace/a.txt": b"a", "workspace/tmp/b": b"b", "workspaces/x": b"no",
                 "reference_solution.sh": b"secret"})
    bundle.extract(data, tmp_path / "app", "workspace")
    assert sorted(p.relative_to(tmp_path / "app").as_posix() for p in (tmp_path / "app").rglob("*") if p.is_file()) \
        == ["a.txt", "tmp/b"]
    with pytest.raises(ValueError):
        bundle.extract(_tgz({"workspace/../../evil": b"x"}), tmp_path / "x", "workspace")
