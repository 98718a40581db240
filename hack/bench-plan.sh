#!/usr/bin/env bash
# The story's fleet task (docs/benchmarks.md, scenario 6): 22 fresh kwok workers running a web
# Deployment of 2 pods per node (scheduled by the real scheduler, spread over the workers) under a
# PodDisruptionBudget that allows one pod down, taken out one node at a time, each node "done"
# one second after its drain (the hardware work, here none), each given back and healthy before
# the next:
#   1. the operator with one MaintenancePlan, made with `kubectl maintenance rollout`
#      (--done-when Soaked --soak-time 1s), from the create to Succeeded; its default look every
#      5 s at a plan with nodes in progress;
#   2. the peer, what an admin scripts today: for each node, `kubectl drain`, one second, `kubectl
#      uncordon`, then `kubectl wait` until the PDB is whole again.
# Before each side the Deployment is restarted, so that both start from its pods spread by the
# scheduler (a plan that steered the pods away from the nodes it took later leaves them piled on
# the nodes it took first). Reports the time for the 22 nodes on each side and the speed-up
# (loop / plan), the operator's peak RSS and API requests per node, its evictions against the
# pods (more is a pod evicted twice), the evictions it sent again because a budget allowed (and
# how soon after), and checks that no node keeps the plans' steering taint.
# Needs the local cluster (brings it up) and holds its lock while it runs.
#   NMO_BENCH_PLAN_NODES     workers (default 22)
#   NMO_OPERATOR_BIN         the operator binary (default build-release/bin/node-maintenance-operator)
#   NMO_CLI_BIN              the plugin (default build-release/bin/kubectl-maintenance)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"
log() { printf '[bench-plan %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
# shellcheck source=hack/bench-lib.sh
source "${root}/hack/bench-lib.sh"

nodes="${NMO_BENCH_PLAN_NODES:-22}"
cli="${NMO_CLI_BIN:-${root}/build-release/bin/kubectl-maintenance}"
((nodes >= 2)) || die "NMO_BENCH_PLAN_NODES must be at least 2"
[[ -x "${cli}" ]] || die "${cli} not found: build the release preset first (make bench does)"
bench_setup

ns="bench-plan-$(date +%s)"
prefix="bench-plan-"
plan="bench-plan"
replicas=$((nodes * 2))
work="$(mktemp -d)"
operator_pid=""
cleanup() {
  if [[ -n "${operator_pid}" ]]; then
    kubectl delete mp "${plan}" --ignore-not-found --timeout=120s >/dev/null 2>&1 || true
  fi
  stop_operator
  kubectl delete nm -l "nodemaintenance.medik8s.io/plan=${plan}" --ignore-not-found --wait=false \
    >/dev/null 2>&1 || true
  kubectl delete namespace "${ns}" --ignore-not-found --wait=false >/dev/null 2>&1 || true
  kubectl delete nodes -l bench=plan --ignore-not-found --wait=false >/dev/null 2>&1 || true
  rm -rf "${work}"
}
trap cleanup EXIT

log "creating ${nodes} kwok workers and a web Deployment of ${replicas} pods under a PDB"
make_namespace "${ns}"
bench_nodes "${prefix}" 0 "${nodes}" plan | bench_create
kubectl wait node -l bench=plan --for=condition=Ready --timeout=180s >/dev/null
kubectl apply -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ${ns}}
spec:
  replicas: ${replicas}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      nodeSelector: {bench: plan}
      tolerations: [{key: kwok.x-k8s.io/node, operator: Exists, effect: NoSchedule}]
      topologySpreadConstraints:
        - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway,
           labelSelector: {matchLabels: {app: web}}}
      terminationGracePeriodSeconds: 30
      automountServiceAccountToken: false
      containers: [{name: web, image: web}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web-pdb, namespace: ${ns}}
spec:
  maxUnavailable: 1
  selector: {matchLabels: {app: web}}
EOF
wait_pods_running "${ns}" "${replicas}" 300
pdb_whole() {
  kubectl wait "pdb/web-pdb" -n "${ns}" --for=jsonpath='{.status.currentHealthy}'="${replicas}" \
    --timeout=300s >/dev/null
}
pdb_whole
mapfile -t workers < <(kubectl get nodes -l bench=plan -o name | sed 's|^node/||' | sort)
# Restarts the Deployment and waits for all its pods and the PDB; prints the fewest and most web
# pods on one worker.
respread() {
  kubectl rollout restart deploy/web -n "${ns}" >/dev/null
  kubectl rollout status deploy/web -n "${ns}" --timeout=300s >/dev/null
  wait_pods_running "${ns}" "${replicas}" 300
  pdb_whole
  kubectl get pods -n "${ns}" -l app=web -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' |
    sort | uniq -c | awk '{print $1}' | sort -n | awk 'NR == 1 {min = $1} {max = $1} END {printf "%d..%d", min, max}'
}

# --- 1. the operator, one MaintenancePlan -----------------------------------------------
log "run 1: the operator, one MaintenancePlan over the ${nodes} workers (web pods per worker: $(respread))"
start_operator "${work}/operator.log"
before="$(requests_sent)"
t0="$(now)"
"${cli}" rollout "${plan}" --selector bench=plan --reason "bench: memory upgrade" \
  --done-when Soaked --soak-time 1s >/dev/null
kubectl wait "mp/${plan}" --for=jsonpath='{.status.phase}'=Succeeded --timeout=1800s >/dev/null
plan_s="$(elapsed "${t0}" "$(now)")"
plan_requests="$(($(requests_sent) - before))"
plan_peak_kib="$(proc_kib "${operator_pid}" VmHWM)"
# The plan's own measure of each node, start to healthy again (a Done node keeps only this).
mapfile -t node_seconds < <(kubectl get mp "${plan}" -o json | jq -r '.status.nodes[] | .tookSeconds')
node_median="$(median "${node_seconds[@]}")"
kubectl delete mp "${plan}" --timeout=120s >/dev/null
stop_operator
steered="$(kubectl get nodes -l bench=plan -o jsonpath='{range .items[*]}{.spec.taints[*].key}{"\n"}{end}' |
  grep -c 'nodemaintenance.medik8s.io/planned' || true)"
((steered == 0)) || die "${steered} nodes keep the steering taint after the plan"
evictions="$(grep -c 'pod evicted' "${work}/operator.log" || true)"
budget_retries="$(grep -c 'evicting a pod its budget allows again' "${work}/operator.log" || true)"
mapfile -t retry_ms < <(grep 'evicting a pod its budget allows again' "${work}/operator.log" |
  sed -n 's/.*since_allowed_ms=\([0-9]*\).*/\1/p')
retry_p50="-" retry_max="-"
if ((${#retry_ms[@]} > 0)); then
  retry_p50="$(median "${retry_ms[@]}")"
  retry_max="$(printf '%s\n' "${retry_ms[@]}" | sort -n | tail -1)"
fi
pdb_whole

# --- 2. the peer: kubectl drain, node after node ----------------------------------------
log "run 2: kubectl drain, one second, uncordon, wait for the PDB, node after node (web pods per worker: $(respread))"
t0="$(now)"
for node in "${workers[@]}"; do
  kubectl drain "${node}" --ignore-daemonsets --delete-emptydir-data --timeout=600s >/dev/null 2>&1 ||
    die "kubectl drain ${node} failed"
  sleep 1 # the work on the node: the plan's soak time, the same second on both sides
  kubectl uncordon "${node}" >/dev/null
  pdb_whole
done
drain_s="$(elapsed "${t0}" "$(now)")"

printf '\nThe story'"'"'s fleet task: %d kwok workers, a Deployment of %d pods under a PDB allowing 1 down, one node at a time, 1 s of work per node\n' \
  "${nodes}" "${replicas}"
printf '%-58s %-12s %-12s %-14s %s\n' "side" "all nodes" "per node" "peak RSS MiB" "API requests per node"
printf '%-58s %-12s %-12s %-14s %s\n' "operator: one MaintenancePlan (kubectl maintenance rollout)" \
  "${plan_s} s" "$(awk -v t="${plan_s}" -v n="${nodes}" 'BEGIN { printf "%.2f s", t / n }')" \
  "$(awk -v k="${plan_peak_kib}" 'BEGIN { printf "%.1f", k / 1024 }')" \
  "$(awk -v r="${plan_requests}" -v n="${nodes}" 'BEGIN { printf "%.0f", r / n }')"
printf '%-58s %-12s %-12s %-14s %s\n' "kubectl drain + uncordon + kubectl wait on the PDB, scripted" \
  "${drain_s} s" "$(awk -v t="${drain_s}" -v n="${nodes}" 'BEGIN { printf "%.2f s", t / n }')" "-" "-"
printf 'speed-up (kubectl drain loop / plan): %.2f (target >= 2); the plan'"'"'s median node (start to healthy): %s s\n' \
  "$(awk -v a="${plan_s}" -v b="${drain_s}" 'BEGIN { print b / a }')" "${node_median}"
printf 'the plan'"'"'s evictions: %d for %d pods; sent again when the budget allowed: %d (p50 %s ms, max %s ms after the budget changed)\n' \
  "${evictions}" "${replicas}" "${budget_retries}" "${retry_p50}" "${retry_max}"
