#!/usr/bin/env bash
# Drain latency, side by side with upstream medik8s NMO and `kubectl drain` in the same run
# (docs/benchmarks.md, scenario 1): a fresh kwok node with 110 pods (three Deployments of 20
# pinned to the node, one DaemonSet pod, 49 bare pods; the default 30 s grace period, which kwok's
# delete stage completes at once), drained
#   - by the operator: from `kubectl create` of a NodeMaintenance to `kubectl wait` seeing
#     Succeeded;
#   - by upstream medik8s NMO's own manager the same way, on an identical node (the fixture in
#     NMO_UPSTREAM_NMO_DIR, default shared/upstream-nmo beside the checkout; left out without it);
#   - by `kubectl drain --ignore-daemonsets --delete-emptydir-data --force` on an identical node;
#   - the floor, what the API server itself needs: on an identical node, cordoned first (not
#     timed), every eviction at once from one HTTP/2 client without a limit until the node's pods
#     are gone (a LIST every 0.05 s standing for the watch event).
# Each operator runs only during its own drains. Each side runs NMO_BENCH_DRAIN_RUNS times
# (default 5), alternating; prints the medians, their ratios, the client QPS/burst of each side,
# the API requests the operator sent per maintenance (its rest_client_requests_total), the
# requests and CPU of the API server over each drain (every client's), the operators' RSS idle
# and at peak; also the operator's start-up time (process start to /readyz 200), its RSS then,
# and the stripped binary sizes. Needs the local cluster (brings it up);
# holds the cluster's lock while it runs so that no test shares the cluster with it.
#   NMO_BENCH_DRAIN_RUNS   runs per side (default 5)
#   NMO_BENCH_DRAIN_PODS   pods per node (default 110, the kubelet's default maximum)
#   NMO_BENCH_DRAIN_QPS, NMO_BENCH_DRAIN_BURST  the operator's client rate limit (default 0 / 30,
#                          its defaults: no client-side limit)
#   NMO_BENCH_DRAIN_IN_FLIGHT  the operator's --evictions-in-flight (default 32, its default)
#   NMO_BENCH_DRAIN_SWEEP  values of --evictions-in-flight to sweep after the side-by-side runs
#                          (e.g. "1 4 16 32 64 128"; default none): the operator alone drains an
#                          identical node at each, NMO_BENCH_DRAIN_SWEEP_RUNS times (default 1),
#                          and a table gives time, API server CPU and requests, and peak RSS
#                          against the value (NMO_BENCH_DRAIN_RUNS=0 runs the sweep alone)
#   NMO_OPERATOR_BIN       the operator binary (default build-release/bin/node-maintenance-operator)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"
log() { printf '[bench-drain %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
# shellcheck source=hack/bench-lib.sh
source "${root}/hack/bench-lib.sh"

runs="${NMO_BENCH_DRAIN_RUNS:-5}"
pods="${NMO_BENCH_DRAIN_PODS:-110}"
# Both sides' client rate limits, stated in the table, each side at its defaults: the operator's
# flags --kube-api-qps/--kube-api-burst, and client-go's 5 qps / burst 10 for kubectl, which has
# no flag for them (its "evicted" lines come 0.2 s apart once the burst is spent).
operator_qps="${NMO_BENCH_DRAIN_QPS:-0}"
operator_in_flight="${NMO_BENCH_DRAIN_IN_FLIGHT:-32}"
operator_burst="${NMO_BENCH_DRAIN_BURST:-30}"
kubectl_qps="5 (client-go default)"
kubectl_burst="10"
deployments=3
per_deployment=20
bare=$((pods - deployments * per_deployment - 1))
((bare >= 0)) || die "NMO_BENCH_DRAIN_PODS must be at least $((deployments * per_deployment + 1))"

bench_setup

ns="bench-drain-$(date +%s)"
work="$(mktemp -d)"
operator_pid=""
cleanup() {
  stop_operator
  stop_upstream
  kubectl delete nm -l bench=drain --ignore-not-found --wait=false >/dev/null 2>&1 || true
  kubectl delete namespace "${ns}" --ignore-not-found --wait=false >/dev/null 2>&1 || true
  kubectl delete nodes -l bench=drain --ignore-not-found --wait=false >/dev/null 2>&1 || true
  rm -rf "${work}"
}
trap cleanup EXIT

# Waits until `kubectl get pods` on node $1 shows $2 Running pods.
wait_running() {
  local deadline=$((SECONDS + 180)) n=0
  while ((SECONDS < deadline)); do
    n="$(kubectl get pods -A --field-selector "spec.nodeName=$1,status.phase=Running" \
      --no-headers 2>/dev/null | wc -l)"
    ((n >= $2)) && return 0
    sleep 0.5
  done
  die "node $1: ${n} of $2 pods Running after 180 s"
}

kubectl create namespace "${ns}" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
kubectl apply -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: ${ns}}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      nodeSelector: {bench: drain}
      tolerations: [{operator: Exists}]
      containers: [{name: agent, image: agent}]
EOF

# Creates node $1 with its pods and waits until all of them run.
prepare_node() {
  local node="$1" i
  kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Node
metadata:
  name: ${node}
  labels: {kubernetes.io/hostname: ${node}, kubernetes.io/os: linux, bench: drain,
           node-role.kubernetes.io/worker: ""}
  annotations: {node.alpha.kubernetes.io/ttl: "0", kwok.x-k8s.io/node: fake}
EOF
  for ((i = 1; i <= deployments; i++)); do
    kubectl apply -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: ${node}-web-${i}, namespace: ${ns}}
spec:
  replicas: ${per_deployment}
  selector: {matchLabels: {app: ${node}-web-${i}}}
  template:
    metadata: {labels: {app: ${node}-web-${i}}}
    spec:
      nodeSelector: {kubernetes.io/hostname: ${node}}
      containers: [{name: web, image: web}]
EOF
  done
  {
    for ((i = 1; i <= bare; i++)); do
      printf -- '---\napiVersion: v1\nkind: Pod\nmetadata: {name: %s-bare-%d, namespace: %s}\n' \
        "${node}" "${i}" "${ns}"
      printf 'spec: {nodeName: %s, containers: [{name: c, image: c}]}\n' "${node}"
    done
  } | kubectl apply -f - >/dev/null
  wait_running "${node}" "${pods}"
}

upstream_prepare "${work}"
upstream_pid=""

# The API server's counters around one drain, appended to the side's arrays <side>_cpu (its CPU
# in ms per evicted pod) and <side>_all (requests it answered, from all clients).
usage_before=""
measure_begin() { usage_before="$(apiserver_usage)"; }
measure_end() { # measure_end <side>
  local cpu0 req0 cpu1 req1
  read -r cpu0 req0 <<<"${usage_before}"
  read -r cpu1 req1 <<<"$(apiserver_usage)"
  eval "$1_cpu+=($(awk -v a="${cpu0}" -v b="${cpu1}" -v n="${evicted}" 'BEGIN { printf "%.1f", (b - a) * 1000 / n }'))"
  eval "$1_all+=($((req1 - req0)))"
}
# What a drain evicts: every pod but the DaemonSet's.
evicted=$((pods - 1))

# drain_by_maintenance <node>: create → Succeeded, by whichever operator runs.
drain_by_maintenance() {
  kubectl apply -f - >/dev/null <<EOF
apiVersion: nodemaintenance.medik8s.io/v1beta1
kind: NodeMaintenance
metadata: {name: $1, labels: {bench: drain}}
spec: {nodeName: $1, reason: bench}
EOF
  kubectl wait "nodemaintenance/$1" --for=jsonpath='{.status.phase}'=Succeeded --timeout=300s >/dev/null
}

# undo_maintenance <node>: the workloads first, so that nothing is scheduled back when the node
# is uncordoned, then the maintenance, while its operator still runs to restore the node.
undo_maintenance() {
  kubectl delete deployment -n "${ns}" --all --wait=false >/dev/null 2>&1 || true
  kubectl delete "nodemaintenance/$1" --wait=true --timeout=120s >/dev/null
}

operator_times=() kubectl_times=() upstream_times=() floor_times=()
operator_requests=() operator_peak=() upstream_peak=() upstream_idle=()
operator_cpu=() kubectl_cpu=() upstream_cpu=() floor_cpu=()
operator_all=() kubectl_all=() upstream_all=() floor_all=()
startup="" idle_rss_kb=""
# operator_drain <side> <node> <evictions in flight> <log file>: a fresh operator drains the
# node (prepared here); appends to <side>_times, _requests, _peak, _cpu and _all.
operator_drain() {
  local side="$1" node="$2" in_flight="$3" before t0 t1 started
  prepare_node "${node}"
  log "${node}: the operator (${binary##*/}, as its ServiceAccount, qps ${operator_qps}, burst ${operator_burst}, ${in_flight} evictions in flight) on ${node}"
  started="$(now)"
  start_operator "$4" --kube-api-qps="${operator_qps}" \
    --kube-api-burst="${operator_burst}" --evictions-in-flight="${in_flight}"
  if [[ -z "${startup}" ]]; then
    startup="$(elapsed "${started}" "$(now)")"
    idle_rss_kb="$(proc_kib "${operator_pid}" VmRSS)"
  fi
  before="$(requests_sent)"
  measure_begin
  t0="$(now)"
  drain_by_maintenance "${node}"
  t1="$(now)"
  measure_end "${side}"
  eval "${side}_times+=($(elapsed "${t0}" "${t1}"))"
  eval "${side}_requests+=($(($(requests_sent) - before)))"
  eval "${side}_peak+=($(proc_kib "${operator_pid}" VmHWM))"
  undo_maintenance "${node}"
  stop_operator
}

for ((run = 1; run <= runs; run++)); do
  # Each operator runs during its own drains only: both act on every NodeMaintenance.
  operator_drain operator "bench-op-${run}" "${operator_in_flight}" "${work}/operator-${run}.log"

  if [[ -n "${upstream_bin}" ]]; then
    node="bench-up-${run}"
    prepare_node "${node}"
    log "run ${run}/${runs}: upstream medik8s NMO (as cluster admin, no client-side limit) on ${node}"
    start_upstream "${work}/upstream-${run}.log"
    upstream_idle+=("$(proc_kib "${upstream_pid}" VmRSS)")
    measure_begin
    t0="$(now)"
    drain_by_maintenance "${node}"
    t1="$(now)"
    measure_end upstream
    upstream_times+=("$(elapsed "${t0}" "${t1}")")
    upstream_peak+=("$(proc_kib "${upstream_pid}" VmHWM)")
    undo_maintenance "${node}"
    stop_upstream
  fi

  # The floor: what the API server itself needs for the same drain. The node cordoned first (not
  # timed, so replacements stay Pending), then every eviction at once from one HTTP/2 client
  # without a limit, until the node's pods are gone (a LIST every 0.05 s stands for the watch
  # event a controller would get).
  node="bench-floor-${run}"
  prepare_node "${node}"
  log "run ${run}/${runs}: the floor (every eviction at once) on ${node}"
  kubectl cordon "${node}" >/dev/null
  kubectl get pods -n "${ns}" --field-selector "spec.nodeName=${node}" --no-headers \
    -o custom-columns=NAME:.metadata.name,OWNER:.metadata.ownerReferences[0].kind |
    awk '$2 != "DaemonSet" {print $1}' >"${work}/floor-pods"
  (($(wc -l <"${work}/floor-pods") == evicted)) || die "the floor's node does not have the ${evicted} pods to evict"
  measure_begin
  t0="$(now)"
  awk -v ns="${ns}" '{
      printf "/api/v1/namespaces/%s/pods/%s/eviction\t", ns, $1
      printf "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\"}}\n", $1, ns
    }' "${work}/floor-pods" | NMO_BENCH_CREATE_PARALLEL="${evicted}" bench_create
  until [[ "$(kubectl get pods -n "${ns}" --field-selector "spec.nodeName=${node}" --no-headers 2>/dev/null |
    wc -l)" -le 1 ]]; do
    sleep 0.05
  done
  t1="$(now)"
  measure_end floor
  floor_times+=("$(elapsed "${t0}" "${t1}")")
  kubectl delete deployment -n "${ns}" --all --wait=false >/dev/null 2>&1 || true

  node="bench-kubectl-${run}"
  prepare_node "${node}"
  log "run ${run}/${runs}: kubectl drain on ${node}"
  measure_begin
  t0="$(now)"
  kubectl drain "${node}" --ignore-daemonsets --delete-emptydir-data --force --timeout=300s \
    >/dev/null 2>&1
  t1="$(now)"
  measure_end kubectl
  kubectl_times+=("$(elapsed "${t0}" "${t1}")")
  kubectl delete deployment -n "${ns}" --all --wait=false >/dev/null 2>&1 || true
done

mib() { awk -v k="$(median "$@")" 'BEGIN { printf "%.1f", k / 1024 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
count() { median "$@" | awk '{ printf "%.0f", $1 }'; }

# The sweep of --evictions-in-flight: the operator alone, on identical nodes.
read -r -a sweep <<<"${NMO_BENCH_DRAIN_SWEEP:-}"
sweep_runs="${NMO_BENCH_DRAIN_SWEEP_RUNS:-1}"
sweep_rows=()
for in_flight in "${sweep[@]}"; do
  sweep_times=() sweep_requests=() sweep_peak=() sweep_cpu=() sweep_all=()
  for ((run = 1; run <= sweep_runs; run++)); do
    operator_drain sweep "bench-sweep-${in_flight}-${run}" "${in_flight}" \
      "${work}/sweep-${in_flight}-${run}.log"
  done
  sweep_rows+=("$(printf '%-10s %-9s %-16s %-14s %-9s %-9s %s' "${in_flight}" \
    "$(median "${sweep_times[@]}")" "$(printf '%.1f ' "${sweep_times[@]}")" \
    "$(median "${sweep_cpu[@]}")" "$(count "${sweep_all[@]}")" \
    "$(count "${sweep_requests[@]}")" "$(mib "${sweep_peak[@]}")")")
done

if ((runs > 0)); then
  op="$(median "${operator_times[@]}")"
  kc="$(median "${kubectl_times[@]}")"
  printf '\nDrain latency: %d pods per node (%d Deployment, 1 DaemonSet, %d bare; %d evicted), %d runs per side\n' \
    "${pods}" "$((deployments * per_deployment))" "${bare}" "${evicted}" "${runs}"
  row() { printf '%-42s %-9s %-16s %-27s %-9s %-9s %-14s %s\n' "$@"; }
  row "side" "median s" "runs s" "client qps / burst" "own reqs" "all reqs" "server CPU ms" "RSS idle / peak MiB"
  row "operator (NodeMaintenance → Succeeded)" "${op}" "$(printf '%.1f ' "${operator_times[@]}")" \
    "${operator_qps} / ${operator_burst}" "$(count "${operator_requests[@]}")" \
    "$(count "${operator_all[@]}")" "$(median "${operator_cpu[@]}")" \
    "$(mib "${idle_rss_kb}") / $(mib "${operator_peak[@]}")"
  if [[ -n "${upstream_bin}" ]]; then
    up="$(median "${upstream_times[@]}")"
    row "upstream medik8s NMO (the same)" "${up}" "$(printf '%.1f ' "${upstream_times[@]}")" \
      "none (APF only)" "-" "$(count "${upstream_all[@]}")" "$(median "${upstream_cpu[@]}")" \
      "$(mib "${upstream_idle[@]}") / $(mib "${upstream_peak[@]}")"
  fi
  fl="$(median "${floor_times[@]}")"
  row "floor: evictions at once (curl, HTTP/2)" "${fl}" "$(printf '%.1f ' "${floor_times[@]}")" \
    "none" "-" "$(count "${floor_all[@]}")" "$(median "${floor_cpu[@]}")" "-"
  row "kubectl drain --ignore-daemonsets --force" "${kc}" "$(printf '%.1f ' "${kubectl_times[@]}")" \
    "${kubectl_qps} / ${kubectl_burst}" "-" "$(count "${kubectl_all[@]}")" \
    "$(median "${kubectl_cpu[@]}")" "-"
  printf 'own reqs: the operator'"'"'s rest_client_requests_total. all reqs, server CPU ms (per evicted pod): the API\n'
  printf 'server'"'"'s apiserver_request_total and process_cpu_seconds_total over the drain, every client included.\n'
  printf 'ratio operator / floor: %s; operator / kubectl drain: %s' "$(ratio "${op}" "${fl}")" \
    "$(ratio "${op}" "${kc}")"
  if [[ -n "${upstream_bin}" ]]; then
    printf '; operator / upstream NMO: %s (time), %s (peak RSS), %s (API server CPU)' \
      "$(ratio "${op}" "${up}")" "$(ratio "$(median "${operator_peak[@]}")" "$(median "${upstream_peak[@]}")")" \
      "$(ratio "$(median "${operator_cpu[@]}")" "$(median "${upstream_cpu[@]}")")"
  fi
  printf '\n'
fi

if ((${#sweep[@]} > 0)); then
  printf '\nEvictions in flight (--evictions-in-flight) against drain time: %d pods per node (%d evicted), %d run(s) each, qps %s\n' \
    "${pods}" "${evicted}" "${sweep_runs}" "${operator_qps}"
  printf '%-10s %-9s %-16s %-14s %-9s %-9s %s\n' "in flight" "median s" "runs s" "server CPU ms" \
    "all reqs" "own reqs" "peak RSS MiB"
  printf '%s\n' "${sweep_rows[@]}"
  if ((runs > 0)); then printf 'floor in this run: %s s (evictions at once)\n' "${fl}"; fi
fi

stripped() { strip -o "${work}/stripped" "$1" && stat -c %s "${work}/stripped"; }
printf '\nOperator start-up: process start to /readyz 200 in %.2f s (polled every 20 ms); RSS when ready %d KiB\n' \
  "${startup}" "${idle_rss_kb}"
printf 'Binary sizes, stripped: node-maintenance-operator %d bytes' "$(stripped "${binary}")"
cli="$(dirname "${binary}")/kubectl-maintenance"
[[ -x "${cli}" ]] && printf ', kubectl-maintenance %d bytes' "$(stripped "${cli}")"
printf '\n'
