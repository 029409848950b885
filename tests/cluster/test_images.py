"""images/: the docker-archive writer, the image definitions, and the Dockerfiles agreeing with them (no root needed)."""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import tarfile
from pathlib import Path

import pytest

from tests.cluster.cluster import parse_cri_log

IMAGES_DIR = Path(__file__).resolve().parents[2] / "images"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, IMAGES_DIR / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


mkimage = _load("mkimage")
imagespec = _load("imagespec")


def _rootfs(tmp_path: Path, name: str, files: dict[str, str]) -> Path:
    root = tmp_path / name
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_layer_is_sorted_relative_and_leaves_out_dev_contents(tmp_path):
    root = _rootfs(tmp_path, "r", {"usr/bin/x": "x", "etc/passwd": "root", "dev/null-ish": "no", "a": "1"})
    (root / "usr" / "bin" / "y").symlink_to("x")
    digest = mkimage.make_layer(root, tmp_path / "layer.tar")
    assert digest == hashlib.sha256((tmp_path / "layer.tar").read_bytes()).hexdigest()
    with tarfile.open(tmp_path / "layer.tar") as t:
        names = t.getnames()
        assert t.getmember("usr/bin/y").issym() and t.getmember("usr/bin/y").linkname == "x"
    # sorted within each folder, a folder's entry before its contents
    assert names == ["a", "dev", "etc", "usr", "etc/passwd", "usr/bin", "usr/bin/x", "usr/bin/y"]
    assert mkimage.make_layer(root, tmp_path / "again.tar") == digest  # same folder, same layer


def test_layer_of_a_missing_folder_names_it(tmp_path):
    with pytest.raises(NotADirectoryError, match="nope"):
        mkimage.make_layer(tmp_path / "nope", tmp_path / "l.tar")


def test_archive_stores_shared_layers_once_and_configs_name_them(tmp_path):
    base = mkimage.make_layer(_rootfs(tmp_path, "base", {"bin/sh": "sh"}), tmp_path / "base.tar")
    app1 = mkimage.make_layer(_rootfs(tmp_path, "app1", {"opt/one": "1"}), tmp_path / "app1.tar")
    app2 = mkimage.make_layer(_rootfs(tmp_path, "app2", {"opt/two": "2"}), tmp_path / "app2.tar")
    spec = {"images": [
        {"tag": "local.test/one:dev", "layers": ["base.tar", "app1.tar"], "entrypoint": ["/opt/one"], "user": "10001"},
        {"tag": "local.test/two:dev", "layers": ["base.tar", "app2.tar"], "cmd": ["x"], "env": {"A": "b"}}]}
    assert mkimage.make_archive(tmp_path / "out.tar", spec, tmp_path) == ["local.test/one:dev", "local.test/two:dev"]
    with tarfile.open(tmp_path / "out.tar") as t:
        names = t.getnames()
        manifest = json.load(t.extractfile("manifest.json"))
        configs = [json.load(t.extractfile(m["Config"])) for m in manifest]
    assert sorted(n for n in names if n.endswith("layer.tar")) == sorted(f"{d}/layer.tar" for d in (base, app1, app2))
    assert [m["Layers"] for m in manifest] == [[f"{base}/layer.tar", f"{app1}/layer.tar"],
                                               [f"{base}/layer.tar", f"{app2}/layer.tar"]]
    assert configs[0]["rootfs"]["diff_ids"] == [f"sha256:{base}", f"sha256:{app1}"]
    assert configs[0]["config"]["Entrypoint"] == ["/opt/one"] and configs[0]["config"]["User"] == "10001"
    assert "A=b" in configs[1]["config"]["Env"] and "Entrypoint" not in configs[1]["config"]


def test_archive_spec_errors_name_the_image_and_layer(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"images\[0\] \(local.test/x:1\): layer .*gone.tar"):
        mkimage.make_archive(tmp_path / "o.tar", {"images": [{"tag": "local.test/x:1", "layers": ["gone.tar"]}]},
                             tmp_path)
    with pytest.raises(ValueError, match=r"images\[0\]\.layers"):
        mkimage.make_archive(tmp_path / "o.tar", {"images": [{"tag": "t"}]}, tmp_path)
    assert not os.path.exists(tmp_path / "o.tar")


def test_archive_spec_gives_each_image_its_rootfs_and_the_shared_layers():
    defs = imagespec.load()
    spec = imagespec.archive_spec(defs, "dev", {"base": "B", "agent": "A", "deps": "D", "app": "P"})
    by_tag = {i["tag"]: i for i in spec["images"]}
    assert set(by_tag) == {"local.test/clawkube-operator:dev", "local.test/clawkube-agent:dev",
                           "local.test/clawkube-grader:dev"}
    assert by_tag["local.test/clawkube-agent:dev"]["layers"] == ["A", "D", "P"]
    assert by_tag["local.test/clawkube-operator:dev"]["entrypoint"] == ["clawkube", "operator"]
    assert by_tag["local.test/clawkube-grader:dev"]["entrypoint"] == ["clawkube", "pod", "grade"]
    with pytest.raises(KeyError, match="agent-runner: no layer given for agent"):
        imagespec.archive_spec(defs, "dev", {"base": "B", "deps": "D", "app": "P"})


def _dockerfile(path: Path) -> dict[str, list[str]]:
    text = path.read_text().replace("\\\n", " ")
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            word, _, rest = line.strip().partition(" ")
            out.setdefault(word.upper(), []).append(rest.strip())
    return out


@pytest.mark.parametrize("img", imagespec.load()["images"], ids=lambda i: i["name"])
def test_dockerfile_agrees_with_the_local_image(img):
    defs = imagespec.load()
    df = _dockerfile(IMAGES_DIR / img["dockerfile"])
    assert df["FROM"] == ["python:3.11-slim"]
    assert json.loads(df["ENTRYPOINT"][-1]) == img["entrypoint"]
    assert df["USER"][-1] == defs["user"] and not defs["user"].startswith("0")
    assert df["WORKDIR"][-1] == img["workdir"]
    run = " ".join(df["RUN"])
    assert re.search(r"pip install --no-cache-dir '?/src(\[[a-z,]+\])?'?", run) and "--uid 10001" in run
    if img["name"] == "grader":  # what the benchmarks' graders import (pyproject's "graders" group)
        assert "/src[graders]" in run
    # the Debian packages the local rootfs adds beyond the base one are installed in the Dockerfile too
    extra = set(defs["rootfs"][img["rootfs"]]) - set(defs["rootfs"]["base"])
    installed = set(re.findall(r"apt-get install -y --no-install-recommends ([a-z0-9 .+-]+?)(?:&&|$)", run)[0].split()) \
        if extra else set()
    assert extra <= installed, f"{img['dockerfile']} lacks {extra - installed}"


def test_parse_cri_log_joins_partial_lines_per_stream():
    text = ("2026-01-01T00:00:00.1Z stdout P hel\n2026-01-01T00:00:00.2Z stderr F oops\n"
            "2026-01-01T00:00:00.3Z stdout F lo world\n2026-01-01T00:00:00.4Z stdout F \n")
    assert parse_cri_log(text) == {"stdout": "hello world\n\n", "stderr": "oops\n"}
    with pytest.raises(ValueError, match="not a CRI log line"):
        parse_cri_log("garbage\n")


def test_claweval_images_only_with_their_layers_and_graders_only_in_the_grading_one():
    defs = imagespec.load()
    base = {"base": "B", "agent": "A", "deps": "D", "app": "P"}
    assert len(imagespec.archive_spec(defs, "dev", base)["images"]) == 3  # no checkout: no CLAW-Eval images
    spec = imagespec.archive_spec(defs, "t", {**base, "claweval-deps": "CD", "claweval-services": "S",
                                              "claweval-grading": "G"})
    by_tag = {i["tag"]: i for i in spec["images"]}
    ce = defs["claweval"]
    services, grading = by_tag[f"{ce['services_repo']}:t"], by_tag[f"{ce['repo']}:t"]
    assert services["layers"] == ["A", "CD", "P", "S"] and grading["layers"] == ["A", "CD", "P", "S", "G"]
    assert services["env"]["CLAWKUBE_CLAWEVAL_CHECKOUT"] == grading["env"]["CLAWKUBE_CLAWEVAL_CHECKOUT"] == ce["checkout"]
    assert grading["entrypoint"] == ["clawkube", "pod", "grade"]
    assert services["entrypoint"] == ["python", "-m", "clawkube.benchmarks.claweval.sidecar"]


def test_claweval_dockerfile_agrees_with_the_local_images():
    defs = imagespec.load()
    ce = defs["claweval"]
    text = (IMAGES_DIR / ce["dockerfile"]).read_text()
    df = _dockerfile(IMAGES_DIR / ce["dockerfile"])
    assert df["USER"][-1] == defs["user"]
    assert f"CLAWKUBE_CLAWEVAL_CHECKOUT={ce['checkout']}" in " ".join(df["ENV"])
    assert json.loads(df["ENTRYPOINT"][0]) == ["python", "-m", "clawkube.benchmarks.claweval.sidecar"]
    assert json.loads(df["ENTRYPOINT"][-1]) == ["clawkube", "pod", "grade"]
    assert "clawkube.benchmarks.claweval.imagefiles" in text and "--build-context claweval=" in text
    extra = set(defs["rootfs"][ce["rootfs"]]) - set(defs["rootfs"]["base"])
    installed = set(re.findall(r"apt-get install -y --no-install-recommends ([a-z0-9 .+-]+?)(?:&&|$)",
                               " ".join(df["RUN"]))[0].split())
    assert extra <= installed
