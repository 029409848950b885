#!/usr/bin/env bash
# The project's test command (README "Test"): installs what the tests need on a fresh Debian machine
# (apt + pip + helm), then runs the whole pytest suite. The services the tests use are started by the tests
# themselves: etcd + kube-apiserver (tests/cluster/controlplane.py), a moto S3 server, the single-node cluster
# (tests/cluster/up.sh) and Prometheus for the e2e test.
# Usage: bash tests/run-tests.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v etcd >/dev/null || need_apt+=(etcd-server)
command -v openssl >/dev/null || need_apt+=(openssl)
command -v xz >/dev/null || need_apt+=(xz-utils)
command -v unshare >/dev/null && command -v setpriv >/dev/null || need_apt+=(util-linux)
command -v curl >/dev/null || need_apt+=(curl)
command -v bwrap >/dev/null || need_apt+=(bubblewrap)  # the sandbox of agents and graders
command -v npm >/dev/null || need_apt+=(npm)  # installs the npm harnesses (Node 24 itself comes from npm)
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import ensurepip' 2>/dev/null || need_apt+=(python3-venv)
if [ "$(id -u)" = 0 ] && [ ${#need_apt[@]} -gt 0 ]; then
  echo "== apt-get install ${need_apt[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

# The shared kube-apiserver dies on custom-resource writes (vendored reflect2 1.0.1 under Go 1.19, docs/cluster.md):
# build the fixed one once per machine; cached by the build script's hash, so this is instant when it is there.
# Without ../shared/k8s/bin (nor $CLAWKUBE_K8S_BIN) the node binaries are built too (--all), for tests/cluster/up.sh.
if [ "$(id -u)" = 0 ]; then
  all=""
  [ -f "${CLAWKUBE_K8S_BIN:-$PWD/../shared/k8s/bin}/kubelet.xz" ] || all="--all"
  echo "== Kubernetes 1.20.2 with reflect2 1.0.2 (tests/cluster/build-apiserver.sh $all)"
  build_log=$(mktemp)
  if sh tests/cluster/build-apiserver.sh $all >"$build_log" 2>&1; then
    tail -n 1 "$build_log"
  else
    tail -n 40 "$build_log" >&2
    echo "warning: the fixed kube-apiserver could not be built; the tests use the shared one, which crashes" >&2
  fi
  rm -f "$build_log"
fi

echo "== pip install -e .[test]"
python3 -m pip install -q --disable-pip-version-check -e '.[test]' 2>&1 | grep -v "Running pip as the 'root' user" || true

export CLAWKUBE_HELM_DIR="${CLAWKUBE_HELM_DIR:-$HOME/.cache/clawkube/helm}"
sh tools/get-helm.sh "$CLAWKUBE_HELM_DIR" >/dev/null || echo "warning: helm could not be installed; helm tests will skip"

# The five real agent harnesses at their tested versions (npm: claude-code, codex, openclaw + Node 24; PyPI:
# hermes-agent, nanobot-ai), outside /root so the sandbox user can run them; a no-op when they are installed.
# When a registry cannot be reached, tests/harnesses/ skips with that reason.
echo "== agent harnesses (clawkube harness install)"
python3 -m clawkube harness install 2>&1 | grep -v '^  \$ ' || echo "warning: some harnesses could not be installed; tests/harnesses/ reports why" >&2

echo "== pytest"
set +e
python3 -m pytest -ra "$@"
rc=$?
set -e
if [ "$rc" = 5 ]; then
  echo "error: pytest collected no tests: that is a failure, not a pass" >&2
  exit 1
fi
exit "$rc"
