# Shared helpers for the testenv scripts (sourced, not executed).

die() {
  printf 'error: %s\n' "$*" >&2
  exit 1
}

# Cache root for control-plane binaries; outside the repository.
testenv_cache_root() {
  echo "${NMO_TESTENV_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/node-maintenance-operator/testenv}"
}

# The Kubernetes minors the tests run against, the default (newest) first. Each has its own
# module in testenv/k8s-<minor>; etcd and kwok are shared.
testenv_versions() { echo "1.37 1.34 1.27"; }
testenv_newest_version() { testenv_versions | awk '{print $1}'; }
testenv_oldest_version() { testenv_versions | awk '{print $NF}'; }

# The minor selected by KUBE_VERSION (default: the newest); dies on one that is not pinned.
testenv_kube_version() {
  local want="${KUBE_VERSION:-}" v
  [[ -n "${want}" ]] || want="$(testenv_newest_version)"
  for v in $(testenv_versions); do
    if [[ "${v}" == "${want}" ]]; then
      echo "${v}"
      return
    fi
  done
  die "KUBE_VERSION=${want} is not one of the pinned versions: $(testenv_versions)"
}

testenv_default_version() { [[ "$(testenv_kube_version)" == "$(testenv_newest_version)" ]]; }

# The selected minor as a number (1.27: 27), for what differs between API server versions.
testenv_minor() {
  local v
  v="$(testenv_kube_version)" || return 1
  echo "${v#1.}"
}

# The selected version's place in testenv_versions (the newest: 0), for its own ports and cluster.
testenv_version_index() {
  local want i=0 v
  want="$(testenv_kube_version)" || return 1
  for v in $(testenv_versions); do
    [[ "${v}" == "${want}" ]] && break
    i=$((i + 1))
  done
  echo "${i}"
}

# The selected version's Kubernetes module directory.
testenv_k8s_dir() {
  local v
  v="$(testenv_kube_version)" || return 1
  echo "$(repo_root)/testenv/k8s-${v}"
}

# The full Kubernetes version pinned for the selected minor, e.g. v1.34.4.
testenv_k8s_version() {
  local dir
  dir="$(testenv_k8s_dir)" || return 1
  sed -nE 's/^(require)?[[:space:]]*k8s\.io\/kubernetes (v[0-9.]+).*/\2/p' "${dir}/go.mod" | head -1
}

# The pins of the selected version: its wrapper go.mod/go.sum files.
testenv_key() {
  local t k8s
  t="$(repo_root)/testenv"
  k8s="$(testenv_k8s_dir)" || return 1
  k8s="$(basename "${k8s}")"
  cat "${t}/etcd/go.mod" "${t}/${k8s}/go.mod" "${t}/kwok/go.mod" \
    "${t}/etcd/go.sum" "${t}/${k8s}/go.sum" "${t}/kwok/go.sum" | sha256sum | cut -c1-16
}

# deploy/'s CRD kustomization for the selected version: servers before 1.31 take the variant
# without selectableFields (deploy/before-1.31).
testenv_crd_kustomization() {
  local minor
  minor="$(testenv_minor)" || return 1
  if ((minor < 31)); then echo deploy/before-1.31/crd; else echo deploy/crd; fi
}

testenv_bin_dir() {
  local version key
  version="$(testenv_k8s_version)" && key="$(testenv_key)" || return 1
  echo "$(testenv_cache_root)/${version}-${key}/bin"
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

# Repository root and the cluster state directory (git-ignored): .cluster for the default
# Kubernetes version, .cluster-<minor> for another (KUBE_VERSION=1.27: .cluster-1.27), so both
# clusters can run at once.
repo_root() { cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd; }
# The project's version (CMakeLists.txt's project VERSION): the image's, the OLM bundle's and
# the app.kubernetes.io/version label of deploy/default.
project_version() { sed -n -E 's/^ +VERSION ([0-9.]+)$/\1/p' "$(repo_root)/CMakeLists.txt" | head -n 1; }
cluster_dir() {
  if [[ -n "${NMO_CLUSTER_DIR:-}" ]]; then
    echo "${NMO_CLUSTER_DIR}"
  elif testenv_default_version; then
    echo "$(repo_root)/.cluster"
  else
    echo "$(repo_root)/.cluster-$(testenv_kube_version)"
  fi
}

# A port base derived from the checkout path, so two checkouts on one machine pick different
# ports, and 100 higher for each Kubernetes version after the newest in testenv_versions (1.34:
# 100, 1.27: 200); override with NMO_CLUSTER_PORT_BASE.
# Every port lies below the kernel's ephemeral range (net.ipv4.ip_local_port_range, 32768 by
# default): a port inside it may be the local end of any client connection at that moment (the
# API server's to etcd), and a server that binds it later fails with "Address already in use".
default_port_base() {
  local sum offset=0 ephemeral slots
  sum="$(printf '%s' "$(repo_root)" | cksum | cut -d' ' -f1)"
  offset=$(($(testenv_version_index) * 100))
  ephemeral="$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)"
  # Bases 20 apart, each with its twins 100 and 200 higher and 20 ports, all below `ephemeral`.
  slots=$(((ephemeral - 20000 - 220) / 20))
  ((slots >= 1)) || slots=1
  echo $((20000 + (sum % slots) * 20 + offset))
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
