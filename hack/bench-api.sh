#!/usr/bin/env bash
# API cost per maintenance (docs/benchmarks.md, scenario 4): the requests the operator sends for
#   - a PDB-free drain of a fresh kwok node with 30 bare pods (NodeMaintenance created →
#     Succeeded), and the whole lifecycle including its deletion (uncordon, finalizer);
#   - a drain blocked by a PodDisruptionBudget that allows no disruption of one of the node's 30
#     pods: the requests until it is blocked, during NMO_BENCH_API_BLOCK seconds blocked (default
#     300; must not grow like polling) and, once the PDB allows the eviction, to Succeeded.
# Counted twice: by the operator (its rest_client_requests_total, every HTTP attempt, by method
# and code) and by kube-apiserver: a FlowSchema of this script's (nmo-bench-operator, removed at
# the end) matches only the operator's ServiceAccount, so apiserver_flowcontrol_dispatched_requests_total
# of that schema counts exactly the operator's requests as the API server saw them; its
# apiserver_request_total gives the evictions (only the operator evicts here) by code.
# Needs the local cluster (brings it up) and holds its lock while it runs.
#   NMO_BENCH_API_BLOCK   seconds the blocked drain is held (default 300)
#   NMO_BENCH_API_PODS    pods per node (default 30)
#   NMO_OPERATOR_BIN      the operator binary (default build-release/bin/node-maintenance-operator)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"
log() { printf '[bench-api %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
# shellcheck source=hack/bench-lib.sh
source "${root}/hack/bench-lib.sh"

block_s="${NMO_BENCH_API_BLOCK:-300}"
pods="${NMO_BENCH_API_PODS:-30}"
bench_setup

ns="bench-api-$(date +%s)"
prefix="bench-api-"
free_node="${prefix}00000"
blocked_node="${prefix}00001"
schema=nmo-bench-operator
work="$(mktemp -d)"
operator_pid=""
cleanup() {
  kubectl delete pdb bench-blocking -n "${ns}" --ignore-not-found >/dev/null 2>&1 || true
  if [[ -n "${operator_pid}" ]]; then
    kubectl delete nm -l bench=api --ignore-not-found --timeout=120s >/dev/null 2>&1 || true
  fi
  stop_operator
  kubectl delete nm -l bench=api --ignore-not-found --wait=false >/dev/null 2>&1 || true
  kubectl delete flowschema "${schema}" --ignore-not-found >/dev/null 2>&1 || true
  kubectl delete namespace "${ns}" --ignore-not-found --wait=false >/dev/null 2>&1 || true
  kubectl delete nodes -l bench=api --ignore-not-found --wait=false >/dev/null 2>&1 || true
  rm -rf "${work}"
}
trap cleanup EXIT

# Ahead of the built-in service-accounts schema (precedence 9000), same priority level.
kubectl apply -f - >/dev/null <<EOF
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: ${schema}}
spec:
  matchingPrecedence: 500
  priorityLevelConfiguration: {name: workload-low}
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects:
    - kind: ServiceAccount
      serviceAccount: {name: node-maintenance-operator-controller-manager, namespace: node-maintenance-operator-system}
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], clusterScope: true, namespaces: ["*"]}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
EOF

make_namespace "${ns}"
bench_nodes "${prefix}" 0 2 api | bench_create
kubectl wait node -l bench=api --for=condition=Ready --timeout=120s >/dev/null
bench_pods "${ns}" "${prefix}" 0 2 "${pods}" 30 '{"bench":"api"}' | bench_create
wait_pods_running "${ns}" "$((2 * pods))"
kubectl label pod -n "${ns}" "${blocked_node}-0" blocked=true >/dev/null
pdb_blocking "${ns}"
kubectl wait pdb/bench-blocking -n "${ns}" --for=jsonpath='{.status.observedGeneration}'=1 \
  --timeout=60s >/dev/null

log "starting the operator (defaults, as its ServiceAccount)"
start_operator "${work}/operator.log"

# snapshot <name>: the operator's counters and the API server's, in ${work}/<name>.*; waits until
# the operator's count has stood still for 2 s (Events and status writes that trail a phase
# change), at most 30 s.
snapshot() {
  local last=-1 count deadline=$((SECONDS + 30))
  while count="$(requests_sent)" && [[ "${count}" != "${last}" ]] && ((SECONDS < deadline)); do
    last="${count}"
    sleep 2
  done
  curl -s "http://127.0.0.1:${METRICS_PORT}/metrics" | grep '^rest_client_requests_total{' >"${work}/$1.operator"
  admin_curl "${bench_server}/metrics" >"${work}/$1.apiserver"
}
# operator_delta <from> <to>: the operator's requests between two snapshots.
operator_delta() {
  awk 'FNR == NR {a[$1] = $2; next} {d += $2 - a[$1]} END {printf "%d", d}' \
    "${work}/$1.operator" "${work}/$2.operator"
}
# operator_methods <from> <to>: the same by method and code, e.g. "GET 200: 3, POST 201: 30".
operator_methods() {
  awk 'FNR == NR {a[$1] = $2; next}
       { d = $2 - a[$1]; if (d <= 0) next
         match($1, /method="[A-Z]+"/); m = substr($1, RSTART + 8, RLENGTH - 9)
         match($1, /code="[^"]*"/); c = substr($1, RSTART + 6, RLENGTH - 7)
         by[m " " c] += d }
       END { n = 0; for (k in by) out[n++] = k ": " by[k]
             for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (out[j] < out[i]) { t = out[i]; out[i] = out[j]; out[j] = t }
             for (i = 0; i < n; i++) printf "%s%s", (i ? ", " : ""), out[i] }' \
    "${work}/$1.operator" "${work}/$2.operator"
}
# apiserver_delta <from> <to> <metric regex>: the sum of the API server's matching counters.
apiserver_delta() {
  awk -v re="$3" '$0 ~ re {if (FNR == NR) a[$1] = $2; else d += $2 - a[$1]} END {printf "%d", d}' \
    "${work}/$1.apiserver" "${work}/$2.apiserver"
}
dispatched="^apiserver_flowcontrol_dispatched_requests_total\\{flow_schema=\"${schema}\""
watches="^apiserver_flowcontrol_request_execution_seconds_count\\{flow_schema=\"${schema}\".*type=\"watch\""
evictions='^apiserver_request_total\{.*resource="pods".*subresource="eviction"'
evictions_201='^apiserver_request_total\{code="201".*resource="pods".*subresource="eviction"'
evictions_429='^apiserver_request_total\{code="429".*resource="pods".*subresource="eviction"'

nm() { # nm <node>: creates the NodeMaintenance for it
  kubectl create -f - >/dev/null <<EOF
apiVersion: nodemaintenance.medik8s.io/v1beta1
kind: NodeMaintenance
metadata: {name: $1, labels: {bench: api}}
spec: {nodeName: $1, reason: bench}
EOF
}

log "PDB-free drain of ${free_node} (${pods} pods)"
snapshot free-0
nm "${free_node}"
kubectl wait "nm/${free_node}" --for=jsonpath='{.status.phase}'=Succeeded --timeout=300s >/dev/null
snapshot free-1
kubectl delete "nm/${free_node}" --timeout=120s >/dev/null
snapshot free-2

log "drain of ${blocked_node} blocked by a PDB for ${block_s} s"
nm "${blocked_node}"
kubectl wait "nm/${blocked_node}" --for=jsonpath='{.status.evictionPods}'="$((pods - 1))" --timeout=300s >/dev/null
kubectl wait "nm/${blocked_node}" --for=jsonpath='{.status.pendingPodsRefs[0].reason}'=BlockedByPDB \
  --timeout=120s >/dev/null
snapshot blocked-1
sleep "${block_s}" # the measurement window, not a synchronisation
snapshot blocked-2
kubectl patch pdb bench-blocking -n "${ns}" --type merge -p '{"spec":{"minAvailable":0}}' >/dev/null
kubectl wait "nm/${blocked_node}" --for=jsonpath='{.status.phase}'=Succeeded --timeout=300s >/dev/null
snapshot blocked-3
kubectl delete "nm/${blocked_node}" --timeout=120s >/dev/null
snapshot blocked-4

row() { # row <label> <from> <to>
  printf '%-44s %-10s %-22s %-18s %s\n' "$1" "$(operator_delta "$2" "$3")" \
    "$(apiserver_delta "$2" "$3" "${dispatched}") ($(apiserver_delta "$2" "$3" "${watches}"))" \
    "$(apiserver_delta "$2" "$3" "${evictions_201}") / $(apiserver_delta "$2" "$3" "${evictions_429}")" \
    "$(operator_methods "$2" "$3")"
}
printf '\nAPI cost per maintenance: %d bare pods per node, operator at its defaults (no client-side rate limit)\n' "${pods}"
printf '%-44s %-10s %-22s %-18s %s\n' "window" "operator" "API server (watches)" "evictions 201/429" \
  "operator's requests by method and code"
row "PDB-free: create to Succeeded" free-0 free-1
row "PDB-free: whole lifecycle, until deleted" free-0 free-2
row "blocked: create to BlockedByPDB" free-2 blocked-1
row "blocked: ${block_s} s held by the PDB" blocked-1 blocked-2
row "blocked: PDB relaxed to Succeeded" blocked-2 blocked-3
row "blocked: whole lifecycle, until deleted" free-2 blocked-4
printf 'operator = its rest_client_requests_total; API server = apiserver_flowcontrol_dispatched_requests_total of FlowSchema %s (the operator'"'"'s ServiceAccount only), of which watches (type="watch" of apiserver_flowcontrol_request_execution_seconds_count); evictions from apiserver_request_total (%d in all)\n' \
  "${schema}" "$(apiserver_delta free-0 blocked-4 "${evictions}")"
