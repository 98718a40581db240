#!/usr/bin/env bash
# A real kubelet node in the local cluster: containerd and runc from Debian's packages, the
# kubelet built from the same pinned Kubernetes module as the control plane (testenv/k8s).
# Loopback only: the kubelet and every container that serves use the host's network on
# 127.0.0.1; other pod sandboxes get a loopback-only network (no bridge, no pod network, no
# kube-proxy). kwok leaves the node alone (its label is outside kwok's node selector), and a
# NoSchedule taint keeps every pod that does not tolerate it elsewhere.
#
#   hack/real-node.sh up                  join the node to the running cluster (harmless when up)
#   hack/real-node.sh load-image ARCHIVE  import an image (docker archive) into its containerd
#   hack/real-node.sh down                stop the kubelet and containerd, remove every
#                                         container, mount and file of the node
#   hack/real-node.sh status              exit 0 when the node runs and is Ready
#
# The node has no address of its own that the kubelet accepts ("nodeIP can't be loopback
# address"), so it runs with --cloud-provider=external and this script plays the cloud node
# controller: it sets the node's InternalIP to 127.0.0.1 and removes the uninitialized taint;
# the kubelet keeps addresses that a cloud provider set. docs/development.md has the details.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=hack/testenv-lib.sh
source "${root}/hack/testenv-lib.sh"
log() { printf '[real-node %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

dir="$(cluster_dir)"
# Its name is in the kubelet's certificate (hack/testenv/gen-pki.sh).
node_name=node-real-01
# Label and taint that keep kwok and ordinary test pods away (the deploy e2e overlay tolerates it).
node_label="node-maintenance.test/real-kubelet"

cluster_env() {
  [[ -f "${dir}/ports.env" ]] || die "no local cluster in ${dir} (make cluster-up first)"
  # shellcheck source=/dev/null
  source "${dir}/ports.env"
  bin="$(cat "${dir}/bin-dir")"
  kubectl=("${bin}/kubectl" --kubeconfig "${dir}/admin.kubeconfig")
  # Outside .cluster/: short enough for unix socket paths wherever the checkout lives.
  state="${NMO_REAL_NODE_STATE:-/var/lib/node-maintenance-operator/real-node-${NMO_CLUSTER_PORT_BASE}}"
}

# --- down -------------------------------------------------------------------------------

# Removes everything of a node whose state lives in $1, also after a killed run: the kubelet
# and containerd (by the PIDs recorded there), every container (through runc's own state, which
# needs no containerd), the shims, every mount below the state directory, and the files.
teardown() {
  local st="$1"
  [[ -d "${st}" ]] || return 0
  local name pid
  for name in kubelet containerd; do
    [[ -f "${st}/${name}.pid" ]] && { stop_process "${name}" "$(cat "${st}/${name}.pid")" || true; }
  done
  if [[ -d "${st}/runc" ]]; then
    local ns id
    for ns in "${st}"/runc/*/; do
      [[ -d "${ns}" ]] || continue
      for id in $(runc --root "${ns}" list -q 2>/dev/null); do
        runc --root "${ns}" kill "${id}" KILL 2>/dev/null || true
        runc --root "${ns}" delete --force "${id}" 2>/dev/null || true
      done
    done
  fi
  # Shims started by this containerd name its socket directory on their command line.
  for pid in $(pgrep -f "containerd-shim-runc-v2 .*-address ${st}/" || true); do
    stop_process containerd-shim-runc-v2 "${pid}" || true
  done
  # Deepest mounts first (kubelet volumes, sandbox shm, container root filesystems).
  findmnt -rn -o TARGET | grep -F "${st}/" | sort -r | while read -r target; do
    umount "${target}" 2>/dev/null || umount -l "${target}" 2>/dev/null || true
  done
  rm -rf "${st}"
}

down() {
  [[ -f "${dir}/real-node.env" ]] || return 0
  # shellcheck source=/dev/null
  source "${dir}/real-node.env"
  teardown "${REAL_NODE_STATE}"
  if [[ -f "${dir}/admin.kubeconfig" ]] && "${root}/hack/cluster-status.sh" >/dev/null 2>&1; then
    cluster_env
    "${kubectl[@]}" delete node "${REAL_NODE_NAME}" --ignore-not-found --wait=false >/dev/null 2>&1 || true
  fi
  rm -f "${dir}/real-node.env"
  log "real node stopped and removed"
}

node_ready() { # node_ready <node>
  [[ "$("${kubectl[@]}" get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" == True ]]
}

status() {
  [[ -f "${dir}/real-node.env" ]] || die "no real node in ${dir}"
  # shellcheck source=/dev/null
  source "${dir}/real-node.env"
  cluster_env
  local name
  for name in containerd kubelet; do
    kill -0 "$(cat "${REAL_NODE_STATE}/${name}.pid" 2>/dev/null || echo 0)" 2>/dev/null ||
      die "${name} of the real node is not running"
  done
  node_ready "${REAL_NODE_NAME}" || die "node ${REAL_NODE_NAME} is not Ready"
}

# --- up ---------------------------------------------------------------------------------
# came_up <what> <seconds> <command...>: waits for the command; on timeout shows the node's logs
# and gives up.
came_up() {
  local what="$1" timeout="$2"
  shift 2
  wait_until "${timeout}" "$@" && return 0
  log "${what}: not after ${timeout}s; last lines of the logs:"
  tail -n 20 "${dir}/logs/containerd.log" "${dir}/logs/kubelet.log" >&2 2>/dev/null || true
  die "the real node did not come up (${what})"
}

ctr_() { ctr --address "${state}/containerd.sock" --namespace k8s.io "$@"; }

write_containerd_config() {
  cat >"${state}/containerd.toml" <<EOF
version = 2
root = "${state}/containerd/root"
state = "${state}/containerd/state"
plugin_dir = ""
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]
[grpc]
  address = "${state}/containerd.sock"
[ttrpc]
  address = "${state}/containerd.sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "${state}/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  # Made by this script from hack/testenv/pause.c; never pulled.
  sandbox_image = "localhost/node-maintenance-testenv/pause:1"
  # This sandbox may not lower oom_score_adj to the kubelet's -998; without this every pod
  # sandbox fails in runc ("can't get final child's PID from pipe").
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  disable_apparmor = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "native"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "${state}/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "${state}/cni"
    max_conf_num = 1
EOF
  mkdir -p "${state}/cni"
  # Loopback only: pods that are not on the host's network get just their own lo.
  cat >"${state}/cni/10-loopback.conflist" <<'EOF'
{
  "cniVersion": "1.0.0",
  "name": "loopback-only",
  "plugins": [{"type": "loopback"}]
}
EOF
}

write_kubelet_config() {
  # From 1.37 on, the node lifecycle conditions are an alpha feature of their own (the control
  # plane's components run with it on too: hack/cluster-up.sh).
  local gates=""
  (($(testenv_minor) < 37)) || gates=$'featureGates:\n  NodeLifecycleConditions: true'
  cat >"${state}/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: ${KUBELET_PORT}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: ${KUBELET_HEALTHZ_PORT}
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: ${dir}/pki/ca.crt
authorization:
  mode: Webhook
containerRuntimeEndpoint: unix://${state}/containerd.sock
# This machine kind: cgroup v1 (hybrid), no systemd, no CAP_SYS_RESOURCE.
cgroupDriver: cgroupfs
failCgroupV1: false
cgroupsPerQOS: false
enforceNodeAllocatable: []
localStorageCapacityIsolation: false
failSwapOn: false
protectKernelDefaults: false
# Images come only from hack/real-node.sh load-image: never pull, never collect them.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: "100Mi"
  nodefs.available: "1%"
  imagefs.available: "1%"
serializeImagePulls: false
maxPods: 30
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
volumePluginDir: ${state}/volume-plugins
podLogsDir: ${state}/pod-logs
registerWithTaints:
- key: ${node_label}
  value: "true"
  effect: NoSchedule
# The kubelet writes its node's status every 15 s instead of every 5 min when nothing changed, so
# that the tests see it rewrite the status (with the operator's conditions on it) within a minute.
nodeStatusReportFrequency: 15s
${gates}
EOF
}

make_pause_image() {
  if ctr_ images check "name==localhost/node-maintenance-testenv/pause:1" 2>/dev/null | grep -q pause; then
    return
  fi
  local work
  work="$(mktemp -d)"
  gcc -O2 -static -o "${work}/pause" "${root}/hack/testenv/pause.c" || die "compiling pause.c failed"
  printf 'FROM scratch\nCOPY pause /pause\nENTRYPOINT ["/pause"]\n' >"${work}/Containerfile"
  podman build --quiet --pull=never -t localhost/node-maintenance-testenv/pause:1 \
    -f "${work}/Containerfile" "${work}" >/dev/null || die "building the pause image failed"
  podman save --quiet --format docker-archive -o "${work}/pause.tar" \
    localhost/node-maintenance-testenv/pause:1 || die "saving the pause image failed"
  ctr_ images import "${work}/pause.tar" >/dev/null || die "importing the pause image failed"
  rm -rf "${work}"
}

# Plays the cloud node controller for our node: the kubelet (with --cloud-provider=external)
# registers it with only a Hostname address and the uninitialized taint.
initialize_node() {
  "${kubectl[@]}" patch node "${node_name}" --subresource=status --type=merge -p \
    "{\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"127.0.0.1\"},{\"type\":\"Hostname\",\"address\":\"${node_name}\"}]}}" \
    >/dev/null || die "setting the node's address failed"
  "${kubectl[@]}" taint node "${node_name}" node.cloudprovider.kubernetes.io/uninitialized- \
    >/dev/null 2>&1 || true
}

up() {
  cluster_env
  if [[ -f "${dir}/real-node.env" ]] && (status) >/dev/null 2>&1; then
    log "real node ${node_name} already running"
    return
  fi
  local started=${SECONDS}
  for tool in containerd ctr runc podman gcc; do
    command -v "${tool}" >/dev/null || die "${tool} is not installed (run make setup)"
  done
  [[ -x /usr/lib/cni/loopback ]] || die "the CNI loopback plugin is missing (containernetworking-plugins)"
  [[ -x "${bin}/kubelet" ]] || die "no kubelet in ${bin} (hack/testenv-build.sh builds it)"
  [[ -n "${KUBELET_PORT:-}" ]] || die "${dir}/ports.env has no KUBELET_PORT: restart the cluster (make cluster-down cluster-up)"

  teardown "${state}"  # leftovers of a killed run on the same ports
  mkdir -p "${state}"
  cat >"${dir}/real-node.env" <<EOF
REAL_NODE_NAME=${node_name}
REAL_NODE_STATE=${state}
EOF

  # The kubelet's credentials: the client certificate of system:node:<name> that
  # hack/testenv/gen-pki.sh made, bound to the node role, and the right to review tokens and
  # access (its webhook authentication).
  [[ -f "${dir}/pki/kubelet.crt" ]] || die "${dir}/pki has no kubelet.crt: restart the cluster (make cluster-down cluster-up)"
  write_kubeconfig "${bin}/kubectl" "${state}/kubelet.kubeconfig" "https://127.0.0.1:${APISERVER_PORT}" \
    "${dir}/pki/ca.crt" kubelet "${dir}/pki/kubelet.crt" "${dir}/pki/kubelet.key" ||
    die "cannot write the kubelet's kubeconfig"
  "${kubectl[@]}" apply -f - >/dev/null <<EOF || die "binding the kubelet's roles failed"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: node-maintenance-testenv:real-node
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:node}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: "system:node:${node_name}"}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: node-maintenance-testenv:real-node-auth-delegator
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:auth-delegator}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: "system:node:${node_name}"}
EOF

  log "starting containerd"
  write_containerd_config
  start_detached "${dir}/logs/containerd.log" 0 containerd --config "${state}/containerd.toml"
  echo "${START_DETACHED_PID}" >"${state}/containerd.pid"
  came_up "containerd answers" 60 ctr_ version
  make_pause_image

  log "starting the kubelet (node ${node_name})"
  write_kubelet_config
  start_detached "${dir}/logs/kubelet.log" 0 "${bin}/kubelet" \
    --config="${state}/kubelet.yaml" --kubeconfig="${state}/kubelet.kubeconfig" \
    --root-dir="${state}/kubelet" --cert-dir="${state}/kubelet-pki" \
    --hostname-override="${node_name}" --cloud-provider=external \
    --node-labels="${node_label}=true,kubernetes.io/os=linux" --v=1
  echo "${START_DETACHED_PID}" >"${state}/kubelet.pid"
  came_up "node ${node_name} registered" 120 "${kubectl[@]}" get node "${node_name}"
  initialize_node
  came_up "node ${node_name} Ready" 120 node_ready "${node_name}"
  log "real node ${node_name} Ready in $((SECONDS - started))s (state ${state})"
}

load_image() {
  cluster_env
  [[ -f "${1:-}" ]] || die "load-image needs an image archive (docker-archive)"
  local started=${SECONDS}
  ctr_ images import "$1" >/dev/null || die "importing $1 into the real node's containerd failed"
  log "imported $1 in $((SECONDS - started))s"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  load-image) load_image "${2:-}" ;;
  *) die "usage: hack/real-node.sh up|down|status|load-image ARCHIVE" ;;
esac
