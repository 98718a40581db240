#!/usr/bin/env bash
# Restarts one component of the running local cluster (default: kube-apiserver) with the same
# flags, for fault tests: `hack/cluster-restart.sh kube-apiserver`. Returns once it is healthy.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=hack/testenv-lib.sh
source "${root}/hack/testenv-lib.sh"
dir="$(cluster_dir)"
name="${1:-kube-apiserver}"
[[ -f "${dir}/pids" ]] || die "no local cluster in ${dir}"
# shellcheck source=/dev/null
source "${dir}/ports.env"

pid="$(awk -v n="${name}" '$1 == n {print $2}' "${dir}/pids")"
[[ -n "${pid}" ]] || die "${name} is not part of the local cluster"
exe="$(readlink "/proc/${pid}/exe" 2>/dev/null || true)"
[[ "$(basename "${exe}")" == "${name}" ]] || die "${name} (pid ${pid}) is not running"
mapfile -d '' args <"/proc/${pid}/cmdline"

kill -TERM "${pid}"
for _ in $(seq 1 100); do
  kill -0 "${pid}" 2>/dev/null || break
  sleep 0.1
done
kill -KILL "${pid}" 2>/dev/null || true

setsid "${args[@]}" >>"${dir}/logs/${name}.log" 2>&1 </dev/null &
new_pid=$!
sed -i "s/^${name} ${pid}\$/${name} ${new_pid}/" "${dir}/pids"
if [[ "${name}" == kube-apiserver ]]; then
  for _ in $(seq 1 600); do
    curl -sf --cacert "${dir}/pki/ca.crt" "https://127.0.0.1:${APISERVER_PORT}/readyz" >/dev/null && exit 0
    kill -0 "${new_pid}" 2>/dev/null || die "kube-apiserver exited after the restart (see ${dir}/logs/${name}.log)"
    sleep 0.1
  done
  die "kube-apiserver not ready 60 s after the restart"
fi
