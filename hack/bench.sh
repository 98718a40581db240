#!/usr/bin/env bash
# Builds the release preset and runs every Google Benchmark binary, then prints one summary
# table with each figure next to its in-run baseline (e.g. our Pod projection against parsing
# the same list into a full JSON DOM). Raw results stay in build-release/bench/*.json.
#   NMO_BENCH_MIN_TIME   seconds per benchmark (default 1; e.g. 0.05 for a quick look)
#   NMO_BENCH_FILTER     regular expression passed to --benchmark_filter (default: all)
#   NMO_BENCH_SCENARIOS  the scenarios on the local cluster to run, in this order (default
#                        "drain api parallel scale plan cache"; 0 runs none): drain latency against
#                        kubectl drain, start-up and sizes (hack/bench-drain.sh), API cost per
#                        maintenance with 5 minutes blocked by a PDB (hack/bench-api.sh), parallel
#                        maintenances (hack/bench-parallel.sh), memory against cluster size up to
#                        5,000 nodes (hack/bench-scale.sh), the story's 22 workers as one
#                        MaintenancePlan against a kubectl drain loop (hack/bench-plan.sh), what
#                        the controllers' reads cost with 1,000 Pending maintenances and a plan
#                        in its health gate on 10,000 nodes (hack/bench-cache.sh). Each prints
#                        its table.
#   NMO_BENCH_DRAIN_SWEEP  the drain scenario's short sweep of --evictions-in-flight (default
#                        "4 32 128", one drain each; "" for none; docs/benchmarks.md has the full
#                        curve)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"
log() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

min_time="${NMO_BENCH_MIN_TIME:-1}"
filter="${NMO_BENCH_FILTER:-.}"
out_dir="${root}/build-release/bench"

log "building the release preset"
cmake --preset release >/dev/null
mapfile -t targets < <(ninja -C build-release -t targets all | sed -n 's/^bin\/\([a-z0-9_]*_benchmark\): .*/\1/p' | sort -u)
((${#targets[@]} > 0)) || { log "no benchmark targets found"; exit 1; }
cmake --build --preset release --target "${targets[@]}" node-maintenance-operator kubectl-maintenance

mkdir -p "${out_dir}"
for t in "${targets[@]}"; do
  log "running ${t}"
  "build-release/bin/${t}" --benchmark_min_time="${min_time}" --benchmark_filter="${filter}" \
    --benchmark_format=console --benchmark_out_format=json --benchmark_out="${out_dir}/${t}.json" >&2
done

# One row per benchmark: name, time per iteration, throughput, memory per item when measured.
jq -rs '
  def mb: if . then (. / 1e6 | . * 10 | round / 10 | tostring) + " MB/s" else "" end;
  def ips: if . == null then ""
           elif . >= 1e6 then (. / 1e6 | . * 100 | round / 100 | tostring) + " M/s"
           else (. / 1e3 | . * 10 | round / 10 | tostring) + " k/s" end;
  def ms: if . then (. * 100 | round / 100 | tostring) else "" end;
  def per: if . and . > 0 then (. | round | tostring) + " B" else "" end;
  [.[] | .benchmarks[] | select(.run_type == "iteration")] as $rows
  | ($rows | map({key: .name, value: .bytes_per_second}) | from_entries) as $bps
  | ["benchmark", "cpu/iter", "throughput", "items/s", "p50/p99 ms", "heap per item",
     "vs baseline"],
    ($rows[] |
      . as $r
      | (if ($r.name | test("^BM_Decode(ListPods|WatchLines)")) and $bps["BM_ParseDomDefaultAllocator"]
         then (($r.bytes_per_second / $bps["BM_ParseDomDefaultAllocator"]) * 100 | round / 100
               | tostring) + "x DOM parse"
         else "" end) as $ratio
      | [$r.name,
         ((($r.cpu_time * 100 | round) / 100 | tostring) + " " + $r.time_unit),
         ($r.bytes_per_second | mb),
         ((.items_per_second // .events) | ips),
         (if .p50_ms then (.p50_ms | ms) + " / " + (.p99_ms | ms) else "" end),
         (.heap_per_pod | per),
         $ratio])
  | @tsv' "${out_dir}"/*.json | column -t -s $'\t'

# The memory comparison the issue asks for: bytes per cached pod, projection vs DOM.
jq -rs '
  [.[] | .benchmarks[] | select(.run_type == "iteration")] as $rows
  | ($rows | map(select(.name == "BM_DecodeListPods")) | first) as $p
  | ($rows | map(select(.name == "BM_ParseDomDefaultAllocator")) | first) as $d
  | if $p and $d and $p.heap_per_pod > 0 and $d.heap_per_pod > 0 then
      "memory per cached pod: projection \($p.heap_per_pod | round) B, DOM \($d.heap_per_pod | round) B (\(($d.heap_per_pod / $p.heap_per_pod) * 10 | round / 10)x smaller); JSON \($p.json_bytes_per_pod | round) B per pod"
    else empty end' "${out_dir}"/*.json

export NMO_BENCH_DRAIN_SWEEP="${NMO_BENCH_DRAIN_SWEEP-4 32 128}"
scenarios="${NMO_BENCH_SCENARIOS:-drain api parallel scale plan cache}"
[[ "${scenarios}" == 0 || "${scenarios}" == 1 ]] && scenarios="${scenarios/1/drain api parallel scale plan cache}"
[[ "${scenarios}" == 0 ]] && scenarios=""
for scenario in ${scenarios}; do
  [[ -x "hack/bench-${scenario}.sh" ]] || { log "unknown scenario ${scenario}"; exit 1; }
  log "scenario: hack/bench-${scenario}.sh"
  started=${SECONDS}
  "hack/bench-${scenario}.sh"
  log "scenario ${scenario} took $((SECONDS - started)) s"
done
log "make bench done in ${SECONDS} s"
