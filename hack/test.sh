#!/usr/bin/env bash
# Runs every test: the end-to-end tests (with the short form of the chaos experiments) against
# the real local control plane, which it brings up (or reuses) and tears down if it started it,
# then the unit tests (GCC, then Clang with ASan+UBSan; both compiled in the background during
# the end-to-end tests), the fuzz smoke and the integration tests again under ASan+UBSan, the
# install of the operator's image on the cluster's real kubelet node (NMO_REAL_NODE=0 leaves
# that out), and last the e2e-oldest preset on a second cluster of the oldest tested Kubernetes
# (NMO_TEST_OLDEST=0 leaves that out; with KUBE_VERSION=1.27 only that preset runs, on that
# version). Ends with one summary line: "tests: N passed, N failed, N skipped".
#   --e2e-only   skip the unit tests
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"
# shellcheck source=hack/testenv-lib.sh
source "${root}/hack/testenv-lib.sh"
# shellcheck source=hack/e2e-lib.sh
source "${root}/hack/e2e-lib.sh"

e2e_only=0
[[ "${1:-}" == --e2e-only ]] && e2e_only=1
log() { printf '[test %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# How long each phase took, printed at the end, and when the run is stopped from outside (a CI
# time limit): the last lines of its output then say where the time went.
phases=()
phase_name=""
phase_started=${SECONDS}
phase() {
  if [[ -n "${phase_name}" ]]; then
    phases+=("$(printf '%6ds  %s' $((SECONDS - phase_started)) "${phase_name}")")
  fi
  phase_name="$1"
  phase_started=${SECONDS}
  if [[ -n "$1" ]]; then log "$1"; fi
}
print_phases() {
  phase ""
  log "time per phase (${SECONDS}s in all):"
  printf '  %s\n' "${phases[@]}" >&2
}
stopped() {
  log "stopped by signal during: ${phase_name}"
  print_phases
  exit 143
}
trap stopped TERM INT

passed=0
failed=0
skipped=0
status=0
# Runs ctest and adds its counts to the totals.
run_ctest() {
  local out rc=0
  out="$(mktemp)"
  ctest "$@" 2>&1 | tee "${out}" || rc=$?
  local line
  line="$(grep -E '[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "${out}" | tail -n 1 || true)"
  if [[ -z "${line}" ]]; then
    rm -f "${out}"
    log "ctest $* printed no summary"
    status=1
    return
  fi
  local f t k
  f="$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/' <<<"${line}")"
  t="$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\2/' <<<"${line}")"
  # ctest counts a skipped test (GTEST_SKIP: a fixture or a Kubernetes version it needs is
  # missing) as passed; the summary names them apart.
  k="$(grep -cE '^[[:space:]]+[0-9]+ - .* \(Skipped\)$' "${out}" || true)"
  passed=$((passed + t - f - k))
  failed=$((failed + f))
  skipped=$((skipped + k))
  rm -f "${out}"
  ((rc == 0)) || status=1
}

# The control-plane binaries take tens of minutes to build the first time, the image minutes:
# build them in the background while the C++ code compiles and the unit tests run.
export NMO_REAL_NODE="${NMO_REAL_NODE:-1}"
export NMO_TEST_OLDEST="${NMO_TEST_OLDEST:-1}"
e2e_preset=e2e
if ! testenv_default_version; then
  # KUBE_VERSION=1.27 make e2e-test: that version's suite on its cluster, no real node.
  NMO_REAL_NODE=0
  NMO_TEST_OLDEST=0
  e2e_preset=e2e-oldest
fi
e2e_prerequisites_start

sanitizers=1
((e2e_only == 0)) && [[ "${NMO_SKIP_SANITIZERS:-0}" != 1 ]] || sanitizers=0
if ((e2e_only == 0)); then
  phase "clang-format check"
  git ls-files '*.h' '*.cc' | xargs -r clang-format-14 --dry-run --Werror ||
    die "code is not clang-formatted: run make format"
fi
phase "build (GCC) of what the end-to-end tests run"
cmake --preset dev >/dev/null
cmake --build --preset dev --target e2e-binaries
e2e_image_start build/bin/node-maintenance-operator
# The rest of the GCC build (the unit tests), then the ASan+UBSan build (its fuzz targets
# included: the preset builds them as libFuzzer fuzzers), compile at nice 19 while the
# end-to-end tests run: those wait on the cluster more than they compute, and at nice 19 the
# builds take only the time they leave idle.
if ((e2e_only == 0)); then
  builds_log="$(mktemp)"
  (
    set -e
    nice -n 19 cmake --build --preset dev
    if ((sanitizers == 1)); then
      cmake --preset asan-ubsan -DNMO_FUZZ_SMOKE_SECONDS="${NMO_FUZZ_SMOKE_SECONDS:-15}" >/dev/null
      nice -n 19 cmake --build --preset asan-ubsan
    fi
  ) >"${builds_log}" 2>&1 &
  builds_pid=$!
fi

phase "waiting for the control-plane binaries"
e2e_environment
cleanup() {
  if ((E2E_STARTED_CLUSTER + E2E_STARTED_OLDEST_CLUSTER > 0)); then log "stopping the local clusters"; fi
  e2e_cluster_cleanup
}
trap cleanup EXIT

phase "end-to-end tests against the local cluster, Kubernetes $(testenv_k8s_version) (NMO_OPERATOR_KUBECONFIG=${NMO_OPERATOR_KUBECONFIG}, NMO_PROMCHECK=${NMO_PROMCHECK})"
run_ctest --preset "${e2e_preset}"
if ((e2e_only == 0)); then
  phase "waiting for the unit tests' and the ASan+UBSan builds"
  if wait "${builds_pid}"; then
    rm -f "${builds_log}"
    phase "unit tests (GCC)"
    run_ctest --preset dev -L unit
    if ((sanitizers == 1)); then
      phase "unit tests under ASan+UBSan (clang)"
      run_ctest --preset asan-ubsan -L unit
      # The fuzz smoke of docs/reliability.md: each target for NMO_FUZZ_SMOKE_SECONDS (15) from
      # its seed corpus, two at a time (one per core); make fuzz-long fuzzes for longer.
      phase "fuzz smoke: each libFuzzer target for ${NMO_FUZZ_SMOKE_SECONDS:-15}s from its seed corpus"
      run_ctest --preset asan-ubsan -L fuzz-smoke --parallel 2
      phase "integration tests of the client and runtime under ASan+UBSan, against the local cluster"
      run_ctest --preset asan-ubsan-integration
    fi
  else
    tail -n 60 "${builds_log}" >&2
    rm -f "${builds_log}"
    log "a build failed: the unit tests did not run"
    failed=$((failed + 1))
    status=1
  fi
fi
if [[ "${NMO_REAL_NODE}" == 1 ]]; then
  phase "waiting for the operator's image"
  e2e_image_wait
  phase "the install on the real node (image ${NMO_IMAGE_ARCHIVE})"
  NMO_REQUIRE_REAL_NODE=1 run_ctest --preset real-node
fi
if [[ "${NMO_TEST_OLDEST}" == 1 ]]; then
  phase "the story scenarios, the webhook, the CRD, the client, the plugin, the VM scenarios and the MaintenancePlans on Kubernetes $(KUBE_VERSION="$(testenv_oldest_version)" testenv_k8s_version), a second cluster"
  e2e_environment_oldest
  run_ctest --preset e2e-oldest
fi

cleanup
print_phases
echo "tests: ${passed} passed, ${failed} failed, ${skipped} skipped"
exit "${status}"
