# Shared helpers for the testenv scripts (sourced, not executed).

die() {
  printf 'error: %s\n' "$*" >&2
  exit 1
}

# Cache root for control-plane binaries; outside the repository.
testenv_cache_root() {
  echo "${NMO_TESTENV_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/node-maintenance-operator/testenv}"
}

# The pins: every wrapper go.mod/go.sum.
testenv_key() {
  local root
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  cat "${root}"/testenv/*/go.mod "${root}"/testenv/*/go.sum |
    sha256sum | cut -c1-16
}

testenv_bin_dir() {
  local root k8s
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  k8s="$(awk '$1 == "k8s.io/kubernetes" {print $2}' "${root}/testenv/k8s/go.mod")"
  echo "$(testenv_cache_root)/${k8s}-$(testenv_key)/bin"
}

# wait_until <seconds> <command...>: polls the command (quietly) until it succeeds; fails once the
# deadline has passed.
wait_until() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || return 1
    sleep 0.5
  done
}

# stop_process <binary name> <pid>: SIGTERM if the PID still runs that binary (PIDs are reused),
# SIGKILL after 10 s; returns 1 when there was nothing of that name to stop.
stop_process() {
  local exe
  exe="$(readlink "/proc/$2/exe" 2>/dev/null || true)"
  [[ "$(basename "${exe}")" == "$1" ]] || return 1
  kill -TERM "$2" 2>/dev/null || return 1
  for _ in $(seq 1 100); do
    kill -0 "$2" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL "$2" 2>/dev/null || true
}

# write_kubeconfig <kubectl> <file> <server> <CA file> <user> <client cert> <client key>: a
# kubeconfig with the one context "local", the certificates embedded.
write_kubeconfig() {
  local kubectl="$1" file="$2"
  "${kubectl}" config set-cluster local --server="$3" --certificate-authority="$4" \
    --embed-certs=true --kubeconfig="${file}" >/dev/null &&
    "${kubectl}" config set-credentials "$5" --client-certificate="$6" --client-key="$7" \
      --embed-certs=true --kubeconfig="${file}" >/dev/null &&
    "${kubectl}" config set-context local --cluster=local --user="$5" --kubeconfig="${file}" >/dev/null &&
    "${kubectl}" config use-context local --kubeconfig="${file}" >/dev/null
}

# Repository root and the cluster state directory (git-ignored).
repo_root() { cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd; }
cluster_dir() { echo "${NMO_CLUSTER_DIR:-$(repo_root)/.cluster}"; }

# A port base derived from the checkout path, so two checkouts on one machine
# pick different ports; override with NMO_CLUSTER_PORT_BASE.
default_port_base() {
  local sum
  sum="$(printf '%s' "$(repo_root)" | cksum | cut -d' ' -f1)"
  echo $((20000 + (sum % 2000) * 20))
}

port_in_use() {
  # /proc/net/tcp lists listening sockets (state 0A) with hex ports.
  local hex
  hex="$(printf '%04X' "$1")"
  awk -v p=":${hex}" 'NR > 1 && $4 == "0A" && substr($2, length($2) - 4) == p {found = 1} END {exit !found}' \
    /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# start_detached <log file> <append: 0|1> <command...>: runs the command in its own session with
# stdin from /dev/null and stdout/stderr to the log, without any other file the caller has
# open: a lock held by the caller (`flock /tmp/nmo-cluster.lock make test` restarting the API
# server in a test) must not live on in a cluster component. Sets START_DETACHED_PID.
start_detached() {
  local log_file="$1" append="$2"
  shift 2
  (
    for fd_path in /proc/"${BASHPID}"/fd/*; do
      fd="${fd_path##*/}"
      ((fd > 2)) && eval "exec ${fd}>&-" 2>/dev/null
    done
    if ((append)); then exec setsid "$@" >>"${log_file}" 2>&1 </dev/null; fi
    exec setsid "$@" >"${log_file}" 2>&1 </dev/null
  ) &
  START_DETACHED_PID=$!  # read by the callers
  export START_DETACHED_PID
}
