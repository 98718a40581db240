#!/usr/bin/env bash
# The long fuzz run of docs/reliability.md ("Hostile input"): every libFuzzer target of the `fuzz`
# preset (Clang, ASan+UBSan) for a fixed number of executions, one target at a time, at the lowest
# CPU priority, then a table of what ran.
#
#   hack/fuzz-long.sh                      # every target, 10,000,000 executions each
#   NMO_FUZZ_RUNS=100000 hack/fuzz-long.sh # a shorter run
#   hack/fuzz-long.sh kube_list_fuzz ...   # only these targets
#
# Each target starts from its checked-in seeds (src/**/testdata/<target>/) plus what earlier long
# runs found (build-fuzz/fuzz-long/<target>/corpus/, kept between runs, never in the repository).
# A crash, leak, timeout or out-of-memory input is saved next to that corpus as crash-*, leak-*,
# timeout-* or oom-* and the script exits 1. The table also goes to build-fuzz/fuzz-long/results.md.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"

runs="${NMO_FUZZ_RUNS:-10000000}"
# libFuzzer's per-input limits: 10 s per input, 2 GB of RSS (the smoke test's values).
timeout_s="${NMO_FUZZ_TIMEOUT:-10}"
rss_mb="${NMO_FUZZ_RSS_MB:-2048}"
# ASan keeps freed memory in a quarantine to catch use after free; at its default (256 MB) the
# RSS of a slow target such as kube_kubeconfig_fuzz grew past 1.4 GB in 2.5 million executions
# (memory not leaked: with no quarantine it stayed at 55 MB) and would have crossed the RSS limit
# before 10 million. 32 MB still catches a use soon after the free.
export ASAN_OPTIONS="${ASAN_OPTIONS:-quarantine_size_mb=32}"
out="${root}/build-fuzz/fuzz-long"

log() { printf '\n== %s\n' "$*" >&2; }

cmake --preset fuzz >/dev/null
if (($# > 0)); then
  targets=("$@")
else
  mapfile -t targets < <(ctest --preset fuzz -N -L fuzz-smoke | awk '/Test +#[0-9]+:/ {print $3}')
fi
if ((${#targets[@]} == 0)); then
  echo "no fuzz targets found (is NMO_FUZZ on in build-fuzz?)" >&2
  exit 1
fi
log "building ${#targets[@]} fuzz targets in build-fuzz"
nice -n 19 cmake --build --preset fuzz -j1 --target "${targets[@]}" >&2

mkdir -p "${out}"
commit="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src || echo '+changes')"
table="${out}/results.md"
{
  echo "Long fuzz run $(date -u +%Y-%m-%dT%H:%M:%SZ), commit ${commit}, ${runs} runs per target"
  echo "(libFuzzer -runs=${runs} -timeout=${timeout_s} -rss_limit_mb=${rss_mb}, ASAN_OPTIONS=${ASAN_OPTIONS}, nice -n 19, one at a time)"
  echo
  echo "| target | executions | seconds | exec/s | new corpus entries | crashes |"
  echo "| --- | ---: | ---: | ---: | ---: | ---: |"
} >"${table}"

failed=0
for target in "${targets[@]}"; do
  seeds="$(find src -type d -path "*/testdata/${target}" | head -n 1)"
  if [[ -z "${seeds}" ]]; then
    echo "${target}: no seed folder src/**/testdata/${target}" >&2
    exit 1
  fi
  dir="${out}/${target}"
  mkdir -p "${dir}/corpus"
  : >"${dir}/.started"
  log "${target}: ${runs} runs from ${seeds}"
  start=$(date +%s)
  status=0
  nice -n 19 "build-fuzz/bin/${target}" -runs="${runs}" -timeout="${timeout_s}" \
    -rss_limit_mb="${rss_mb}" -print_final_stats=1 -artifact_prefix="${dir}/" \
    "${dir}/corpus" "${seeds}" >"${dir}/log.txt" 2>&1 || status=$?
  seconds=$(($(date +%s) - start))
  executed="$(awk '/^stat::number_of_executed_units:/ {print $2}' "${dir}/log.txt")"
  added="$(awk '/^stat::new_units_added:/ {print $2}' "${dir}/log.txt")"
  crashes="$(find "${dir}" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' \
    -o -name 'timeout-*' -o -name 'oom-*' \) -newer "${dir}/.started" | wc -l)"
  if ((status != 0)); then
    # libFuzzer stops at the first finding and prints no final stats then.
    crashes=$((crashes > 0 ? crashes : 1))
    executed="${executed:-"$(grep -o '^#[0-9]*' "${dir}/log.txt" | tail -n 1 | tr -d '#')"}"
    failed=1
    echo "${target}: FAILED (exit ${status}); see ${dir}/log.txt" >&2
    tail -n 30 "${dir}/log.txt" >&2
  fi
  per_second="?"
  if [[ -n "${executed}" ]]; then
    per_second=$((executed / (seconds > 0 ? seconds : 1)))
  fi
  printf '| %s | %s | %s | %s | %s | %s |\n' "${target}" "${executed:-?}" "${seconds}" \
    "${per_second}" "${added:-?}" "${crashes}" >>"${table}"
done

echo
cat "${table}"
exit "${failed}"
