"""Per-harness agent images (images.json harness_images): the archive spec and the Dockerfile agree."""
from __future__ import annotations

import importlib.util
from pathlib import Path

from clawkube.agents import install

IMAGES_DIR = Path(__file__).resolve().parents[1] / "images"
spec = importlib.util.spec_from_file_location("imagespec", IMAGES_DIR / "imagespec.py")
imagespec = importlib.util.module_from_spec(spec)
spec.loader.exec_module(imagespec)


def test_every_harness_has_an_image_made_of_the_agent_image_and_its_layer():
    defs = imagespec.load()
    assert sorted(h["harness"] for h in defs["harness_images"]) == sorted(install.PACKAGES)
    layers = {"base": "B", "agent": "A", "deps": "D", "app": "P", "harness-codex": "HC", "harness-hermes": "HH"}
    by_tag = {i["tag"]: i for i in imagespec.archive_spec(defs, "dev", layers)["images"]}
    codex = by_tag["local.test/clawkube-agent-codex:dev"]
    agent = by_tag["local.test/clawkube-agent:dev"]
    assert codex["layers"] == agent["layers"] + ["HC"] and codex["entrypoint"] == agent["entrypoint"]
    assert codex["env"]["CLAWKUBE_HARNESS_HOME"] == defs["harness_home"] and codex["user"] == agent["user"]
    assert "local.test/clawkube-agent-hermes:dev" in by_tag
    assert "local.test/clawkube-agent-claude-code:dev" not in by_tag  # only images whose layer was built


def test_dockerfile_installs_the_harness_into_the_same_home():
    text = (IMAGES_DIR / "agent-harness" / "Dockerfile").read_text()
    assert f"CLAWKUBE_HARNESS_HOME={imagespec.load()['harness_home']}" in text
    assert 'clawkube harness install "${HARNESS}"' in text and "USER 10001:10001" in text
