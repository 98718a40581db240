#!/usr/bin/env bash
# Starts a real Kubernetes control plane on 127.0.0.1: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler and kwok (fake kubelets), then creates the
# nodes of docs/design.md §8's scenarios. Returns once the cluster is usable. Running it
# again while the cluster is up is harmless. State (certificates, data, logs, PIDs) lives
# in .cluster/.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=hack/testenv-lib.sh
source "${root}/hack/testenv-lib.sh"

dir="$(cluster_dir)"
log() { printf '[cluster-up %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
started=${SECONDS}

# --- already running? -------------------------------------------------------------------
if [[ -f "${dir}/pids" ]] && "${root}/hack/cluster-status.sh" >/dev/null 2>&1; then
  log "cluster already running (${dir})"
  echo "export KUBECONFIG=${dir}/admin.kubeconfig"
  exit 0
fi
if [[ -e "${dir}" ]]; then
  log "removing leftovers of an earlier cluster"
  "${root}/hack/cluster-down.sh" >/dev/null 2>&1 || true
fi

kube_version="$(testenv_k8s_version)"  # also dies on a KUBE_VERSION that is not pinned
bin="$("${root}/hack/testenv-build.sh")"
command -v openssl >/dev/null || die "openssl is not installed (run make setup)"
command -v curl >/dev/null || die "curl is not installed (run make setup)"

mkdir -p "${dir}"/{pki,logs,etcd-data}
: >"${dir}/pids"

# --- ports ------------------------------------------------------------------------------
base="${NMO_CLUSTER_PORT_BASE:-$(default_port_base)}"
for _ in $(seq 1 50); do
  busy=0
  for offset in $(seq 0 12); do
    if port_in_use $((base + offset)); then busy=1; fi
  done
  ((busy == 0)) && break
  [[ -n "${NMO_CLUSTER_PORT_BASE:-}" ]] && die "ports ${base}..$((base + 12)) are in use; choose another NMO_CLUSTER_PORT_BASE"
  base=$((base + 20))
done
etcd_port=${base}
etcd_peer_port=$((base + 1))
api_port=$((base + 2))
kcm_port=$((base + 3))
sched_port=$((base + 4))
cat >"${dir}/ports.env" <<EOF
NMO_CLUSTER_PORT_BASE=${base}
ETCD_PORT=${etcd_port}
APISERVER_PORT=${api_port}
KCM_PORT=${kcm_port}
SCHEDULER_PORT=${sched_port}
# Free for the operator when it runs locally (webhook, metrics, health probes).
WEBHOOK_PORT=$((base + 5))
METRICS_PORT=$((base + 6))
HEALTH_PORT=$((base + 7))
# The real node (hack/real-node.sh): the kubelet, and the operator's pods on the host network.
KUBELET_PORT=$((base + 8))
KUBELET_HEALTHZ_PORT=$((base + 9))
POD_WEBHOOK_PORT=$((base + 10))
POD_METRICS_PORT=$((base + 11))
POD_HEALTH_PORT=$((base + 12))
EOF
echo "${bin}" >"${dir}/bin-dir"
log "Kubernetes ${kube_version}, ports: etcd ${etcd_port}, kube-apiserver ${api_port}, controller-manager ${kcm_port}, scheduler ${sched_port}"

# --- certificates -----------------------------------------------------------------------
"${root}/hack/testenv/gen-pki.sh" "${dir}/pki" >"${dir}/logs/pki.log" 2>&1 ||
  { tail -n 20 "${dir}/logs/pki.log" >&2; die "generating certificates failed"; }

kubectl=("${bin}/kubectl")
kubeconfig="${dir}/admin.kubeconfig"
write_kubeconfig "${bin}/kubectl" "${kubeconfig}" "https://127.0.0.1:${api_port}" "${dir}/pki/ca.crt" \
  admin "${dir}/pki/admin.crt" "${dir}/pki/admin.key" || die "cannot write ${kubeconfig}"

# --- process helpers --------------------------------------------------------------------
start() { # start <name> <binary> [args...]
  local name="$1"
  shift
  start_detached "${dir}/logs/${name}.log" 0 "$@"
  echo "${name} ${START_DETACHED_PID}" >>"${dir}/pids"
}

failed() { # failed <name> <why>
  log "${1} failed: ${2}"
  echo "--- last lines of ${dir}/logs/${1}.log ---" >&2
  tail -n 30 "${dir}/logs/${1}.log" >&2 || true
  "${root}/hack/cluster-down.sh" --keep-logs >/dev/null 2>&1 || true
  die "${1} did not start (full log: ${dir}/logs/${1}.log)"
}

alive() { kill -0 "$(awk -v n="$1" '$1 == n {print $2}' "${dir}/pids")" 2>/dev/null; }

wait_for() { # wait_for <name> <timeout-seconds> <command...>
  local name="$1" timeout="$2"
  shift 2
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    alive "${name}" || failed "${name}" "process exited"
    ((SECONDS < deadline)) || failed "${name}" "not ready after ${timeout}s"
    sleep 0.2
  done
}

# --- etcd -------------------------------------------------------------------------------
log "starting etcd"
start etcd "${bin}/etcd" --name=node0 --data-dir="${dir}/etcd-data" \
  --listen-client-urls="http://127.0.0.1:${etcd_port}" --advertise-client-urls="http://127.0.0.1:${etcd_port}" \
  --listen-peer-urls="http://127.0.0.1:${etcd_peer_port}" \
  --initial-advertise-peer-urls="http://127.0.0.1:${etcd_peer_port}" \
  --initial-cluster="node0=http://127.0.0.1:${etcd_peer_port}" \
  --listen-metrics-urls="" --unsafe-no-fsync=true --auto-compaction-retention=1 --log-level=warn
wait_for etcd 60 bash -c "curl -sf http://127.0.0.1:${etcd_port}/health | grep -q '\"health\":\"true\"'"

# --- kube-apiserver ---------------------------------------------------------------------
log "starting kube-apiserver"
# Before 1.28, SelfSubjectReview ("who am I", which the client tests ask) is a beta API, and new
# beta APIs are off by default.
minor="$(testenv_minor)"
extra_apiserver_flags=()
((minor >= 28)) || extra_apiserver_flags+=(--runtime-config=authentication.k8s.io/v1beta1=true)
# From 1.37 on, the well-known node lifecycle conditions (MaintenanceInProgress, DrainInProgress,
# Drained, MaintenancePlanned) are an alpha feature: on, as a cluster that wants them runs it.
feature_gates=()
((minor < 37)) || feature_gates=(--feature-gates=NodeLifecycleConditions=true)
# ConfigMaps bypass the watch cache so that, once etcd is compacted, a watch from an old
# version is answered 410 at once instead of from the cache's history (the fault tests use it).
start kube-apiserver "${bin}/kube-apiserver" \
  --etcd-servers="http://127.0.0.1:${etcd_port}" \
  --bind-address=127.0.0.1 --secure-port="${api_port}" --advertise-address=127.0.0.1 \
  --endpoint-reconciler-type=none \
  --tls-cert-file="${dir}/pki/apiserver.crt" --tls-private-key-file="${dir}/pki/apiserver.key" \
  --client-ca-file="${dir}/pki/ca.crt" \
  --kubelet-client-certificate="${dir}/pki/apiserver-kubelet-client.crt" \
  --kubelet-client-key="${dir}/pki/apiserver-kubelet-client.key" \
  --kubelet-preferred-address-types=InternalIP,Hostname \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-signing-key-file="${dir}/pki/sa.key" --service-account-key-file="${dir}/pki/sa.pub" \
  --authorization-mode=RBAC --service-cluster-ip-range=10.0.0.0/24 --allow-privileged=true \
  --default-not-ready-toleration-seconds=300 --default-unreachable-toleration-seconds=300 \
  --watch-cache-sizes=configmaps#0 --profiling=false --v=1 "${extra_apiserver_flags[@]}" \
  "${feature_gates[@]}"
wait_for kube-apiserver 120 curl -sf --cacert "${dir}/pki/ca.crt" "https://127.0.0.1:${api_port}/readyz"

# --- controller-manager, scheduler, kwok ------------------------------------------------
log "starting kube-controller-manager, kube-scheduler and kwok"
# Without the volume, autoscaling and resource-claim controllers (nothing here needs them);
# Kubernetes 1.28 renamed them all to <name>-controller.
if ((minor >= 28)); then
  controllers='*,-horizontal-pod-autoscaler-controller,-persistentvolume-binder-controller,-persistentvolume-expander-controller,-persistentvolume-attach-detach-controller,-ephemeral-volume-controller,-resourceclaim-controller'
else
  controllers='*,-horizontalpodautoscaling,-persistentvolume-binder,-persistentvolume-expander,-attachdetach,-ephemeral-volume'
fi
start kube-controller-manager "${bin}/kube-controller-manager" \
  --kubeconfig="${kubeconfig}" --authentication-kubeconfig="${kubeconfig}" \
  --authorization-kubeconfig="${kubeconfig}" --bind-address=127.0.0.1 --secure-port="${kcm_port}" \
  --leader-elect=false --root-ca-file="${dir}/pki/ca.crt" \
  --service-account-private-key-file="${dir}/pki/sa.key" \
  --controllers="${controllers}" \
  --node-monitor-grace-period=50s --kube-api-qps=100 --kube-api-burst=200 --concurrent-gc-syncs=5 \
  --profiling=false --v=1 "${feature_gates[@]}"
start kube-scheduler "${bin}/kube-scheduler" \
  --kubeconfig="${kubeconfig}" --authentication-kubeconfig="${kubeconfig}" \
  --authorization-kubeconfig="${kubeconfig}" --bind-address=127.0.0.1 --secure-port="${sched_port}" \
  --leader-elect=false --profiling=false --v=1 "${feature_gates[@]}"
"${root}/hack/testenv/kwok-config.sh" >"${dir}/kwok.yaml" || die "cannot write the kwok configuration"
start kwok "${bin}/kwok" --kubeconfig="${kubeconfig}" --config="${dir}/kwok.yaml" \
  --manage-all-nodes=false --manage-nodes-with-label-selector='!node-maintenance.test/real-kubelet' \
  --node-lease-duration-seconds=40 --node-ip=127.0.0.1 --cidr=10.0.0.0/16
wait_for kube-controller-manager 90 curl -sfk "https://127.0.0.1:${kcm_port}/healthz"
wait_for kube-scheduler 90 curl -sfk "https://127.0.0.1:${sched_port}/healthz"

export KUBECONFIG="${kubeconfig}"
# --- topology ---------------------------------------------------------------------------
log "creating nodes"
"${root}/hack/testenv/nodes.sh" | "${kubectl[@]}" apply -f - >"${dir}/logs/nodes.log" 2>&1 ||
  failed nodes "kubectl apply of the nodes failed"
wait_for kwok 120 bash -c "[[ \$('${bin}/kubectl' get nodes --no-headers | awk '\$2 == \"Ready\"' | wc -l) -ge 8 ]]"
wait_for kube-controller-manager 120 "${bin}/kubectl" get serviceaccount default -n default
wait_for kube-controller-manager 60 "${bin}/kubectl" get configmap kube-root-ca.crt -n default
# The node-lifecycle controller removes the not-ready taint once kwok reports Ready.
wait_for kube-controller-manager 120 bash -c \
  "! '${bin}/kubectl' get nodes -o jsonpath='{.items[*].spec.taints[*].key}' | grep -q node.kubernetes.io/not-ready"

# NMO_REAL_NODE=1: also a real kubelet node (make test's deploy e2e needs it); its kubelet is
# built for the default version only.
if [[ "${NMO_REAL_NODE:-0}" == 1 ]] && testenv_default_version; then
  "${root}/hack/real-node.sh" up || failed kubelet "the real node did not come up"
fi

log "cluster ready in $((SECONDS - started))s"
"${root}/hack/cluster-status.sh" --memory >&2 || true
echo "export KUBECONFIG=${kubeconfig}"
