#!/bin/bash
# Start a whole single-node Kubernetes 1.20.2 cluster on this machine (Debian 12, root):
# etcd, kube-apiserver (https://127.0.0.1:6443), controller-manager, scheduler, containerd, kubelet (node "node-1").
#
#   tests/cluster/up.sh STATE_DIR      -> STATE_DIR/admin.kubeconfig; stop with tests/cluster/down.sh STATE_DIR
#
# Each component runs under a restart loop (its pid file names the loop, which leads the component's process group).
# After changing this script, down.sh + up.sh: running components keep their old flags.
# Idempotent: components already running (pid file + live loop whose command line names STATE_DIR) are left
# alone, missing ones are started, so running it twice, or after a crash, or after down.sh, is fine.
# Installs its Debian packages when missing. Kubernetes binaries: the reflect2-fixed build of build-apiserver.sh,
# else $CLAWKUBE_K8S_BIN or <repo>/../shared/k8s/bin (*.xz); built from Debian's source when neither has them.
# Pod network: bridge kpod0 10.88.0.0/24 with no default route; forwarding out of the bridge is dropped.
# The node's address is the bridge's own address 10.88.0.1 (the kubelet refuses loopback node addresses).
# See docs/cluster.md.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
S=$(mkdir -p "${1:?usage: up.sh STATE_DIR}" && cd "$1" && pwd)
K8S_BIN=${CLAWKUBE_K8S_BIN:-$REPO/../shared/k8s/bin}
NODE_IP=10.88.0.1 POD_CIDR=10.88.0.0/24 BRIDGE=kpod0
API=https://127.0.0.1:6443
OWNER=/run/clawkube-cluster.state   # which STATE_DIR the running cluster belongs to (one per machine)
T0=$SECONDS

log() { echo "up.sh [$((SECONDS - T0))s]: $*" >&2; }
die() { echo "up.sh: error: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "must run as root (it starts containerd and the kubelet)"
exec 9> /run/clawkube-cluster.lock && flock 9   # one up.sh/down.sh at a time (components never inherit fd 9)

# --- one cluster per machine: refuse to start a second one beside a live one of another STATE_DIR
if [ -f "$OWNER" ] && [ "$(cat "$OWNER")" != "$S" ]; then
  other=$(cat "$OWNER")
  for p in "$other"/*.pid; do
    [ -f "$p" ] && kill -0 "$(cat "$p")" 2>/dev/null && die "a cluster of $other is running; stop it first: $HERE/down.sh $other"
  done
fi
echo "$S" > "$OWNER"

# --- Debian packages (only when something is missing)
declare -A NEED=([etcd]=etcd-server [containerd]=containerd [runc]=runc [/usr/lib/cni/bridge]=containernetworking-plugins
  [iptables]=iptables [openssl]=openssl [xz]=xz-utils [gcc]=gcc [/usr/lib/x86_64-linux-gnu/libc.a]=libc6-dev
  [/bin/busybox]=busybox-static [curl]=curl [ip]=iproute2)
missing=()
for what in "${!NEED[@]}"; do
  if [[ $what == /* ]]; then [ -e "$what" ] || missing+=("${NEED[$what]}"); else command -v "$what" >/dev/null || missing+=("${NEED[$what]}"); fi
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# --- Kubernetes binaries: each from the reflect2-fixed build of build-apiserver.sh when it holds it
# (~/.cache/clawkube/k8s-1.20.2-fixed/<script hash>/; always for kube-apiserver: the shared build crashes on
# custom-resource writes), else unpacked from $K8S_BIN/*.xz. What neither has is built here (build-apiserver.sh,
# --all when a node binary is missing too: ~15-20 min once per machine), so a fresh clone without ../shared works.
mkdir -p "$S"/bin "$S"/pki "$S"/logs "$S"/img
BUILD="$HERE/build-apiserver.sh"
FIXED="${CLAWKUBE_K8S_FIXED_CACHE:-$HOME/.cache/clawkube/k8s-1.20.2-fixed}/$(sha256sum "$BUILD" | cut -c1-12)"
fixed_has() { [ -x "$FIXED/$1" ] && [ "$(cat "$FIXED/build-key" 2>/dev/null)" = "$(basename "$FIXED")" ]; }
need_build=""
for b in kube-controller-manager kube-scheduler kubelet; do
  fixed_has "$b" || [ -x "$S/bin/$b" ] || [ -f "$K8S_BIN/$b.xz" ] || need_build="--all"
done
if [ -n "$need_build" ] || ! fixed_has kube-apiserver; then
  log "building Kubernetes 1.20.2 from Debian's source ($BUILD $need_build; ~6-20 min, once per machine)" \
      "$([ -n "$need_build" ] && echo "because $K8S_BIN holds no *.xz binaries")"
  blog="$S/logs/build-apiserver.log"
  mkdir -p "$S/logs"
  if ! sh "$BUILD" $need_build > "$blog" 2>&1; then
    tail -n 20 "$blog" >&2
    [ -n "$need_build" ] && die "no Kubernetes binaries: $K8S_BIN has none and the build failed (log: $blog)"
    log "WARNING: the reflect2-fixed kube-apiserver could not be built (log: $blog): using $K8S_BIN/kube-apiserver.xz," \
        "which CRASHES on custom-resource writes (docs/cluster.md)"
  fi
fi
for b in kube-apiserver kube-controller-manager kube-scheduler kubelet; do
  if fixed_has "$b"; then ln -sfn "$FIXED/$b" "$S/bin/$b"; continue; fi
  [ -x "$S/bin/$b" ] && [ ! -L "$S/bin/$b" ] && continue
  [ -f "$K8S_BIN/$b.xz" ] || die "$K8S_BIN/$b.xz not found (set CLAWKUBE_K8S_BIN to the folder holding the *.xz binaries)"
  rm -f "$S/bin/$b"
  xz -dc "$K8S_BIN/$b.xz" > "$S/bin/$b.tmp" && chmod +x "$S/bin/$b.tmp" && mv "$S/bin/$b.tmp" "$S/bin/$b"
done
APISERVER=$(readlink -f "$S/bin/kube-apiserver")
log "kube-apiserver: $APISERVER"

# --- certificates (once per STATE_DIR)
cd "$S/pki"
if [ ! -f sa.pub ]; then
  log "generating certificates"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -subj "/CN=clawkube-cluster-ca" -days 3650 2>/dev/null
  printf '[ext]\nsubjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n' > server.cnf
  printf '[ext]\nextendedKeyUsage=clientAuth\n' > client.cnf
  sign() { openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "$2" 2>/dev/null
           openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$1.crt" -days 3650 \
             -extfile "$3" -extensions ext 2>/dev/null; }
  sign apiserver "/CN=kube-apiserver" server.cnf
  sign admin "/O=system:masters/CN=admin" client.cnf
  sign node "/O=system:nodes/CN=system:node:node-1" client.cnf
  openssl genrsa -out sa.key.tmp 2048 2>/dev/null && openssl rsa -in sa.key.tmp -pubout -out sa.pub.tmp 2>/dev/null
  mv sa.key.tmp sa.key && mv sa.pub.tmp sa.pub
fi
for u in admin node; do cat > "$S/$u.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters: [{name: clawkube-local, cluster: {server: "$API", certificate-authority: $S/pki/ca.crt}}]
users: [{name: $u, user: {client-certificate: $S/pki/$u.crt, client-key: $S/pki/$u.key}}]
contexts: [{name: clawkube-local, context: {cluster: clawkube-local, user: $u}}]
current-context: clawkube-local
KC
done
cd "$S"

# --- process supervision by pid files
alive() {  # NAME: its pid file names a live process whose command line mentions this STATE_DIR
  local pid; pid=$(cat "$S/$1.pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] && [[ $(tr '\0' ' ' < "/proc/$pid/cmdline") == *"$S"* ]]
}
start() {  # NAME ARGV...: run ARGV under a restart loop in its own session (pid file = the loop = the group)
  local name=$1; shift
  if alive "$name"; then log "$name already running (pid $(cat "$name.pid"))"; return; fi
  log "starting $name"
  setsid nohup bash -c 'while :; do "$@"; echo "up.sh supervisor: $1 exited with $?, restarting in 2s" >&2; sleep 2; done' \
    "supervise-$name" "$@" >> "$S/logs/$name.log" 2>&1 < /dev/null 9>&- & echo $! > "$S/$name.pid"
}
wait_for() {  # WHAT SECONDS NAME CMD...: poll CMD until it succeeds; on timeout show NAME's log tail
  local what=$1 secs=$2 name=$3; shift 3
  for _ in $(seq $((secs * 2))); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  tail -n 30 "$S/logs/$name.log" >&2; die "timed out after ${secs}s waiting for $what"
}
# never let curl name itself: the apiserver pretty-prints JSON for curl's user agent, and that code path crashes
# this Go 1.19 build of Kubernetes 1.20 (reflect2 map iteration, SIGSEGV in aeshashbody)
api() { curl -sf -A clawkube-up.sh --cacert "$S/pki/ca.crt" --cert "$S/pki/admin.crt" --key "$S/pki/admin.key" "$API$1"; }

# --- pod network: the bridge exists before the kubelet starts (its address is the node address); nothing is
# forwarded out of it, and pods get no default route (cni-podnet.conflist)
ip link show "$BRIDGE" >/dev/null 2>&1 || ip link add "$BRIDGE" type bridge
# (no `| grep -q` under pipefail: grep's early exit can fail the pipeline with SIGPIPE)
[[ $(ip -4 -o addr show dev "$BRIDGE") == *"inet $NODE_IP/24 "* ]] || ip addr add "$NODE_IP/24" dev "$BRIDGE"
ip link set "$BRIDGE" up
iptables -C FORWARD -i "$BRIDGE" ! -o "$BRIDGE" -j DROP 2>/dev/null || iptables -I FORWARD -i "$BRIDGE" ! -o "$BRIDGE" -j DROP
iptables -C FORWARD -o "$BRIDGE" ! -i "$BRIDGE" -j DROP 2>/dev/null || iptables -I FORWARD -o "$BRIDGE" ! -i "$BRIDGE" -j DROP
mkdir -p /etc/cni/net.d
cp "$HERE/cni-podnet.conflist" /etc/cni/net.d/10-clawkube-podnet.conflist

# --- control plane
start etcd etcd --name clawkube --data-dir "$S/etcd" --listen-client-urls http://127.0.0.1:2379 \
  --advertise-client-urls http://127.0.0.1:2379 --listen-peer-urls http://127.0.0.1:2380 \
  --initial-advertise-peer-urls http://127.0.0.1:2380 --initial-cluster clawkube=http://127.0.0.1:2380
start apiserver "$APISERVER" --etcd-servers=http://127.0.0.1:2379 --bind-address=127.0.0.1 \
  --advertise-address=127.0.0.1 --secure-port=6443 \
  --tls-cert-file="$S/pki/apiserver.crt" --tls-private-key-file="$S/pki/apiserver.key" --client-ca-file="$S/pki/ca.crt" \
  --service-account-key-file="$S/pki/sa.pub" --service-account-signing-key-file="$S/pki/sa.key" \
  --service-account-issuer=https://kubernetes.default.svc --service-cluster-ip-range=10.96.0.0/16 \
  --authorization-mode=Node,RBAC --allow-privileged=true --endpoint-reconciler-type=none \
  --kubelet-client-certificate="$S/pki/admin.crt" --kubelet-client-key="$S/pki/admin.key" \
  --kubelet-preferred-address-types=InternalIP
wait_for "apiserver /readyz" 90 apiserver api /readyz
start controller-manager "$S/bin/kube-controller-manager" --kubeconfig="$S/admin.kubeconfig" \
  --service-account-private-key-file="$S/pki/sa.key" --root-ca-file="$S/pki/ca.crt" --leader-elect=false \
  --use-service-account-credentials=false --controllers='*,-nodeipam,-service,-route,-cloud-node-lifecycle' \
  --bind-address=127.0.0.1 --port=0
start scheduler "$S/bin/kube-scheduler" --kubeconfig="$S/admin.kubeconfig" --leader-elect=false \
  --bind-address=127.0.0.1 --port=0

# --- containerd: local pause image, Debian's CNI plugins, oom_score_adj restricted (lowering it is denied in this VM)
if [ ! -f "$S/containerd.toml" ]; then
  containerd config default | sed -e 's#sandbox_image = .*#sandbox_image = "local.test/pause:3.2"#' \
    -e 's#bin_dir = .*#bin_dir = "/usr/lib/cni"#' -e 's#restrict_oom_score_adj = false#restrict_oom_score_adj = true#' \
    > "$S/containerd.toml.tmp"
  grep -q 'restrict_oom_score_adj = true' "$S/containerd.toml.tmp" || die "containerd config default has no restrict_oom_score_adj"
  mv "$S/containerd.toml.tmp" "$S/containerd.toml"
fi
start containerd containerd --config "$S/containerd.toml"
wait_for "containerd" 30 containerd ctr version

# --- the pause image (a tiny static C program) and a busybox image, built once per STATE_DIR
if [ ! -f img/pause-busybox.tar ]; then
  log "building the pause and busybox images"
  rm -rf img/pause img/busybox && mkdir -p img/pause/rootfs
  # pause: sleeps until signalled and reaps children (as the real pause image does)
  printf '#include <signal.h>\n#include <unistd.h>\n#include <sys/wait.h>\nstatic void r(int s){while(waitpid(-1,0,WNOHANG)>0);}\nstatic void q(int s){_exit(0);}\nint main(){signal(SIGINT,q);signal(SIGTERM,q);signal(SIGCHLD,r);for(;;)pause();}\n' > img/pause.c
  gcc -static -O2 -o img/pause/rootfs/pause img/pause.c
  mkdir -p img/busybox/rootfs/bin img/busybox/rootfs/tmp img/busybox/rootfs/etc && cp /bin/busybox img/busybox/rootfs/bin/
  (cd img/busybox/rootfs/bin && for c in $(./busybox --list); do [ "$c" = busybox ] || ln -sf busybox "$c"; done)
  python3 "$REPO/images/mkimage.py" layer img/pause/rootfs img/pause-layer.tar >/dev/null
  python3 "$REPO/images/mkimage.py" layer img/busybox/rootfs img/busybox-layer.tar >/dev/null
  echo '{"images": [{"tag": "local.test/pause:3.2", "layers": ["pause-layer.tar"], "entrypoint": ["/pause"]},
    {"tag": "local.test/busybox:1", "layers": ["busybox-layer.tar"], "entrypoint": ["/bin/sh"]}]}' > img/spec.json
  python3 "$REPO/images/mkimage.py" archive img/pause-busybox.tar img/spec.json >/dev/null
fi
have=$(ctr -n k8s.io images ls -q)
grep -qx local.test/pause:3.2 <<< "$have" && grep -qx local.test/busybox:1 <<< "$have" ||
  ctr -n k8s.io images import img/pause-busybox.tar >/dev/null

# --- kubelet
sed -e "s#@PKI@#$S/pki#" -e "s#@NODE_IP@#$NODE_IP#" "$HERE/kubelet-config.yaml" > "$S/kubelet.yaml"
start kubelet "$S/bin/kubelet" --config="$S/kubelet.yaml" --kubeconfig="$S/node.kubeconfig" --container-runtime=remote \
  --container-runtime-endpoint=unix:///run/containerd/containerd.sock --node-ip=$NODE_IP --hostname-override=node-1 \
  --pod-infra-container-image=local.test/pause:3.2 --root-dir=/var/lib/kubelet
# Ready with a heartbeat newer than the kubelet's start (etcd may still hold a Ready status from an earlier run)
KUBELET_SINCE=$(date -u -d "@$(stat -c %Y "$S/kubelet.pid")" +%Y-%m-%dT%H:%M:%SZ)
node_ready() {
  api /api/v1/nodes/node-1 | python3 -c 'import json,sys; n=json.load(sys.stdin)
sys.exit(0 if any(c["type"]=="Ready" and c["status"]=="True" and c["lastHeartbeatTime"]>=sys.argv[1]
                  for c in n["status"].get("conditions",[])) else 1)' "$KUBELET_SINCE"
}
wait_for "node node-1 Ready" 120 kubelet node_ready
# pods are refused until the controller-manager has made the namespace's default service account
wait_for "service account default/default" 60 controller-manager api /api/v1/namespaces/default/serviceaccounts/default
log "cluster up: KUBECONFIG=$S/admin.kubeconfig (node node-1 at $NODE_IP, pod network $POD_CIDR)"
