#!/usr/bin/env python3
"""The image definitions (images.json) as build.sh needs them; the Dockerfiles must agree (tests/cluster/test_images.py).

    imagespec.py rootfs                                   lines "NAME PKG,PKG,..." for each debootstrapped rootfs
    imagespec.py harnesses                                the harness of each per-harness agent image, one a line
    imagespec.py archive TAG ROOTFS_NAME=LAYER... deps=LAYER app=LAYER [harness-NAME=LAYER...]
                     [claweval-deps=LAYER claweval-services=LAYER claweval-grading=LAYER]
                                                          a mkimage.py archive spec (JSON) on stdout

A per-harness agent image (images.json "harness_images") is its base image plus one layer holding the harness
installed by `clawkube harness install` under "harness_home" (the same path as on the build machine, so venv and
npm paths hold); it is in the archive only when its layer is given.

The CLAW-Eval images (images.json "claweval", `build.sh --claw-eval CHECKOUT`), only when their layers are given:
the services image = rootfs + claweval-deps (clawkube's and the checkout's Python requirements, resolved together)
+ app + the checkout without grading-only files; the grading image = the same + the grading-only files.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

DEFINITIONS = Path(__file__).with_name("images.json")


def load(path: Path = DEFINITIONS) -> dict:
    return json.loads(path.read_text())


def archive_spec(defs: dict, tag: str, layers: dict[str, str]) -> dict:
    """Each image = its rootfs layer + the dependencies layer + the package layer."""
    images = []
    for img in defs["images"]:
        needed = (img["rootfs"], "deps", "app")
        missing = [n for n in needed if n not in layers]
        if missing:
            raise KeyError(f"image {img['name']}: no layer given for {', '.join(missing)}")
        images.append({"tag": f"{img['repo']}:{tag}", "layers": [layers[n] for n in needed],
                       "entrypoint": img["entrypoint"], "user": defs["user"], "workdir": img["workdir"],
                       "env": defs["env"]})
    for h in defs.get("harness_images", []):
        key = f"harness-{h['harness']}"
        if key not in layers:
            continue
        base = next(i for i in defs["images"] if i["name"] == h["from"])
        images.append({"tag": f"{h['repo']}:{tag}", "layers": [layers[base["rootfs"]], layers["deps"], layers["app"],
                                                                 layers[key]],
                       "entrypoint": base["entrypoint"], "user": defs["user"], "workdir": base["workdir"],
                       "env": {**defs["env"], "CLAWKUBE_HARNESS_HOME": defs["harness_home"]}})
    ce = defs.get("claweval")
    if ce and "claweval-services" in layers:
        base = [layers[ce["rootfs"]], layers["claweval-deps"], layers["app"], layers["claweval-services"]]
        env = {**defs["env"], "CLAWKUBE_CLAWEVAL_CHECKOUT": ce["checkout"]}
        images.append({"tag": f"{ce['services_repo']}:{tag}", "layers": base,
                       "entrypoint": ["python", "-m", "clawkube.benchmarks.claweval.sidecar"], "user": defs["user"],
                       "workdir": ce["checkout"], "env": env})
        images.append({"tag": f"{ce['repo']}:{tag}", "layers": [*base, layers["claweval-grading"]],
                       "entrypoint": ["clawkube", "pod", "grade"], "user": defs["user"], "workdir": "/home/clawkube",
                       "env": env})
    return {"images": images}


def main(argv: list[str]) -> int:
    defs = load()
    if argv == ["rootfs"]:
        for name, pkgs in defs["rootfs"].items():
            print(name, ",".join(pkgs))
        return 0
    if argv == ["harnesses"]:
        for h in defs.get("harness_images", []):
            print(h["harness"])
        return 0
    if len(argv) >= 2 and argv[0] == "archive":
        layers = dict(a.split("=", 1) for a in argv[2:])
        print(json.dumps(archive_spec(defs, argv[1], layers), indent=1))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
