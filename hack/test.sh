#!/usr/bin/env bash
# Runs every test: unit tests (GCC, then Clang with ASan+UBSan), the fuzz smoke, then the
# end-to-end tests (with the short form of the chaos experiments, and the integration tests again
# from the ASan+UBSan build) against the real local control plane, which it brings up (or
# reuses) and tears down if it started it, and last the install of the operator's image on the
# cluster's real kubelet node (NMO_REAL_NODE=0 leaves that out), then the e2e-oldest preset
# on a second cluster of the oldest tested Kubernetes (NMO_TEST_OLDEST=0 leaves that out; with
# KUBE_VERSION=1.27 only that preset runs, on that version). Ends with one summary line:
# "tests: N passed, N failed".
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

passed=0
failed=0
status=0
# Runs ctest and adds its counts to the totals.
run_ctest() {
  local out rc=0
  out="$(mktemp)"
  ctest "$@" 2>&1 | tee "${out}" || rc=$?
  local line
  line="$(grep -E '[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "${out}" | tail -n 1 || true)"
  rm -f "${out}"
  if [[ -z "${line}" ]]; then
    log "ctest $* printed no summary"
    status=1
    return
  fi
  local f t
  f="$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/' <<<"${line}")"
  t="$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\2/' <<<"${line}")"
  passed=$((passed + t - f))
  failed=$((failed + f))
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

if ((e2e_only == 0)); then
  log "clang-format check"
  git ls-files '*.h' '*.cc' | xargs -r clang-format-14 --dry-run --Werror ||
    die "code is not clang-formatted: run make format"
  log "unit tests (GCC)"
  cmake --preset dev >/dev/null
  cmake --build --preset dev
  run_ctest --preset dev -L unit
  if [[ "${NMO_SKIP_SANITIZERS:-0}" != 1 ]]; then
    log "unit tests under ASan+UBSan (clang)"
    cmake --preset asan-ubsan >/dev/null
    cmake --build --preset asan-ubsan
    run_ctest --preset asan-ubsan -L unit
    # The fuzz smoke of docs/reliability.md: a minute per target, two at a time (one per core).
    log "fuzz smoke: each libFuzzer target for ${NMO_FUZZ_SMOKE_SECONDS:-60}s from its seed corpus"
    cmake --preset fuzz -DNMO_FUZZ_SMOKE_SECONDS="${NMO_FUZZ_SMOKE_SECONDS:-60}" >/dev/null
    mapfile -t fuzzers < <(ctest --preset fuzz -N | awk '/Test +#[0-9]+:/ {print $3}')
    if ((${#fuzzers[@]} > 0)); then
      cmake --build --preset fuzz --target "${fuzzers[@]}"
      run_ctest --preset fuzz --parallel 2
    fi
  fi
else
  cmake --preset dev >/dev/null
  cmake --build --preset dev
fi

log "waiting for the control-plane binaries"
e2e_environment
cleanup() {
  if ((E2E_STARTED_CLUSTER + E2E_STARTED_OLDEST_CLUSTER > 0)); then log "stopping the local clusters"; fi
  e2e_cluster_cleanup
}
trap cleanup EXIT

log "end-to-end tests against the local cluster, Kubernetes $(testenv_k8s_version) (NMO_OPERATOR_KUBECONFIG=${NMO_OPERATOR_KUBECONFIG}, NMO_PROMCHECK=${NMO_PROMCHECK})"
run_ctest --preset "${e2e_preset}"
if ((e2e_only == 0)) && [[ "${NMO_SKIP_SANITIZERS:-0}" != 1 ]]; then
  log "integration tests of the client and runtime under ASan+UBSan, against the local cluster"
  run_ctest --preset asan-ubsan-integration
fi
if [[ "${NMO_REAL_NODE}" == 1 ]]; then
  log "the install on the real node (image ${NMO_IMAGE_ARCHIVE})"
  NMO_REQUIRE_REAL_NODE=1 run_ctest --preset real-node
fi
if [[ "${NMO_TEST_OLDEST}" == 1 ]]; then
  log "the story scenarios, the webhook, the CRD, the client and the plugin on Kubernetes $(KUBE_VERSION="$(testenv_oldest_version)" testenv_k8s_version), a second cluster"
  e2e_environment_oldest
  run_ctest --preset e2e-oldest
fi

cleanup
echo "tests: ${passed} passed, ${failed} failed"
exit "${status}"
