#!/usr/bin/env bash
# Restarts one component of the running local cluster (default: kube-apiserver) with the same
# flags, for fault tests: `hack/cluster-restart.sh kube-apiserver`. Returns once it is healthy
# (kube-apiserver: /readyz; etcd: its /health, then the API server's /readyz, which checks etcd,
# so that the cluster is usable again; other components: once started).
#
# A test that must act while the component is down splits the restart in two:
#   hack/cluster-restart.sh --stop-only kube-apiserver    # stops it, remembers its command line
#   ...                                                    # e.g. write to etcd directly
#   hack/cluster-restart.sh --start-only kube-apiserver   # starts it again, waits until healthy
# --start-only does nothing when the component was not stopped by --stop-only (so a test's
# cleanup may call it unconditionally). Until it runs, cluster-status reports the cluster down.
#
# The component is stopped with SIGTERM and, if still running 10 s later, SIGKILL (kube-apiserver
# keeps serving open watches for up to a minute after SIGTERM, so it usually takes the 10 s).
# --kill sends SIGKILL at once, a crash: the outage is then only the start-up time, which keeps
# the other components' client-side backoff short.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=hack/testenv-lib.sh
source "${root}/hack/testenv-lib.sh"
dir="$(cluster_dir)"
mode=restart
signal=TERM
while [[ "${1:-}" == -* ]]; do
  case "$1" in
    --stop-only) mode=stop ;;
    --start-only) mode=start ;;
    --kill) signal=KILL ;;
    *) die "unknown option $1 (expected --stop-only, --start-only or --kill)" ;;
  esac
  shift
done
name="${1:-kube-apiserver}"
[[ -f "${dir}/pids" ]] || die "no local cluster in ${dir}"
# shellcheck source=/dev/null
source "${dir}/ports.env"
# The command line of a component stopped by --stop-only, NUL-separated.
saved="${dir}/stopped-${name}.cmdline"

# True while the process runs; a zombie (exited, not yet reaped by its parent) does not count.
running() { [[ -e "/proc/$1" ]] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }

pid="$(awk -v n="${name}" '$1 == n {print $2}' "${dir}/pids")"
[[ -n "${pid}" ]] || die "${name} is not part of the local cluster"

if [[ "${mode}" != start ]]; then
  [[ -f "${saved}" ]] && die "${name} was stopped by --stop-only; run --start-only first"
  exe="$(readlink "/proc/${pid}/exe" 2>/dev/null || true)"
  [[ "$(basename "${exe}")" == "${name}" ]] || die "${name} (pid ${pid}) is not running"
  mapfile -d '' args <"/proc/${pid}/cmdline"

  kill "-${signal}" "${pid}"
  for _ in $(seq 1 100); do
    running "${pid}" || break
    sleep 0.1
  done
  kill -KILL "${pid}" 2>/dev/null || true
  # SIGKILL is not instant either: return only once the process is gone (or a zombie).
  for _ in $(seq 1 100); do
    running "${pid}" || break
    sleep 0.1
  done
  running "${pid}" && die "${name} (pid ${pid}) survived SIGKILL"
  if [[ "${mode}" == stop ]]; then
    printf '%s\0' "${args[@]}" >"${saved}"
    exit 0
  fi
else
  [[ -f "${saved}" ]] || exit 0
  mapfile -d '' args <"${saved}"
fi

# The kernel closes a killed process's sockets only when its last thread has exited, which can
# be after its main thread shows as a zombie: wait until the port is free before starting again.
case "${name}" in
  kube-apiserver) port="${APISERVER_PORT}" ;;
  etcd) port="${ETCD_PORT}" ;;
  kube-controller-manager) port="${KCM_PORT}" ;;
  kube-scheduler) port="${SCHEDULER_PORT}" ;;
  *) port="" ;;
esac
if [[ -n "${port}" ]]; then
  for _ in $(seq 1 100); do
    port_in_use "${port}" || break
    sleep 0.1
  done
  port_in_use "${port}" && die "port ${port} of ${name} is still in use 10 s after it stopped"
fi

start_detached "${dir}/logs/${name}.log" 1 "${args[@]}"
new_pid="${START_DETACHED_PID}"
sed -i "s/^${name} ${pid}\$/${name} ${new_pid}/" "${dir}/pids"
rm -f "${saved}"
if [[ "${name}" == etcd ]]; then
  for _ in $(seq 1 600); do
    if curl -sf "http://127.0.0.1:${ETCD_PORT}/health" | grep -q '"health":"true"'; then
      for _ in $(seq 1 600); do
        curl -sf --cacert "${dir}/pki/ca.crt" "https://127.0.0.1:${APISERVER_PORT}/readyz" >/dev/null && exit 0
        sleep 0.1
      done
      die "kube-apiserver not ready 60 s after etcd came back"
    fi
    kill -0 "${new_pid}" 2>/dev/null || die "etcd exited after the restart (see ${dir}/logs/${name}.log)"
    sleep 0.1
  done
  die "etcd not healthy 60 s after the restart"
fi
if [[ "${name}" == kube-apiserver ]]; then
  for _ in $(seq 1 600); do
    curl -sf --cacert "${dir}/pki/ca.crt" "https://127.0.0.1:${APISERVER_PORT}/readyz" >/dev/null && exit 0
    kill -0 "${new_pid}" 2>/dev/null || die "kube-apiserver exited after the restart (see ${dir}/logs/${name}.log)"
    sleep 0.1
  done
  die "kube-apiserver not ready 60 s after the restart"
fi
