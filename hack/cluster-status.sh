#!/usr/bin/env bash
# Exits 0 when every process of the local cluster runs and the API server is ready.
# With --memory, also prints each component's resident memory.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=hack/testenv-lib.sh
source "${root}/hack/testenv-lib.sh"
dir="$(cluster_dir)"

[[ -f "${dir}/pids" && -f "${dir}/ports.env" ]] || die "no local cluster in ${dir}"
# shellcheck source=/dev/null
source "${dir}/ports.env"
total=0
while read -r name pid; do
  kill -0 "${pid}" 2>/dev/null || die "${name} (pid ${pid}) is not running"
  if [[ "${1:-}" == --memory ]]; then
    rss="$(awk '/^VmRSS:/ {print $2}' "/proc/${pid}/status")"
    total=$((total + rss))
    printf '  %-24s pid %-8s %6d MiB\n' "${name}" "${pid}" $((rss / 1024))
  fi
done <"${dir}/pids"
[[ "${1:-}" == --memory ]] && printf '  %-24s %12s %6d MiB\n' "control plane total" "" $((total / 1024))
curl -sf --cacert "${dir}/pki/ca.crt" "https://127.0.0.1:${APISERVER_PORT}/readyz" >/dev/null ||
  die "kube-apiserver on port ${APISERVER_PORT} is not ready"
