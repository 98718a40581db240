#!/usr/bin/env bash
# The reliability experiments at full length (docs/reliability.md): builds the operator
# and the experiments, brings the local cluster up (or reuses it), runs every test named
# `chaos.*` with NMO_CHAOS_FULL=1, and prints one table of what each experiment counted
# (iterations, faults injected, invariant violations, recovery times). `make test` runs the
# same experiments in their short form.
#   NMO_CHAOS_FILTER       regular expression of experiments to run (ctest -R; default: all)
#   NMO_CHAOS_ITERATIONS   overrides every experiment's iteration count (e.g. 3 for a quick look)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"
# shellcheck source=hack/testenv-lib.sh
source "${root}/hack/testenv-lib.sh"
# shellcheck source=hack/e2e-lib.sh
source "${root}/hack/e2e-lib.sh"
log() { printf '[chaos %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

e2e_prerequisites_start
log "building the operator and the experiments"
cmake --preset dev >/dev/null
cmake --build --preset dev
log "waiting for the control-plane binaries"
e2e_environment
trap e2e_cluster_cleanup EXIT

report="${root}/build/chaos-report.jsonl"
rm -f "${report}"
export NMO_CHAOS_REPORT="${report}" NMO_CHAOS_FULL=1
rc=0
ctest --preset e2e -R "^chaos\..*${NMO_CHAOS_FILTER:-}" || rc=$?

log "results (also in ${report})"
if [[ -s "${report}" ]]; then
  jq -r '[.experiment, (.figures | map("\(.[0])=\(.[1])") | join("  "))] | @tsv' "${report}" |
    column -t -s $'\t'
else
  log "no experiment reported figures"
fi
exit "${rc}"
