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
# Then, side by side with upstream medik8s NMO's own manager (the fixture in NMO_UPSTREAM_NMO_DIR,
# default shared/upstream-nmo beside the checkout; left out without it), run 3 again on the first
# NMO_BENCH_PARALLEL_PEER_NODES (default 10) nodes by each operator: the time until the others are
# Succeeded and the peak RSS.
# Needs the local cluster (brings it up) and holds its lock while it runs.
#   NMO_BENCH_PARALLEL_NODES  nodes (default 50)
#   NMO_BENCH_PARALLEL_PODS   pods per node (default 30)
#   NMO_BENCH_PARALLEL_QPS, NMO_BENCH_PARALLEL_BURST  the operator's client rate limit (default
#                             0 / 30, its defaults: no client-side limit)
#   NMO_BENCH_PARALLEL_IN_FLIGHT_TOTAL  the operator's --evictions-in-flight-total (default: its
#                             default)
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
upstream_pid=""
cleanup() {
  kubectl delete pdb bench-blocking -n "${ns}" --ignore-not-found >/dev/null 2>&1 || true
  if [[ -n "${operator_pid}${upstream_pid}" ]]; then
    kubectl delete nm -l bench=parallel --ignore-not-found --timeout=120s >/dev/null 2>&1 || true
  fi
  stop_operator
  stop_upstream
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

generation=0
fill() { # the pods of every node, all Running, named anew each time (see bench_pods)
  generation=$((generation + 1))
  log "creating $((nodes * pods)) pods"
  bench_pods "${ns}" "${prefix}" 0 "${nodes}" "${pods}" 30 '{"bench":"parallel"}' "-g${generation}" |
    bench_create
  wait_pods_running "${ns}" "$((nodes * pods))" 600
}

# run <budget> <blocked: 0|1> [<count> [operator|upstream]]: with that operator (default ours)
# running, creates the NodeMaintenances of the first <count> nodes (default all) and, as an admin
# rolling through the nodes would, deletes each one as soon as it is Succeeded (the node is back
# in service), which gives its slot to the oldest waiting one: a Succeeded maintenance keeps its
# node cordoned and its slot until it is deleted (docs/design.md §2.2), so with a budget below
# the node count the rest would wait for good. The Succeeded moments come from one
# `kubectl get --watch` stream (no polling).
# Sets all_s (empty when the first one is blocked), others_s, requests (ours only) and peak_kib.
run() {
  local budget="$1" blocked="$2" count="${3:-${nodes}}" side="${4:-operator}" t0 before=0 name phase
  local seen=0 others=0 want="${3:-${nodes}}"
  local -A succeeded=()
  local deletes=()
  ((blocked)) && want=$((count - 1))
  if [[ "${side}" == upstream ]]; then
    start_upstream "${work}/upstream-${count}-${blocked}.log"
  else
    start_operator "${work}/operator-${budget}-${blocked}-${count}.log" \
      --max-parallel-maintenances="${budget}" --kube-api-qps="${qps}" --kube-api-burst="${burst}" \
      ${NMO_BENCH_PARALLEL_IN_FLIGHT_TOTAL:+--evictions-in-flight-total="${NMO_BENCH_PARALLEL_IN_FLIGHT_TOTAL}"}
    before="$(requests_sent)"
  fi
  exec 8< <(timeout 900 kubectl get nm -l bench=parallel --watch \
    -o jsonpath='{.metadata.name} {.status.phase}{"\n"}')
  t0="$(now)"
  { maintenances "${prefix}" 0 1 "{bench: parallel, set: first}"
    maintenances "${prefix}" 1 "${count}" "{bench: parallel, set: others}"; } | kubectl create -f - >/dev/null
  all_s="" others_s=""
  while ((seen < want)) && read -r name phase <&8; do
    [[ "${phase}" == Succeeded && -z "${succeeded[${name}]:-}" ]] || continue
    succeeded[${name}]=1
    seen=$((seen + 1))
    kubectl delete nm "${name}" --wait=false >/dev/null &
    deletes+=($!)
    [[ "${name}" == "${first}" ]] || others=$((others + 1))
    if ((others == count - 1)) && [[ -z "${others_s}" ]]; then others_s="$(elapsed "${t0}" "$(now)")"; fi
    if ((seen == count)); then all_s="$(elapsed "${t0}" "$(now)")"; fi
  done
  exec 8<&-
  ((seen == want)) || die "only ${seen} of ${want} maintenances Succeeded within 900 s"
  if ((blocked)) && [[ "${side}" == operator ]]; then
    kubectl wait "nm/${first}" --for=jsonpath='{.status.pendingPodsRefs[0].reason}'=BlockedByPDB \
      --timeout=60s >/dev/null
  fi
  requests="-"
  [[ "${side}" == upstream ]] || requests="$(($(requests_sent) - before))"
  peak_kib="$(proc_kib "${operator_pid:-${upstream_pid}}" VmHWM)"
  wait "${deletes[@]}"
  kubectl delete pdb bench-blocking -n "${ns}" --ignore-not-found >/dev/null
  kubectl delete nm -l bench=parallel --timeout=300s >/dev/null
  stop_operator
  stop_upstream
  # What the run left behind: the blocked drain's pod, and the pods of the nodes the run did not
  # drain (run 4 and 5 drain 10 of them). One collection DELETE, not kubectl's delete per pod at
  # its 5 qps (1,200 pods took longer than any timeout).
  echo "/api/v1/namespaces/${ns}/pods" | bench_delete_collections
  local deadline=$((SECONDS + 300))
  until [[ "$(kubectl get pods -n "${ns}" --no-headers 2>/dev/null | wc -l)" -eq 0 ]]; do
    ((SECONDS < deadline)) || die "pods of ${ns} still there 300 s after their deletion"
    sleep 0.5
  done
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
kubectl label pod -n "${ns}" "${first}-0-g${generation}" blocked=true >/dev/null
pdb_blocking "${ns}"
kubectl wait pdb/bench-blocking -n "${ns}" --for=jsonpath='{.status.observedGeneration}'=1 \
  --timeout=300s >/dev/null
run "${nodes}" 1
others_3="${others_s}" requests_3="${requests}"

# Side by side with upstream medik8s NMO at its scale (NMO_BENCH_PARALLEL_PEER_NODES nodes, the
# first one blocked): the operator with that many parallel maintenances, then upstream's manager
# (one worker, drain rounds of at most 30 s) on the same nodes and pods.
# The disruption controller may take over a minute to process the budget while it catches up
# with the 1,500 pods just created (60 s was too short at 50 nodes).
block_first() {
  kubectl label pod -n "${ns}" "${first}-0-g${generation}" blocked=true --overwrite >/dev/null
  pdb_blocking "${ns}"
  kubectl wait pdb/bench-blocking -n "${ns}" --for=jsonpath='{.status.observedGeneration}'=1 \
    --timeout=300s >/dev/null
}
peer_nodes="${NMO_BENCH_PARALLEL_PEER_NODES:-10}"
((peer_nodes > nodes)) && peer_nodes="${nodes}"
upstream_prepare "${work}"
if [[ -n "${upstream_bin}" ]]; then
  fill
  log "run 4: ${peer_nodes} nodes, ${first} blocked, the operator"
  block_first
  run "${peer_nodes}" 1 "${peer_nodes}"
  others_4="${others_s}" requests_4="${requests}" peak_4="${peak_kib}"
  fill
  log "run 5: ${peer_nodes} nodes, ${first} blocked, upstream medik8s NMO"
  block_first
  run "${peer_nodes}" 1 "${peer_nodes}" upstream
  others_5="${others_s}" peak_5="${peak_kib}"
fi

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
if [[ -n "${upstream_bin}" ]]; then
  printf '\nSide by side with upstream medik8s NMO: %d nodes x %d pods, %s blocked by a PDB, time until the %d others are Succeeded\n' \
    "${peer_nodes}" "${pods}" "${first}" "$((peer_nodes - 1))"
  printf '%-46s %-18s %-16s %s\n' "side" "the others" "peak RSS MiB" "API requests"
  printf '%-46s %-18s %-16s %s\n' "operator (budget ${peer_nodes}, qps ${qps})" "${others_4} s" \
    "$(awk -v k="${peak_4}" 'BEGIN { printf "%.1f", k / 1024 }')" "${requests_4}"
  printf '%-46s %-18s %-16s %s\n' "upstream medik8s NMO (one worker, APF only)" "${others_5} s" \
    "$(awk -v k="${peak_5}" 'BEGIN { printf "%.1f", k / 1024 }')" "-"
  printf 'ratio operator / upstream NMO: %.2f (time), %.2f (peak RSS)\n' \
    "$(awk -v a="${others_4}" -v b="${others_5}" 'BEGIN { print a / b }')" \
    "$(awk -v a="${peak_4}" -v b="${peak_5}" 'BEGIN { print a / b }')"
fi
