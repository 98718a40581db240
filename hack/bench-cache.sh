#!/usr/bin/env bash
# What the controllers' reads cost (docs/benchmarks.md, scenario 7), on a cluster of its own:
#   1. NMO_BENCH_CACHE_PENDING (default 1,000) NodeMaintenances at once, one per kwok node, with
#      the operator's budget at one (--max-parallel-maintenances 1): the first one Running (its
#      node's pod is held by a PodDisruptionBudget allowing no disruption), all the others Pending
#      for the slot. Once they are: the operator's open file descriptors, its TCP connections to
#      the API server, its RSS, and its API requests over NMO_BENCH_CACHE_WINDOW seconds (default
#      60), as requests per minute by method.
#   2. The cluster grown to NMO_BENCH_CACHE_NODES (default 10,000) nodes: a MaintenancePlan of two
#      nodes (doneWhen Confirmed, one at a time) whose first node is held in its health gate (the
#      PodDisruptionBudget that covered its pod raised to minAvailable 1 once the pod has left, so
#      it is never whole again). Over the same window: the operator's requests per minute by
#      method, and the API server's node LISTs and their response bytes per minute (every
#      client's; nothing else here lists nodes).
# The figures the shared cache is judged by: connections that do not grow with the number of
# maintenances, and a plan whose reads do not grow with the cluster.
# Runs on a cluster of its own (state in <cluster dir>-cache, ports picked free), brought up at
# the start and stopped at the end; the shared cluster is left alone.
#   NMO_BENCH_CACHE_PENDING  NodeMaintenances in part 1 (default 1000)
#   NMO_BENCH_CACHE_NODES    cluster size in part 2 (default 10000, at least PENDING + 2)
#   NMO_BENCH_CACHE_WINDOW   seconds each part is measured over (default 60)
#   NMO_OPERATOR_BIN         the operator binary (default build-release/bin/node-maintenance-operator)
#   NMO_CLI_BIN              the plugin (default build-release/bin/kubectl-maintenance)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"
log() { printf '[bench-cache %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
# shellcheck source=hack/bench-lib.sh
source "${root}/hack/bench-lib.sh"

pending="${NMO_BENCH_CACHE_PENDING:-1000}"
size="${NMO_BENCH_CACHE_NODES:-10000}"
window="${NMO_BENCH_CACHE_WINDOW:-60}"
cli="${NMO_CLI_BIN:-${root}/build-release/bin/kubectl-maintenance}"
((pending >= 2)) || die "NMO_BENCH_CACHE_PENDING must be at least 2"
((size >= pending + 2)) || die "NMO_BENCH_CACHE_NODES must be at least NMO_BENCH_CACHE_PENDING + 2"
[[ -x "${cli}" ]] || die "${cli} not found: build the release preset first (make bench does)"

bench_own_cluster_select "${NMO_BENCH_CACHE_CLUSTER_DIR:-$(cluster_dir)-cache}"
work="$(mktemp -d)"
operator_pid=""
cleanup() {
  stop_operator
  hack/cluster-down.sh >/dev/null 2>&1 || true
  rm -rf "${work}"
}
trap cleanup EXIT

bench_own_cluster_up
bench_setup

ns="bench-cache-$(date +%s)"
prefix="bench-cache-"
make_namespace "${ns}"
node_name() { printf '%s%05d' "${prefix}" "$1"; }

# The operator's TCP connections to the API server: its socket descriptors that /proc/net/tcp*
# lists as established to the API server's port.
api_connections() {
  local inodes port
  inodes="$(find "/proc/$1/fd" -lname 'socket:*' -printf '%l\n' 2>/dev/null | tr -dc '0-9\n')"
  port="$(printf '%04X' "${APISERVER_PORT}")"
  awk -v port=":${port}" 'NR == FNR { mine[$1] = 1; next }
    FNR > 1 && $4 == "01" && substr($3, length($3) - 4) == port && ($10 in mine) { n++ }
    END { print n + 0 }' <(echo "${inodes}") /proc/net/tcp /proc/net/tcp6
}
open_fds() { find "/proc/$1/fd" -mindepth 1 -maxdepth 1 | wc -l; }

# The operator's requests so far by method, as "METHOD=count" words.
requests_by_method() {
  curl -s "http://127.0.0.1:${METRICS_PORT}/metrics" | awk '
    /^rest_client_requests_total\{/ {
      m = $0; sub(/.*method="/, "", m); sub(/".*/, "", m); count[m] += $NF
    }
    END { for (m in count) printf "%s=%d\n", m, count[m] }' | sort
}
# per_minute <before file> <after file> <seconds>: "METHOD n/min" for each method, and the total.
per_minute() {
  awk -F= -v s="$3" 'NR == FNR { before[$1] = $2; next }
    { d = $2 - before[$1]; total += d; if (d > 0) printf "%s %.0f, ", $1, d * 60 / s }
    END { printf "total %.0f", total * 60 / s }' "$1" "$2"
}
# The API server's node LISTs and their response bytes so far (every client's), as "<lists> <bytes>".
node_lists() {
  admin_curl "${bench_server}/metrics" | awk '
    /^apiserver_request_total\{/ && /resource="nodes"/ && /verb="LIST"/ { lists += $NF }
    /^apiserver_response_sizes_sum\{/ && /resource="nodes"/ && /verb="LIST"/ { bytes += $NF }
    END { printf "%d %.0f\n", lists, bytes }'
}

# --- 1. Pending NodeMaintenances --------------------------------------------------------
log "${pending} kwok nodes, a pod held by a PodDisruptionBudget on the first"
bench_nodes "${prefix}" 0 "${pending}" cache | bench_create
kubectl wait "node/$(node_name 0)" --for=condition=Ready --timeout=300s >/dev/null
bench_pods "${ns}" "${prefix}" 0 1 1 0 '{"blocked":"true"}' | bench_create
wait_pods_running "${ns}" 1 300 "$(node_name 0)"
pdb_blocking "${ns}"
start_operator "${work}/operator-pending.log" --max-parallel-maintenances=1
log "${pending} NodeMaintenances at once (budget 1)"
maintenances "${prefix}" 0 1 "{bench: cache}" | kubectl create -f - >/dev/null
kubectl wait "nm/$(node_name 0)" --for=jsonpath='{.status.phase}'=Running --timeout=120s >/dev/null
awk -v prefix="${prefix}" -v to="${pending}" 'BEGIN {
  for (i = 1; i < to; i++) {
    name = sprintf("%s%05d", prefix, i)
    printf "/apis/nodemaintenance.medik8s.io/v1beta1/nodemaintenances\t{\"apiVersion\":\"nodemaintenance.medik8s.io/v1beta1\",\"kind\":\"NodeMaintenance\",\"metadata\":{\"name\":\"%s\",\"labels\":{\"bench\":\"cache\"}},\"spec\":{\"nodeName\":\"%s\",\"reason\":\"bench\"}}\n", name, name
  }
}' | bench_create
all_pending() {
  [[ "$(kubectl get nm -l bench=cache -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' |
    grep -c '^Pending$')" -eq $((pending - 1)) ]]
}
wait_until 300 all_pending || die "not all ${pending} maintenances became Pending in 300 s"
requests_by_method >"${work}/pending-before"
sleep "${window}" # the measured window, not a synchronisation
requests_by_method >"${work}/pending-after"
pending_fds="$(open_fds "${operator_pid}")"
pending_conns="$(api_connections "${operator_pid}")"
pending_rss="$(proc_kib "${operator_pid}" VmRSS)"
pending_rate="$(per_minute "${work}/pending-before" "${work}/pending-after" "${window}")"
log "deleting the ${pending} NodeMaintenances (one deletecollection; the operator removes its finalizers)"
kubectl delete pdb bench-blocking -n "${ns}" >/dev/null
printf '/apis/nodemaintenance.medik8s.io/v1beta1/nodemaintenances?labelSelector=bench%%3Dcache\n' |
  bench_delete_collections
none_left() { [[ -z "$(kubectl get nm -l bench=cache -o name)" ]]; }
wait_until 600 none_left || die "NodeMaintenances left 600 s after their deletion"
stop_operator

# --- 2. a plan in its health gate on a large cluster ------------------------------------
first="$(node_name "${pending}")"
second="$(node_name "$((pending + 1))")"
log "growing the cluster to ${size} bench nodes; a 2-node plan on ${first} and ${second}"
bench_nodes "${prefix}" "${pending}" "$((pending + 2))" cache | bench_create
kubectl wait "node/${first}" "node/${second}" --for=condition=Ready --timeout=300s >/dev/null
bench_pods "${ns}" "${prefix}" "${pending}" "$((pending + 1))" 1 0 '{"gate":"true"}' | bench_create
wait_pods_running "${ns}" 1 300 "${first}"
kubectl apply -f - >/dev/null <<EOF
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: bench-gate, namespace: ${ns}}
spec:
  minAvailable: 0
  selector: {matchLabels: {gate: "true"}}
EOF
bench_nodes "${prefix}" "$((pending + 2))" "${size}" cache | bench_create
start_operator "${work}/operator-plan.log"
kubectl apply -f - >/dev/null <<EOF
apiVersion: nodemaintenance.medik8s.io/v1alpha1
kind: MaintenancePlan
metadata: {name: bench-cache}
spec:
  nodes: [${first}, ${second}]
  maxParallel: 1
  doneWhen: Confirmed
  reason: bench
EOF
entry_phase() {
  [[ "$(kubectl get maintenanceplan bench-cache -o jsonpath="{.status.nodes[?(@.name==\"$1\")].phase}")" == "$2" ]]
}
wait_until 300 entry_phase "${first}" InMaintenance || die "${first} did not reach InMaintenance"
kubectl patch pdb bench-gate -n "${ns}" --type=merge -p '{"spec":{"minAvailable":1}}' >/dev/null
"${cli}" done "${first}" >/dev/null
wait_until 120 entry_phase "${first}" HealthCheck || die "${first} did not reach its health gate"
requests_by_method >"${work}/gate-before"
read -r lists_before bytes_before < <(node_lists)
sleep "${window}" # the measured window, not a synchronisation
read -r lists_after bytes_after < <(node_lists)
requests_by_method >"${work}/gate-after"
entry_phase "${first}" HealthCheck || die "${first} left its health gate during the window"
gate_rate="$(per_minute "${work}/gate-before" "${work}/gate-after" "${window}")"
node_list_rate="$(awk -v l="$((lists_after - lists_before))" -v b0="${bytes_before}" \
  -v b1="${bytes_after}" -v s="${window}" \
  'BEGIN { printf "%.0f LISTs, %.1f MiB", l * 60 / s, (b1 - b0) * 60 / s / 1048576 }')"
plan_rss="$(proc_kib "${operator_pid}" VmRSS)"
kubectl delete maintenanceplan bench-cache --timeout=120s >/dev/null || true
stop_operator

printf '\nWhat the controllers read (kwok nodes, the operator at its defaults, a window of %d s)\n' "${window}"
printf '%-58s %s\n' "${pending} NodeMaintenances, budget 1 (1 Running, the rest Pending)" ""
printf '  %-30s %s\n' "open file descriptors" "${pending_fds}"
printf '  %-30s %s\n' "connections to the API server" "${pending_conns}"
printf '  %-30s %s KiB\n' "RSS" "${pending_rss}"
printf '  %-30s %s\n' "requests per minute" "${pending_rate}"
printf '%-58s %s\n' "a 2-node plan in its health gate, ${size} nodes" ""
printf '  %-30s %s\n' "requests per minute" "${gate_rate}"
printf '  %-30s %s\n' "node LISTs per minute" "${node_list_rate} (API server, every client)"
printf '  %-30s %s KiB\n' "RSS" "${plan_rss}"
