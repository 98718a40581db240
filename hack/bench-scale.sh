#!/usr/bin/env bash
# Memory against cluster size (docs/benchmarks.md, scenario 3): the operator's RSS on clusters of 100, 1,000
# and 5,000 kwok nodes with 10 bare pods each (the cluster grows between steps; objects are
# created by parallel POSTs over HTTP/2, pods bound with spec.nodeName, no scheduler). At each
# size a fresh operator (release build, as its ServiceAccount, defaults) is started and measured
#   - idle: VmRSS from /proc/<pid>/status NMO_BENCH_SCALE_SETTLE seconds (default 5) after
#     /readyz first answers 200;
#   - during one maintenance of a node of that size's new batch: the largest VmRSS sampled every
#     0.1 s from `kubectl create` of the NodeMaintenance to `kubectl wait` seeing Succeeded, and
#     VmHWM (the process's peak) at the end;
# with the control plane's memory (VmRSS and VmHWM summed over etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler and kwok), and the operator's API requests
# (rest_client_requests_total) from its start to the idle sample and over the maintenance.
# Upstream medik8s NMO's manager (the fixture in NMO_UPSTREAM_NMO_DIR; left out without it) is
# measured the same way at each size, as cluster admin, on a second node of the batch, after the
# operator has stopped. Prints the slope in KiB per 1,000 nodes and the ratios to upstream.
# The maintained node's pods are created first and run before the others are created; all pods
# have terminationGracePeriodSeconds 0, so an eviction deletes them at once and the
# measurement does not wait behind kwok's backlog of tens of thousands of pods to start.
# Runs on a cluster of its own (state in <cluster dir>-scale, ports picked free), brought up at
# the start and stopped at the end: the 5,000 nodes and 50,000 pods go with it in seconds, where
# deleting them through the API took some 6 minutes and the namespace controller 17 more, and the
# figures do not depend on what earlier scenarios left in etcd. The shared cluster is left alone.
#   NMO_BENCH_SCALE_SIZES   cluster sizes in nodes, ascending (default "100 1000 5000")
#   NMO_BENCH_SCALE_PODS    pods per node (default 10)
#   NMO_BENCH_SCALE_SETTLE  seconds between /readyz and the idle sample (default 5)
#   NMO_BENCH_SCALE_CLUSTER_DIR  the scale cluster's state directory (default <cluster dir>-scale)
#   NMO_OPERATOR_BIN        the operator binary (default build-release/bin/node-maintenance-operator)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"
log() { printf '[bench-scale %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
# shellcheck source=hack/bench-lib.sh
source "${root}/hack/bench-lib.sh"

bench_own_cluster_select "${NMO_BENCH_SCALE_CLUSTER_DIR:-$(cluster_dir)-scale}"
work="$(mktemp -d)"
operator_pid=""
sampler_pid=""
upstream_pid=""
cleanup() {
  [[ -n "${sampler_pid}" ]] && kill "${sampler_pid}" 2>/dev/null
  stop_operator
  stop_upstream
  hack/cluster-down.sh >/dev/null 2>&1 || true
  rm -rf "${work}"
}
trap cleanup EXIT

t0="$(now)"
bench_own_cluster_up
up_s="$(elapsed "${t0}" "$(now)")"

read -r -a sizes <<<"${NMO_BENCH_SCALE_SIZES:-100 1000 5000}"
per="${NMO_BENCH_SCALE_PODS:-10}"
settle="${NMO_BENCH_SCALE_SETTLE:-5}"
bench_setup
upstream_prepare "${work}"

ns="bench-scale-$(date +%s)"
prefix="bench-scale-"
make_namespace "${ns}"
labels='{"bench":"scale"}'
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

# measure_maintenance <pid> <node index>: a NodeMaintenance of bench node <index>, from create to
# Succeeded, while the process's VmRSS is sampled every 0.1 s; sets during_kib (the largest) and
# drain_s.
measure_maintenance() {
  local pid="$1" index="$2" node t0
  echo 0 >"${work}/max"
  (
    max=0
    while kib="$(proc_kib "${pid}" VmRSS 2>/dev/null)"; do
      ((kib > max)) && max="${kib}" && echo "${max}" >"${work}/max"
      sleep 0.1
    done
  ) &
  sampler_pid=$!
  t0="$(now)"
  node="$(printf '%s%05d' "${prefix}" "${index}")"
  maintenances "${prefix}" "${index}" "$((index + 1))" "{bench: scale}" | kubectl create -f - >/dev/null
  kubectl wait "nm/${node}" --for=jsonpath='{.status.phase}'=Succeeded --timeout=300s >/dev/null
  drain_s="$(elapsed "${t0}" "$(now)")"
  kill "${sampler_pid}" 2>/dev/null
  wait "${sampler_pid}" 2>/dev/null || true
  sampler_pid=""
  during_kib="$(cat "${work}/max")"
}

have=0
rows=()
up_rows=()
create_total=0
idle=()
during=()
for size in "${sizes[@]}"; do
  ((size > have)) || die "NMO_BENCH_SCALE_SIZES must ascend"
  have_before="${have}"
  target="$(printf '%s%05d' "${prefix}" "${have}")"
  peer="$(printf '%s%05d' "${prefix}" "$((have + 1))")"
  log "growing the cluster to ${size} bench nodes (${have} → ${size}, ${per} pods each)"
  t0="$(now)"
  # The maintained nodes (the operator's, upstream's) and their pods first, so that they run
  # before kwok has thousands of others to start.
  bench_nodes "${prefix}" "${have}" "$((have + 2))" scale | bench_create
  kubectl wait "node/${target}" "node/${peer}" --for=condition=Ready --timeout=300s >/dev/null
  bench_pods "${ns}" "${prefix}" "${have}" "$((have + 2))" "${per}" 0 "${labels}" | bench_create
  wait_pods_running "${ns}" "${per}" 300 "${target}"
  wait_pods_running "${ns}" "${per}" 300 "${peer}"
  bench_nodes "${prefix}" "$((have + 2))" "${size}" scale | bench_create
  bench_pods "${ns}" "${prefix}" "$((have + 2))" "${size}" "${per}" 0 "${labels}" | bench_create
  have="${size}"
  created_s="$(elapsed "${t0}" "$(now)")"
  create_total="$(awk -v a="${create_total}" -v b="${created_s}" 'BEGIN { printf "%.3f", a + b }')"
  log "created in ${created_s} s; starting the operator"

  start_operator "${work}/operator-${size}.log"
  sleep "${settle}" # the idle window, not a synchronisation
  idle_kib="$(proc_kib "${operator_pid}" VmRSS)"
  idle+=("${idle_kib}")
  start_requests="$(requests_sent)"
  measure_maintenance "${operator_pid}" "${have_before}"
  during+=("${during_kib}")
  hwm_kib="$(proc_kib "${operator_pid}" VmHWM)"
  maintenance_requests=$(($(requests_sent) - start_requests))
  cp_rss="$(control_plane_kib VmRSS)"
  cp_hwm="$(control_plane_kib VmHWM)"
  kubectl delete "nm/${target}" --timeout=120s >/dev/null
  stop_operator
  rows+=("$(printf '%-8s %-8s %-12s %-14s %-12s %-10s %-20s %-22s' "${size}" "$((size * per))" \
    "${idle_kib}" "${during_kib}" "${hwm_kib}" "${drain_s}" \
    "${start_requests} / ${maintenance_requests}" \
    "$((cp_rss / 1024)) / $((cp_hwm / 1024)) MiB")")

  if [[ -n "${upstream_bin}" ]]; then
    log "upstream medik8s NMO at ${size} nodes"
    start_upstream "${work}/upstream-${size}.log"
    sleep "${settle}" # the idle window, not a synchronisation
    up_idle_kib="$(proc_kib "${upstream_pid}" VmRSS)"
    op_during_kib="${during_kib}"
    measure_maintenance "${upstream_pid}" "$((have_before + 1))"
    up_rows+=("$(printf '%-8s %-12s %-14s %-12s %-10s %-14s %s' "${size}" "${up_idle_kib}" \
      "${during_kib}" "$(proc_kib "${upstream_pid}" VmHWM)" "${drain_s}" \
      "$(ratio "${idle_kib}" "${up_idle_kib}")" "$(ratio "${op_during_kib}" "${during_kib}")")")
    kubectl delete "nm/${peer}" --timeout=120s >/dev/null
    stop_upstream
  fi
done

log "stopping the scale cluster"
t0="$(now)"
hack/cluster-down.sh >/dev/null
down_s="$(elapsed "${t0}" "$(now)")"

printf '\nMemory against cluster size: bench kwok nodes with %d bare pods each (plus the cluster'"'"'s own nodes), operator at its defaults\n' "${per}"
printf '%-8s %-8s %-12s %-14s %-12s %-10s %-20s %-22s\n' "nodes" "pods" "idle KiB" "during KiB" "VmHWM KiB" "drain s" \
  "requests start / nm" "control plane RSS / peak"
printf '%s\n' "${rows[@]}"
printf 'requests: the operator'"'"'s rest_client_requests_total from its start to the idle sample, then over the maintenance\n'
if ((${#up_rows[@]} > 0)); then
  printf '\nUpstream medik8s NMO on the same clusters (as cluster admin, a second node of each batch)\n'
  printf '%-8s %-12s %-14s %-12s %-10s %-14s %s\n' "nodes" "idle KiB" "during KiB" "VmHWM KiB" "drain s" \
    "ours/up idle" "ours/up during"
  printf '%s\n' "${up_rows[@]}"
fi
n=${#sizes[@]}
slope() { # slope <first KiB> <last KiB>: KiB per 1,000 nodes
  awk -v a="$1" -v b="$2" -v x="${sizes[0]}" -v y="${sizes[n - 1]}" 'BEGIN { printf "%.0f", (b - a) * 1000 / (y - x) }'
}
printf 'slope from %d to %d nodes: idle %s KiB, during a maintenance %s KiB per 1,000 nodes\n' \
  "${sizes[0]}" "${sizes[n - 1]}" "$(slope "${idle[0]}" "${idle[n - 1]}")" \
  "$(slope "${during[0]}" "${during[n - 1]}")"
printf 'the scale cluster: up in %s s, created objects in %s s, stopped in %s s\n' "${up_s}" \
  "${create_total}" "${down_s}"
