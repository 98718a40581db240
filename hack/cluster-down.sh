#!/usr/bin/env bash
# Stops exactly the processes cluster-up started (by PID) and removes the cluster state.
# --keep-logs keeps .cluster/logs for inspection.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=hack/testenv-lib.sh
source "${root}/hack/testenv-lib.sh"
dir="$(cluster_dir)"

# The real node first (its kubelet, containerd, containers and mounts), while the API server runs.
"${root}/hack/real-node.sh" down || true

if [[ -f "${dir}/pids" ]]; then
  # Reverse start order: kwok and the controllers first, etcd last.
  tac "${dir}/pids" | while read -r name pid; do
    stop_process "${name}" "${pid}" && echo "stopped ${name} (pid ${pid})"
  done
fi
if [[ "${1:-}" == --keep-logs ]]; then
  find "${dir}" -mindepth 1 -maxdepth 1 ! -name logs -exec rm -rf {} + 2>/dev/null || true
else
  rm -rf "${dir}"
fi
