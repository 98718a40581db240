#!/usr/bin/env bash
# Memory against cluster size (issue 8, scenario 3): the operator's RSS on clusters of 100, 1,000
# and 5,000 kwok nodes with 10 bare pods each (the cluster grows between steps; objects are
# created by parallel POSTs over HTTP/2, pods bound with spec.nodeName, no scheduler). At each
# size a fresh operator (release build, as its ServiceAccount, defaults) is started and measured
#   - idle: VmRSS from /proc/<pid>/status NMO_BENCH_SCALE_SETTLE seconds (default 5) after
#     /readyz first answers 200;
#   - during one maintenance of a node of that size's new batch: the largest VmRSS sampled every
#     0.1 s from `kubectl create` of the NodeMaintenance to `kubectl wait` seeing Succeeded, and
#     VmHWM (the process's peak) at the end;
# with the control plane's memory (VmRSS and VmHWM summed over etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler and kwok). Prints the slope in KiB per 1,000 nodes.
# The maintained node's pods are created first and run before the others are created; all pods
# have terminationGracePeriodSeconds 0, so an eviction deletes them at once and the
# measurement does not wait behind kwok's backlog of tens of thousands of pods to start.
# Deletes everything it created at the end: the nodes in parallel batches (waited for) and the
# namespace, whose 50,000 pods the namespace controller deletes in the background (about 50 a
# second on the project's machine, some 17 minutes; waiting for it would break make bench's
# 30 minutes). Needs the local cluster (brings it up) and holds its lock.
#   NMO_BENCH_SCALE_SIZES   cluster sizes in nodes, ascending (default "100 1000 5000")
#   NMO_BENCH_SCALE_PODS    pods per node (default 10)
#   NMO_BENCH_SCALE_SETTLE  seconds between /readyz and the idle sample (default 5)
#   NMO_OPERATOR_BIN        the operator binary (default build-release/bin/node-maintenance-operator)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"
log() { printf '[bench-scale %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
# shellcheck source=hack/bench-lib.sh
source "${root}/hack/bench-lib.sh"

read -r -a sizes <<<"${NMO_BENCH_SCALE_SIZES:-100 1000 5000}"
per="${NMO_BENCH_SCALE_PODS:-10}"
settle="${NMO_BENCH_SCALE_SETTLE:-5}"
bench_setup

ns="bench-scale-$(date +%s)"
prefix="bench-scale-"
work="$(mktemp -d)"
operator_pid=""
sampler_pid=""
delete_everything() {
  local b batches=$(((${sizes[-1]} + 499) / 500))
  for ((b = 0; b < batches; b++)); do
    echo "/api/v1/nodes?labelSelector=bench%3Dscale%2Cbench-batch%3D${b}"
  done | bench_delete_collections
  # A batch cut short by the API server's 60 s request timeout leaves nodes behind: again.
  local deadline=$((SECONDS + 300))
  while [[ -n "$(kubectl get nodes -l bench=scale -o name 2>/dev/null | head -1)" ]] && ((SECONDS < deadline)); do
    echo "/api/v1/nodes?labelSelector=bench%3Dscale" | bench_delete_collections
  done
  kubectl delete namespace "${ns}" --ignore-not-found --wait=false >/dev/null 2>&1 || true
}
cleanup() {
  [[ -n "${sampler_pid}" ]] && kill "${sampler_pid}" 2>/dev/null
  if [[ -n "${operator_pid}" ]]; then
    kubectl delete nm -l bench=scale --ignore-not-found --timeout=120s >/dev/null 2>&1 || true
  fi
  stop_operator
  kubectl delete nm -l bench=scale --ignore-not-found --wait=false >/dev/null 2>&1 || true
  [[ -n "${done_cleanup:-}" ]] || delete_everything
  rm -rf "${work}"
}
trap cleanup EXIT

make_namespace "${ns}"
labels='{"bench":"scale"}'
have=0
rows=()
idle=()
during=()
for size in "${sizes[@]}"; do
  ((size > have)) || die "NMO_BENCH_SCALE_SIZES must ascend"
  size_from="${have}"
  target="$(printf '%s%05d' "${prefix}" "${have}")"
  log "growing the cluster to ${size} bench nodes (${have} → ${size}, ${per} pods each)"
  t0="$(now)"
  # The maintained node and its pods first, so that they run before kwok has thousands of
  # others to start.
  bench_nodes "${prefix}" "${have}" "$((have + 1))" scale | bench_create
  kubectl wait "node/${target}" --for=condition=Ready --timeout=300s >/dev/null
  bench_pods "${ns}" "${prefix}" "${have}" "$((have + 1))" "${per}" 0 "${labels}" | bench_create
  wait_pods_running "${ns}" "${per}" 300 "${target}"
  bench_nodes "${prefix}" "$((have + 1))" "${size}" scale | bench_create
  bench_pods "${ns}" "${prefix}" "$((have + 1))" "${size}" "${per}" 0 "${labels}" | bench_create
  have="${size}"
  log "created in $(elapsed "${t0}" "$(now)") s; starting the operator"

  start_operator "${work}/operator-${size}.log"
  sleep "${settle}" # the idle window, not a synchronisation
  idle_kib="$(proc_kib "${operator_pid}" VmRSS)"
  idle+=("${idle_kib}")

  (
    max=0
    while kib="$(proc_kib "${operator_pid}" VmRSS 2>/dev/null)"; do
      ((kib > max)) && max="${kib}" && echo "${max}" >"${work}/max"
      sleep 0.1
    done
  ) &
  sampler_pid=$!
  t0="$(now)"
  maintenances "${prefix}" "${size_from}" "$((size_from + 1))" "{bench: scale}" | kubectl create -f - >/dev/null
  kubectl wait "nm/${target}" --for=jsonpath='{.status.phase}'=Succeeded --timeout=300s >/dev/null
  drain_s="$(elapsed "${t0}" "$(now)")"
  kill "${sampler_pid}" 2>/dev/null
  wait "${sampler_pid}" 2>/dev/null || true
  sampler_pid=""
  during_kib="$(cat "${work}/max")"
  during+=("${during_kib}")
  hwm_kib="$(proc_kib "${operator_pid}" VmHWM)"
  cp_rss="$(control_plane_kib VmRSS)"
  cp_hwm="$(control_plane_kib VmHWM)"
  kubectl delete "nm/${target}" --timeout=120s >/dev/null
  stop_operator
  rows+=("$(printf '%-8s %-8s %-12s %-14s %-12s %-10s %-22s' "${size}" "$((size * per))" \
    "${idle_kib}" "${during_kib}" "${hwm_kib}" "${drain_s}" \
    "$((cp_rss / 1024)) / $((cp_hwm / 1024)) MiB")")
done

log "deleting the bench nodes and pods"
t0="$(now)"
delete_everything
done_cleanup=1
cleanup_s="$(elapsed "${t0}" "$(now)")"
log "namespace ${ns} is left to the namespace controller (its pods go in the background)"

printf '\nMemory against cluster size: bench kwok nodes with %d bare pods each (plus the cluster'"'"'s own nodes), operator at its defaults\n' "${per}"
printf '%-8s %-8s %-12s %-14s %-12s %-10s %-22s\n' "nodes" "pods" "idle KiB" "during KiB" "VmHWM KiB" "drain s" \
  "control plane RSS / peak"
printf '%s\n' "${rows[@]}"
n=${#sizes[@]}
slope() { # slope <first KiB> <last KiB>: KiB per 1,000 nodes
  awk -v a="$1" -v b="$2" -v x="${sizes[0]}" -v y="${sizes[n - 1]}" 'BEGIN { printf "%.0f", (b - a) * 1000 / (y - x) }'
}
printf 'slope from %d to %d nodes: idle %s KiB, during a maintenance %s KiB per 1,000 nodes; deleting the nodes took %s s\n' \
  "${sizes[0]}" "${sizes[n - 1]}" "$(slope "${idle[0]}" "${idle[n - 1]}")" \
  "$(slope "${during[0]}" "${during[n - 1]}")" "${cleanup_s}"
