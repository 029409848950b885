#!/bin/bash
# Build the clawkube images locally, without a registry or docker, and import them into containerd:
#   local.test/clawkube-operator:dev   entrypoint: clawkube operator
#   local.test/clawkube-agent:dev      entrypoint: clawkube pod agent   (+ bash, coreutils, git)
#   local.test/clawkube-grader:dev     entrypoint: clawkube pod grade
#
#   images/build.sh [--no-import] [--harnesses all|NAME,NAME]
#                                      (root; the cluster's containerd must be running unless --no-import)
#   images/build.sh ... --claw-eval CHECKOUT   also the CLAW-Eval images from a checkout of claw-eval/claw-eval:
#     local.test/clawkube-claweval-services:dev  the agent pod's svc-claweval sidecar: the checkout at /opt/claw-eval
#                                                without graders and grading-only files (clawkube.benchmarks.claweval.imagefiles)
#     local.test/clawkube-claweval:dev           the grading pods of CLAW-Eval trials: the same + the grading-only files
#     both with clawkube's and the checkout's Python requirements (its dependencies + the "mock" extra) resolved together
#   --harnesses: also local.test/clawkube-agent-<harness>:dev = the agent image + the real harness, installed by
#   `clawkube harness install` into images.json's harness_home (the same path here and in the image)
#
# What each image holds: images/images.json (the Dockerfiles agree with it). Layers, each cached in $CLAWKUBE_IMAGE_CACHE (default ~/.cache/clawkube/images) under a key of what it holds:
#   1. a Debian bookworm rootfs made by debootstrap (minbase + images.json's packages), user clawkube 10001
#   2. the package's dependencies, pip-installed for CPython 3.11 / manylinux x86_64 (key: pyproject's dependencies)
#   3. the package itself, from a wheel built from this checkout (always rebuilt)
# The same images for real clusters: images/*/Dockerfile (docs/cluster.md).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
CACHE=${CLAWKUBE_IMAGE_CACHE:-$HOME/.cache/clawkube/images}
TAG=${CLAWKUBE_IMAGE_TAG:-dev}
IMPORT=1
HARNESSES=""
CLAWEVAL=""
while [ $# -gt 0 ]; do
  case "$1" in
    --no-import) IMPORT=0 ;;
    --harnesses) HARNESSES=${2:?--harnesses needs all or NAME,NAME}; shift ;;
    --claw-eval) CLAWEVAL=$(cd "${2:?--claw-eval needs a CLAW-Eval checkout}" && pwd) || exit 2; shift ;;
    *) echo "build.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
ROOTFS_VERSION=1   # bump when the rootfs recipe below changes
SITE=usr/local/lib/python3.11/dist-packages   # on Debian's python3.11 sys.path
T0=$SECONDS
log() { echo "build.sh [$((SECONDS - T0))s]: $*" >&2; }
die() { echo "build.sh: error: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "must run as root (debootstrap, ctr)"
mkdir -p "$CACHE"
WORK=$(mktemp -d "$CACHE/work.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

mirror() {  # the Debian mirror apt uses here (first deb.debian.org-style URI for Debian), or $CLAWKUBE_DEBIAN_MIRROR
  [ -n "${CLAWKUBE_DEBIAN_MIRROR:-}" ] && { echo "$CLAWKUBE_DEBIAN_MIRROR"; return; }
  local m
  m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list 2>/dev/null |
      grep -oE 'https?://[^ ]+/debian/?( |$)' | head -n 1 | tr -d ' ')
  echo "${m:-http://deb.debian.org/debian}"
}

rootfs_layer() {  # NAME PACKAGES: a cached layer tar of a debootstrapped bookworm rootfs
  local name=$1 pkgs=$2 out
  out="$CACHE/rootfs-$name-$(echo "v$ROOTFS_VERSION $pkgs" | sha256sum | cut -c1-12).tar"
  if [ ! -f "$out" ]; then
    command -v debootstrap >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; }
    log "debootstrap bookworm rootfs '$name' (+$pkgs) from $(mirror)"
    local r="$WORK/rootfs-$name"
    debootstrap --variant=minbase --include="$pkgs" bookworm "$r" "$(mirror)" > "$WORK/debootstrap-$name.log" 2>&1 ||
      { tail -n 20 "$WORK/debootstrap-$name.log" >&2; die "debootstrap of '$name' failed"; }
    rm -rf "$r"/var/cache/apt/archives/*.deb "$r"/var/lib/apt/lists/* "$r"/usr/share/doc/* "$r"/usr/share/man/* \
      "$r"/usr/share/info/* "$r"/usr/share/locale/* "$r"/var/log/*.log "$r"/var/cache/debconf/*-old
    echo "clawkube:x:10001:10001:clawkube:/home/clawkube:/bin/bash" >> "$r/etc/passwd"
    echo "clawkube:x:10001:" >> "$r/etc/group"
    echo "clawkube:!:19000::::::" >> "$r/etc/shadow"
    mkdir -p "$r/home/clawkube" "$r/workspace" && chown 10001:10001 "$r/home/clawkube" "$r/workspace"
    python3 "$HERE/mkimage.py" layer "$r" "$out" >/dev/null
    rm -rf "$r"
  fi
  echo "$out"
}

deps_layer() {  # [CHECKOUT]: a cached layer of the package's dependencies (pip --target, binary wheels for CPython
  # 3.11); with a CLAW-Eval checkout also its dependencies and its "mock" extra, resolved together with ours
  local deps key out
  # the package's dependencies and what the benchmarks' graders import (optional group "graders")
  deps=$(python3 -c 'import sys, tomllib; p = tomllib.load(open(sys.argv[1], "rb"))["project"]; print("\n".join(sorted(p["dependencies"] + p.get("optional-dependencies", {}).get("graders", []))))' "$REPO/pyproject.toml")
  if [ -n "${1:-}" ]; then
    [ -f "$1/pyproject.toml" ] || die "$1 has no pyproject.toml: not a CLAW-Eval checkout"
    deps=$(printf '%s\n%s' "$deps" "$(python3 -c 'import sys, tomllib; p = tomllib.load(open(sys.argv[1], "rb"))["project"]; print("\n".join(sorted(p["dependencies"] + p.get("optional-dependencies", {}).get("mock", []))))' "$1/pyproject.toml")")
  fi
  key=$(printf '%s\n' "$deps" | sha256sum | cut -c1-16)
  out="$CACHE/${1:+claweval-}deps-$key.tar"   # claweval-deps-*: kept by builds without --claw-eval
  if [ ! -f "$out" ]; then
    log "pip-installing the dependencies: $(echo $deps)"
    local d="$WORK/deps"
    # shellcheck disable=SC2086
    python3 -m pip install -q --no-warn-script-location --target "$d/$SITE" --only-binary=:all: \
      --implementation cp --python-version 3.11 --abi cp311 \
      --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
      --platform linux_x86_64 --platform any $deps > "$WORK/pip-deps.log" 2>&1 ||
      { grep -v '^WARNING' "$WORK/pip-deps.log" | tail -n 20 >&2; die "pip could not install the dependencies"; }
    rm -rf "$d/$SITE/bin"   # console scripts carry this machine's interpreter path
    python3 "$HERE/mkimage.py" layer "$d" "$out" >/dev/null
  fi
  echo "$out"
}

app_layer() {  # the package from this checkout: wheel -> $SITE, and /usr/local/bin/clawkube
  local d="$WORK/app" out="$WORK/app.tar"
  log "building the clawkube wheel from $REPO"
  # from a clean copy of what the Dockerfiles copy too (no stale build/ or egg-info of the checkout)
  mkdir -p "$WORK/src" && cp "$REPO/pyproject.toml" "$WORK/src/" && cp -r "$REPO/operator" "$WORK/src/"
  [ -f "$REPO/README.md" ] && cp "$REPO/README.md" "$WORK/src/"
  find "$WORK/src" -name __pycache__ -prune -exec rm -rf {} +
  { python3 -m pip wheel -q --no-deps -w "$WORK/wheel" "$WORK/src" &&
    python3 -m pip install -q --no-deps --no-warn-script-location --target "$d/$SITE" "$WORK"/wheel/clawkube-*.whl
  } > "$WORK/pip-app.log" 2>&1 || { grep -v '^WARNING' "$WORK/pip-app.log" | tail -n 20 >&2; die "could not build/install the clawkube wheel"; }
  rm -rf "$d/$SITE/bin"
  mkdir -p "$d/usr/local/bin"
  printf '#!/usr/bin/python3\nimport sys\nfrom clawkube.cli import main\nsys.exit(main())\n' > "$d/usr/local/bin/clawkube"
  chmod 755 "$d/usr/local/bin/clawkube"
  ln -s /usr/bin/python3 "$d/usr/local/bin/python"   # as in python:3.11-slim (pod specs may say `python`)
  python3 "$HERE/mkimage.py" layer "$d" "$out" >/dev/null
  echo "$out"
}

claweval_layers() {  # CHECKOUT: the services and grading layers of the CLAW-Eval images (never cached: the checkout
  # may change; nothing of it goes into this repository)
  local d="$WORK/claweval"
  log "splitting the CLAW-Eval checkout $1 (services / grading-only files)"
  PYTHONPATH="$REPO/operator" python3 -m clawkube.benchmarks.claweval.imagefiles "$1" "$d/services" "$d/grading" >&2 ||
    die "cannot split the CLAW-Eval checkout $1"
  mkdir -p "$d/services" "$d/grading"
  python3 "$HERE/mkimage.py" layer "$d/services" "$WORK/claweval-services.tar" >/dev/null
  python3 "$HERE/mkimage.py" layer "$d/grading" "$WORK/claweval-grading.tar" >/dev/null
  rm -rf "$d"
  echo "claweval-services=$WORK/claweval-services.tar claweval-grading=$WORK/claweval-grading.tar"
}

harness_layer() {  # NAME: a cached layer of the harness (and Node for npm harnesses) under images.json's harness_home
  local name=$1 home key out d
  home=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["harness_home"])' "$HERE/images.json")
  CLAWKUBE_HARNESS_HOME=$home PYTHONPATH="$REPO/operator" python3 -m clawkube harness install "$name" 2>&1 |
    grep -v '^  \$ ' >&2 || die "clawkube harness install $name failed"
  key=$(PYTHONPATH="$REPO/operator" python3 -c 'import sys; from clawkube.agents import install as i; p = i.PACKAGES[sys.argv[1]]; print(p.name, p.version, i.NODE.version if p.registry == "npm" else "")' "$name" | sha256sum | cut -c1-12)
  out="$CACHE/harness-$name-$key.tar"
  if [ ! -f "$out" ]; then
    log "packing harness $name from $home"
    d="$WORK/harness-$name"
    mkdir -p "$d$home"
    cp -a "$home/$name" "$d$home/"
    [ -d "$home/$name/node_modules" ] && cp -a "$home/node" "$d$home/"
    python3 "$HERE/mkimage.py" layer "$d" "$out" >/dev/null
    rm -rf "$d"
  fi
  echo "$out"
}

layers=()
while read -r name pkgs; do layers+=("$name=$(rootfs_layer "$name" "$pkgs")"); done < <(python3 "$HERE/imagespec.py" rootfs)
layers+=("deps=$(deps_layer)" "app=$(app_layer)")
[ "$HARNESSES" = all ] && HARNESSES=$(python3 "$HERE/imagespec.py" harnesses | paste -sd, -)
for h in ${HARNESSES//,/ }; do layers+=("harness-$h=$(harness_layer "$h")"); done
if [ -n "$CLAWEVAL" ]; then
  layers+=("claweval-deps=$(deps_layer "$CLAWEVAL")")
  # shellcheck disable=SC2207
  layers+=($(claweval_layers "$CLAWEVAL"))
fi
python3 "$HERE/imagespec.py" archive "$TAG" "${layers[@]}" > "$WORK/spec.json"
for f in "$CACHE"/rootfs-*.tar "$CACHE"/deps-*.tar; do  # drop cached layers that no image uses any more (harness
  # layers stay: a build without --harnesses does not use them)
  [[ -f $f && " ${layers[*]} " != *"=$f "* ]] && rm -f "$f"
done
log "packing the images"
python3 "$HERE/mkimage.py" archive "$CACHE/clawkube-images.tar" "$WORK/spec.json" >/dev/null
if [ $IMPORT = 1 ]; then
  ctr version >/dev/null 2>&1 || die "containerd is not running (start the cluster: tests/cluster/up.sh STATE_DIR), or pass --no-import"
  log "importing into containerd (namespace k8s.io)"
  ctr -n k8s.io images import "$CACHE/clawkube-images.tar" >/dev/null
fi
log "done: $CACHE/clawkube-images.tar (local.test/clawkube-{operator,agent,grader}:$TAG${HARNESSES:+; agent images with $HARNESSES}${CLAWEVAL:+; the CLAW-Eval images from $CLAWEVAL})"
