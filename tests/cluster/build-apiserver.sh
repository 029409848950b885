#!/bin/sh
# Build kube-apiserver 1.20.2 from Debian bookworm's `kubernetes` source package with modern-go/reflect2
# replaced by Debian's 1.0.2 (golang-github-modern-go-reflect2-dev), so that it no longer crashes.
#
# Why: Kubernetes 1.20 vendors reflect2 1.0.1, whose map iterator (unsafe_link.go) links to the runtime's
# reflect.mapiterinit with its Go <= 1.17 signature `(rtype, map) *hiter`. From Go 1.18 on that function is
# `(rtype, map, it *hiter)` and fills in a caller-allocated iterator: 1.0.1 never passes one, so the runtime
# writes the iterator through whatever the third argument register holds, and reflect2 reads a garbage
# result. json-iterator's map encoder goes through it (custom resources are maps; so are labels,
# annotations, managedFields), and with Debian's Go 1.19 the apiserver dies now and then with
# `fatal error: fault` / SIGSEGV. reflect2 1.0.2 (go_above_118.go) passes its own hiter.
# The vendored json-iterator 1.1.10 uses only reflect2 API that 1.0.2 still has (1.1.12 differs from it
# by unrelated bug fixes), so it stays as it is.
#
# Usage: tests/cluster/build-apiserver.sh [--all] [OUTDIR]
#   --all also builds kube-controller-manager, kube-scheduler and kubelet from the same tree (with the same
#   reflect2), for a machine without ../shared/k8s/bin: tests/cluster/up.sh then needs nothing else.
#   OUTDIR defaults to ~/.cache/clawkube/k8s-1.20.2-fixed/<first 12 hex of this script's sha256>, the
#   folder tests/cluster/controlplane.py and up.sh look in. Idempotent: exits at once when OUTDIR already holds
#   the binaries asked for, built by this very script (OUTDIR/build-key). Needs root (apt-get); Debian packages
#   only. Takes ~6-12 minutes on 2 cores for the apiserver, ~15-20 with --all (niced; docs/cluster.md has the
#   measurements). WORK=DIR keeps the source tree and Go build cache there (a rebuild in it takes seconds).
set -eu
SELF=$(realpath "$0")
KEY=$(sha256sum "$SELF" | cut -c1-12)
WANT="kube-apiserver"
if [ "${1:-}" = "--all" ]; then WANT="kube-apiserver kube-controller-manager kube-scheduler kubelet"; shift; fi
OUT=${1:-${CLAWKUBE_K8S_FIXED_CACHE:-$HOME/.cache/clawkube/k8s-1.20.2-fixed}/$KEY}
mkdir -p "$OUT" && OUT=$(realpath "$OUT")
MISSING=""
for b in $WANT; do [ -x "$OUT/$b" ] || MISSING="$MISSING $b"; done
[ "$(cat "$OUT/build-key" 2>/dev/null)" = "$KEY" ] || MISSING=" $WANT"
if [ -z "$MISSING" ]; then
  echo "up to date: $(for b in $WANT; do printf '%s ' "$OUT/$b"; done)(build-key $KEY)"
  exit 0
fi
[ "$(id -u)" = 0 ] || { echo "build-apiserver.sh: needs root for apt-get" >&2; exit 1; }
START=$(date +%s)

# A deb-src entry for the Debian mirror apt already uses (deb822 .sources or one-line sources.list).
if ! grep -qsE '^(Types:.*deb-src|deb-src )' /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
    /etc/apt/sources.list.d/*.sources; then
  MIRROR=$(grep -hsE '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' | grep -m1 -E '/debian/?$' || true)
  [ -n "$MIRROR" ] || MIRROR=$(awk '$1=="deb" && $2 ~ /\/debian\/?$/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
  MIRROR=${MIRROR:-http://deb.debian.org/debian}
  . /etc/os-release
  cat > /etc/apt/sources.list.d/clawkube-debsrc.sources <<SRC
Types: deb-src
URIs: $MIRROR
Suites: $VERSION_CODENAME $VERSION_CODENAME-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  golang-go rsync jq dpkg-dev golang-github-modern-go-reflect2-dev >/dev/null
R2V=$(dpkg-query -W -f '${Version}' golang-github-modern-go-reflect2-dev)
case "$R2V" in 1.0.2*) ;; *) echo "build-apiserver.sh: need reflect2 1.0.2, Debian has $R2V" >&2; exit 1 ;; esac
R2=/usr/share/gocode/src/github.com/modern-go/reflect2
[ -f "$R2/go_above_118.go" ] || { echo "build-apiserver.sh: $R2/go_above_118.go missing (not reflect2 1.0.2?)" >&2; exit 1; }

if [ -n "${WORK:-}" ]; then mkdir -p "$WORK"; else WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT; fi
chmod 755 "$WORK"  # apt-get source downloads as user _apt
cd "$WORK"
ls -d kubernetes-1.20.5+really1.20.2/ >/dev/null 2>&1 || apt-get source -qq kubernetes >/dev/null
[ -d kubernetes-1.20.5+really1.20.2 ] || {
  echo "build-apiserver.sh: Debian's kubernetes source is no longer 1.20.5+really1.20.2: $(ls -d kubernetes-*/)" >&2; exit 1; }
cd kubernetes-1.20.5+really1.20.2

# Swap the vendored reflect2 (the build is GOPATH mode: vendor/ is used as is, go.mod/go.sum are not read;
# go.mod and vendor/modules.txt are updated anyway so that the tree says what it holds).
V=vendor/github.com/modern-go/reflect2
grep -q 'github.com/modern-go/reflect2 v1.0.1' vendor/modules.txt || grep -q 'reflect2 v1.0.2' vendor/modules.txt || {
  echo "build-apiserver.sh: $V is not the expected v1.0.1 (vendor/modules.txt)" >&2; exit 1; }
rm -rf "$V" && mkdir -p "$V"
for f in "$R2"/*.go "$R2"/*.s "$R2"/LICENSE "$R2"/go.mod; do
  case "$f" in *_test.go) continue ;; esac
  [ -e "$f" ] && cp "$f" "$V"/
done
sed -i 's#github.com/modern-go/reflect2 v1.0.1#github.com/modern-go/reflect2 v1.0.2#g' vendor/modules.txt go.mod

# `make` first runs the code generators: the source package lacks pkg/generated/openapi/zz_generated.openapi.go.
mkdir -p .go/src/k8s.io && ln -sfn ../../.. .go/src/k8s.io/kubernetes
WHAT=$(for b in $MISSING; do printf 'cmd/%s ' "$b"; done)
GOCACHE=${GOCACHE:-$WORK/gocache} GOPATH=$PWD/.go CGO_ENABLED=0 HOME=$WORK \
  nice -n 10 make WHAT="${WHAT% }" GOLDFLAGS="-s -w"
[ "$(cat "$OUT/build-key" 2>/dev/null)" = "$KEY" ] || rm -f "$OUT"/kube-*  "$OUT/kubelet"  # an older script's output
for b in $MISSING; do
  BIN=_output/bin/$b
  "$BIN" --version | grep -qx 'Kubernetes v1.20.2' || { echo "build-apiserver.sh: unexpected version: $("$BIN" --version)" >&2; exit 1; }
  cp "$BIN" "$OUT/$b.tmp" && mv "$OUT/$b.tmp" "$OUT/$b"
done
printf '%s\n' "$KEY" > "$OUT/build-key"
echo "built$MISSING in $OUT with reflect2 $R2V in $(( $(date +%s) - START ))s"
