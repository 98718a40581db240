#!/usr/bin/env bash
# Parallel maintenances (docs/benchmarks.md, scenario 2): 50 fresh kwok nodes with 30 bare pods each (bound
# with spec.nodeName, the default 30 s grace period, which kwok's delete stage completes at once).
# Three runs, each from `kubectl create` of 50 NodeMaintenances (one per node) to `kubectl wait`
# seeing Succeeded, the pods recreated between runs:
#   1. --max-parallel-maintenances=50;
#   2. --max-parallel-maintenances=10;
#   3. budget 50 again, but one pod of the first node is protected by a PodDisruptionBudget that
#      allows no disruption, so that maintenance stays Running (BlockedByPDB) for good.
# Each run reports the time until all 50 are Succeeded and until the 49 others (every node but
# the first) are; run 3's 49 against run 1's 49 shows whether the blocked one slows the others.
# Needs the local cluster (brings it up) and holds its lock while it runs.
#   NMO_BENCH_PARALLEL_NODES  nodes (default 50)
#   NMO_BENCH_PARALLEL_PODS   pods per node (default 30)
#   NMO_BENCH_PARALLEL_QPS, NMO_BENCH_PARALLEL_BURST  the operator's client rate limit (default
#                             0 / 30, its defaults: no client-side limit)
#   NMO_OPERATOR_BIN          the operator binary (default build-release/bin/node-maintenance-operator)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"
log() { printf '[bench-parallel %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
# shellcheck source=hack/bench-lib.sh
source "${root}/hack/bench-lib.sh"

nodes="${NMO_BENCH_PARALLEL_NODES:-50}"
pods="${NMO_BENCH_PARALLEL_PODS:-30}"
qps="${NMO_BENCH_PARALLEL_QPS:-0}"
burst="${NMO_BENCH_PARALLEL_BURST:-30}"
((nodes >= 2)) || die "NMO_BENCH_PARALLEL_NODES must be at least 2"
bench_setup

ns="bench-parallel-$(date +%s)"
prefix="bench-par-"
first="${prefix}00000"
work="$(mktemp -d)"
operator_pid=""
cleanup() {
  kubectl delete pdb bench-blocking -n "${ns}" --ignore-not-found >/dev/null 2>&1 || true
  if [[ -n "${operator_pid}" ]]; then
    kubectl delete nm -l bench=parallel --ignore-not-found --timeout=120s >/dev/null 2>&1 || true
  fi
  stop_operator
  kubectl delete nm -l bench=parallel --ignore-not-found --wait=false >/dev/null 2>&1 || true
  kubectl delete namespace "${ns}" --ignore-not-found --wait=false >/dev/null 2>&1 || true
  kubectl delete nodes -l bench=parallel --ignore-not-found --wait=false >/dev/null 2>&1 || true
  rm -rf "${work}"
}
trap cleanup EXIT

log "creating ${nodes} kwok nodes"
make_namespace "${ns}"
bench_nodes "${prefix}" 0 "${nodes}" parallel | bench_create
kubectl wait node -l bench=parallel --for=condition=Ready --timeout=180s >/dev/null

fill() { # the pods of every node, all Running
  log "creating $((nodes * pods)) pods"
  bench_pods "${ns}" "${prefix}" 0 "${nodes}" "${pods}" 30 '{"bench":"parallel"}' | bench_create
  wait_pods_running "${ns}" "$((nodes * pods))" 600
}

# run <budget> <blocked: 0|1>: creates the NodeMaintenances and, as an admin rolling through the
# nodes would, deletes each one as soon as it is Succeeded (the node is back in service), which
# gives its slot to the oldest waiting one: a Succeeded maintenance keeps its node cordoned and
# its slot until it is deleted (docs/design.md §2.2), so with a budget below the node count the rest would
# wait for good. The Succeeded moments come from one `kubectl get --watch` stream (no polling).
# Sets all_s (empty when the first one is blocked), others_s and requests.
run() {
  local budget="$1" blocked="$2" t0 before name phase seen=0 others=0 want="${nodes}"
  local -A succeeded=()
  local deletes=()
  ((blocked)) && want=$((nodes - 1))
  start_operator "${work}/operator-${budget}-${blocked}.log" --max-parallel-maintenances="${budget}" \
    --kube-api-qps="${qps}" --kube-api-burst="${burst}"
  before="$(requests_sent)"
  exec 8< <(timeout 900 kubectl get nm -l bench=parallel --watch \
    -o jsonpath='{.metadata.name} {.status.phase}{"\n"}')
  t0="$(now)"
  { maintenances "${prefix}" 0 1 "{bench: parallel, set: first}"
    maintenances "${prefix}" 1 "${nodes}" "{bench: parallel, set: others}"; } | kubectl create -f - >/dev/null
  all_s="" others_s=""
  while ((seen < want)) && read -r name phase <&8; do
    [[ "${phase}" == Succeeded && -z "${succeeded[${name}]:-}" ]] || continue
    succeeded[${name}]=1
    seen=$((seen + 1))
    kubectl delete nm "${name}" --wait=false >/dev/null &
    deletes+=($!)
    [[ "${name}" == "${first}" ]] || others=$((others + 1))
    if ((others == nodes - 1)) && [[ -z "${others_s}" ]]; then others_s="$(elapsed "${t0}" "$(now)")"; fi
    if ((seen == nodes)); then all_s="$(elapsed "${t0}" "$(now)")"; fi
  done
  exec 8<&-
  ((seen == want)) || die "only ${seen} of ${want} maintenances Succeeded within 900 s"
  if ((blocked)); then
    kubectl wait "nm/${first}" --for=jsonpath='{.status.pendingPodsRefs[0].reason}'=BlockedByPDB \
      --timeout=60s >/dev/null
  fi
  requests="$(($(requests_sent) - before))"
  wait "${deletes[@]}"
  kubectl delete pdb bench-blocking -n "${ns}" --ignore-not-found >/dev/null
  kubectl delete nm -l bench=parallel --timeout=300s >/dev/null
  stop_operator
  # What the blocked drain left behind.
  kubectl delete pods -n "${ns}" --all --timeout=120s >/dev/null
}

fill
log "run 1: budget ${nodes}"
run "${nodes}" 0
all_1="${all_s}" others_1="${others_s}" requests_1="${requests}"

fill
log "run 2: budget 10"
run 10 0
all_2="${all_s}" others_2="${others_s}" requests_2="${requests}"

fill
log "run 3: budget ${nodes}, ${first} blocked by a PodDisruptionBudget"
kubectl label pod -n "${ns}" "${first}-0" blocked=true >/dev/null
pdb_blocking "${ns}"
kubectl wait pdb/bench-blocking -n "${ns}" --for=jsonpath='{.status.observedGeneration}'=1 \
  --timeout=60s >/dev/null
run "${nodes}" 1
others_3="${others_s}" requests_3="${requests}"

floor="$(awk -v n="$((nodes * pods))" -v q="${qps}" 'BEGIN { if (q > 0) printf "%.1f s", n / q; else print "none" }')"
printf '\nParallel maintenances: %d kwok nodes x %d bare pods (%d evictions per run), operator qps %s / burst %s\n' \
  "${nodes}" "${pods}" "$((nodes * pods))" "${qps}" "${burst}"
printf '%-46s %-14s %-18s %s\n' "run" "all Succeeded" "the $((nodes - 1)) others" "API requests (incl. deletions)"
printf '%-46s %-14s %-18s %s\n' "budget ${nodes}" "${all_1} s" "${others_1} s" "${requests_1}"
printf '%-46s %-14s %-18s %s\n' "budget 10" "${all_2} s" "${others_2} s" "${requests_2}"
printf '%-46s %-14s %-18s %s\n' "budget ${nodes}, ${first} blocked by a PDB" "never (blocked)" \
  "${others_3} s" "${requests_3}"
printf 'the others with / without the blocked one: %.2f; client rate floor: %d evictions / %s qps = %s\n' \
  "$(awk -v a="${others_3}" -v b="${others_1}" 'BEGIN { print a / b }')" "$((nodes * pods))" "${qps}" "${floor}"
