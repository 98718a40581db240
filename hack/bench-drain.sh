#!/usr/bin/env bash
# Drain latency, side by side with `kubectl drain` in the same run (docs/benchmarks.md, scenario 1): a fresh
# kwok node with 110 pods (three Deployments of 20 pinned to the node, one DaemonSet pod, 49 bare
# pods; the default 30 s grace period, which kwok's delete stage completes at once), drained
#   - by the operator: from `kubectl create` of a NodeMaintenance to `kubectl wait` seeing
#     Succeeded;
#   - by `kubectl drain --ignore-daemonsets --delete-emptydir-data --force` on an identical node.
# Each side runs NMO_BENCH_DRAIN_RUNS times (default 5), alternating; prints the medians, their
# ratio, the client QPS/burst of both sides and the API requests the operator sent per
# maintenance (from its rest_client_requests_total); also the operator's start-up time (process
# start to /readyz 200), its RSS then, and the stripped binary sizes. Needs the local cluster (brings it up);
# holds the cluster's lock while it runs so that no test shares the cluster with it.
#   NMO_BENCH_DRAIN_RUNS   runs per side (default 5)
#   NMO_BENCH_DRAIN_PODS   pods per node (default 110, the kubelet's default maximum)
#   NMO_BENCH_DRAIN_QPS, NMO_BENCH_DRAIN_BURST  the operator's client rate limit (default 0 / 30,
#                          its defaults: no client-side limit)
#   NMO_BENCH_DRAIN_IN_FLIGHT  the operator's --evictions-in-flight (default 32, its default)
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

log "starting the operator (${binary##*/}, as its ServiceAccount, qps ${operator_qps}, burst ${operator_burst}, ${operator_in_flight} evictions in flight)"
started="$(now)"
start_operator "${work}/operator.log" --kube-api-qps="${operator_qps}" --kube-api-burst="${operator_burst}" \
  --evictions-in-flight="${operator_in_flight}"
startup="$(elapsed "${started}" "$(now)")"
idle_rss_kb="$(proc_kib "${operator_pid}" VmRSS)"

operator_times=()
kubectl_times=()
operator_requests=()
for ((run = 1; run <= runs; run++)); do
  node="bench-op-${run}"
  log "run ${run}/${runs}: operator on ${node}"
  prepare_node "${node}"
  before="$(requests_sent)"
  t0="$(now)"
  kubectl apply -f - >/dev/null <<EOF
apiVersion: nodemaintenance.medik8s.io/v1beta1
kind: NodeMaintenance
metadata: {name: ${node}, labels: {bench: drain}}
spec: {nodeName: ${node}, reason: bench}
EOF
  kubectl wait "nodemaintenance/${node}" --for=jsonpath='{.status.phase}'=Succeeded --timeout=300s >/dev/null
  t1="$(now)"
  operator_times+=("$(elapsed "${t0}" "${t1}")")
  operator_requests+=("$(($(requests_sent) - before))")
  # The workloads first, so that nothing is scheduled back when the node is uncordoned.
  kubectl delete deployment -n "${ns}" --all --wait=false >/dev/null 2>&1 || true
  kubectl delete "nodemaintenance/${node}" --wait=true --timeout=120s >/dev/null

  node="bench-kubectl-${run}"
  log "run ${run}/${runs}: kubectl drain on ${node}"
  prepare_node "${node}"
  t0="$(now)"
  kubectl drain "${node}" --ignore-daemonsets --delete-emptydir-data --force --timeout=300s \
    >/dev/null 2>&1
  t1="$(now)"
  kubectl_times+=("$(elapsed "${t0}" "${t1}")")
  kubectl delete deployment -n "${ns}" --all --wait=false >/dev/null 2>&1 || true
done

op="$(median "${operator_times[@]}")"
kc="$(median "${kubectl_times[@]}")"
req="$(median "${operator_requests[@]}")"
ratio="$(awk -v a="${op}" -v b="${kc}" 'BEGIN { printf "%.2f", a / b }')"
printf '\nDrain latency: %d pods per node (%d Deployment, 1 DaemonSet, %d bare), %d runs per side\n' \
  "${pods}" "$((deployments * per_deployment))" "${bare}" "${runs}"
printf '%-44s %-12s %-10s %-22s %s\n' "side" "median s" "runs s" "client qps / burst" "API requests per drain"
printf '%-44s %-12s %-10s %-22s %s\n' "operator (NodeMaintenance → Succeeded)" "${op}" \
  "$(printf '%.1f ' "${operator_times[@]}")" "${operator_qps} / ${operator_burst}" "${req}"
printf '%-44s %-12s %-10s %-22s %s\n' "kubectl drain --ignore-daemonsets --force" "${kc}" \
  "$(printf '%.1f ' "${kubectl_times[@]}")" "${kubectl_qps} / ${kubectl_burst}" "-"
printf 'ratio operator / kubectl drain: %.2f\n' "${ratio}"
stripped() { strip -o "${work}/stripped" "$1" && stat -c %s "${work}/stripped"; }
printf '\nOperator start-up: process start to /readyz 200 in %.2f s (polled every 20 ms); RSS when ready %d KiB\n' \
  "${startup}" "${idle_rss_kb}"
printf 'Binary sizes, stripped: node-maintenance-operator %d bytes' "$(stripped "${binary}")"
cli="$(dirname "${binary}")/kubectl-maintenance"
[[ -x "${cli}" ]] && printf ', kubectl-maintenance %d bytes' "$(stripped "${cli}")"
printf '\n'

