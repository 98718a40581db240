#!/usr/bin/env bash
# `make run`: runs the operator on this machine against the local cluster, as its own
# ServiceAccount (not as cluster admin), so a missing RBAC permission in deploy/rbac shows up
# here exactly as it would in a real cluster, with its admission webhook registered.
#
#   hack/run.sh [-- operator flags...]     foreground; Ctrl-C stops it cleanly
#   hack/run.sh --background [-- flags...] starts it in the background and prints its PID
#   hack/run.sh --stop                     stops the operator a hack/run.sh started (its PID is in
#                                          .cluster/run.pid) and removes the webhook configuration
#   options: --log-file PATH (default .cluster/logs/operator.log, truncated at start)
#            --no-build      (use build/bin/node-maintenance-operator as it is)
#   operator flag --webhook-port=0 runs it without the webhook (nothing is registered); the
#   webhook's address, port and certificate are this script's, every other flag is passed on
#   (e.g. hack/run.sh -- --webhook-reject-unsafe-control-plane)
#
# Steps: brings the local cluster up if it is not running, builds the operator, applies
# deploy/crd, deploy/namespaces and deploy/rbac and writes .cluster/operator.kubeconfig (same
# server and CA as admin.kubeconfig, user = a 24 h token of the ServiceAccount
# node-maintenance-operator-system/node-maintenance-operator-controller-manager), both with
# hack/operator-kubeconfig.sh, makes a CA and a
# serving certificate for 127.0.0.1 once (.cluster/webhook-certs) and starts the operator with
# --log-format text, its webhook on 127.0.0.1:$WEBHOOK_PORT (.cluster/ports.env). Everything it
# logs goes to the log file as well. Then it registers the ValidatingWebhookConfiguration
# nodemaintenance-validation.medik8s.io (deploy/webhook's, made by hack/webhook-dev.sh with
# clientConfig.url pointing here) and
# reports ready once the API server calls the webhook. The configuration has failurePolicy Fail,
# so it must not outlive the operator: Ctrl-C, an operator that exits, a failed start and
# --stop all delete it (only when it still points at this operator's URL).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"
# shellcheck source=hack/testenv-lib.sh
source "${root}/hack/testenv-lib.sh"

background=0
build=1
stop=0
dir="$(cluster_dir)"
log_file="${dir}/logs/operator.log"
while (($# > 0)); do
  case "$1" in
    --background) background=1 ;;
    --no-build) build=0 ;;
    --stop) stop=1 ;;
    --log-file)
      [[ $# -ge 2 ]] || die "--log-file needs a path"
      log_file="$2"
      shift
      ;;
    --) shift; break ;;
    *) die "unknown option $1 (expected --background, --stop, --no-build, --log-file PATH, -- operator flags)" ;;
  esac
  shift
done
operator_args=("$@")

say() { printf '[run %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

namespace=node-maintenance-operator-system
service_account=node-maintenance-operator-controller-manager
binary="${root}/build/bin/node-maintenance-operator"

webhook_name=nodemaintenance-validation.medik8s.io
webhook_path=/validate-nodemaintenance-medik8s-io-v1beta1-nodemaintenance
cert_dir="${dir}/webhook-certs"
# The PID of the operator a hack/run.sh started (either mode), for --stop and against two at once.
pid_file="${dir}/run.pid"

# The PID in the PID file, if that process is still an operator started for this cluster (PIDs
# can be reused; /proc/PID/exe would read "... (deleted)" after a rebuild, the command line not).
running_pid() {
  local pid cmdline
  [[ -f "${pid_file}" ]] || return 1
  pid="$(cat "${pid_file}")"
  [[ "${pid}" =~ ^[0-9]+$ ]] || return 1
  cmdline="$(tr '\0' ' ' 2>/dev/null <"/proc/${pid}/cmdline")" || return 1
  [[ "${cmdline}" == "${binary} "*"--kubeconfig=${dir}/operator.kubeconfig"* ]] || return 1
  echo "${pid}"
}

# Whether a process runs: exists and is not a zombie (a --background operator belongs to init,
# which may take a while to reap it).
is_running() {
  local stat
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  stat="${stat##*) }"
  [[ "${stat:0:1}" != Z ]]
}

# SIGTERM (the operator finishes its reconciles and releases its Leases), SIGKILL after 20 s.
stop_pid() {
  local pid=$1
  kill -TERM "${pid}" 2>/dev/null || return 0
  for _ in $(seq 1 200); do
    is_running "${pid}" || return 0
    sleep 0.1
  done
  kill -KILL "${pid}" 2>/dev/null || true
  say "the operator (pid ${pid}) did not stop within 20 s and was killed"
}

# Deletes the webhook configuration if it is the one this script registers (its URL points at
# this cluster's webhook port), so an install of deploy/webhook into the cluster is left alone.
unregister_webhook() {
  local url
  url="$(kubectl get validatingwebhookconfiguration "${webhook_name}" --ignore-not-found \
    --request-timeout=10s -o jsonpath='{.webhooks[0].clientConfig.url}' 2>/dev/null)" || {
    say "warning: could not read ValidatingWebhookConfiguration ${webhook_name}; delete it by hand if it is left"
    return 0
  }
  [[ -n "${url}" ]] || return 0
  if [[ "${url}" != "https://127.0.0.1:${WEBHOOK_PORT}${webhook_path}" ]]; then
    say "ValidatingWebhookConfiguration ${webhook_name} points at ${url}, not at this script's operator; left alone"
    return 0
  fi
  if kubectl delete validatingwebhookconfiguration "${webhook_name}" --ignore-not-found \
    --request-timeout=10s >/dev/null; then
    say "deleted ValidatingWebhookConfiguration ${webhook_name}"
  else
    say "warning: could not delete ValidatingWebhookConfiguration ${webhook_name} (failurePolicy Fail: every" \
      "NodeMaintenance create fails while it is left); delete it: kubectl delete validatingwebhookconfiguration ${webhook_name}"
  fi
}

# --- --stop -----------------------------------------------------------------------------
if ((stop)); then
  [[ -f "${dir}/ports.env" ]] || die "the local cluster is not up (no ${dir}/ports.env)"
  # shellcheck source=/dev/null
  source "${dir}/ports.env"
  export KUBECONFIG="${dir}/admin.kubeconfig"
  export PATH="$(cat "${dir}/bin-dir"):${PATH}"
  # The configuration first: failing closed while nothing answers would refuse every create.
  unregister_webhook
  if pid="$(running_pid)"; then
    say "stopping the operator (pid ${pid})"
    stop_pid "${pid}"
    say "stopped"
  else
    say "no operator started by hack/run.sh is running"
  fi
  rm -f "${pid_file}"
  exit 0
fi

if pid="$(running_pid)"; then
  die "an operator started by hack/run.sh is running already (pid ${pid}); stop it first: hack/run.sh --stop"
fi

# --- the cluster ------------------------------------------------------------------------
if ! hack/cluster-status.sh >/dev/null 2>&1; then
  say "the local cluster is not running; starting it (make cluster-up)"
  hack/cluster-up.sh >/dev/null
fi
export KUBECONFIG="${dir}/admin.kubeconfig"
export PATH="$(cat "${dir}/bin-dir"):${PATH}"

# --- the binary -------------------------------------------------------------------------
if ((build)); then
  say "building node-maintenance-operator"
  cmake --preset dev >/dev/null
  cmake --build --preset dev --target node-maintenance-operator >&2
fi
[[ -x "${binary}" ]] || die "${binary} is missing; build it with make build"

# --- CRD, namespaces, RBAC (as admin), a kubeconfig for the ServiceAccount ----------------
say "installing the CRD, namespaces and RBAC (deploy/crd, deploy/namespaces, deploy/rbac)"
operator_kubeconfig="$(hack/operator-kubeconfig.sh --output "${dir}/operator.kubeconfig")"
say "identity: system:serviceaccount:${namespace}:${service_account} (${operator_kubeconfig})"

# --- run --------------------------------------------------------------------------------
# Metrics over plain HTTP and the probes, on the cluster's loopback ports (so two checkouts never
# collide on 8080/8081).
# shellcheck source=/dev/null
source "${dir}/ports.env"
args=(--kubeconfig="${operator_kubeconfig}" --log-format=text
  --metrics-bind-address="127.0.0.1:${METRICS_PORT}" --metrics-secure=false
  --health-probe-bind-address="127.0.0.1:${HEALTH_PORT}")
say "metrics: curl -s http://127.0.0.1:${METRICS_PORT}/metrics | grep nodemaintenance_"
say "probes:  curl -s http://127.0.0.1:${HEALTH_PORT}/readyz"

# The webhook: on 127.0.0.1 and the cluster's spare webhook port (so two checkouts never both
# take 9443), unless the operator flags say --webhook-port=0.
webhook=1
for ((i = 0; i < ${#operator_args[@]}; i++)); do
  case "${operator_args[i]}" in
    --webhook-port=0) webhook=0 ;;
    --webhook-port) [[ "${operator_args[i + 1]:-}" == 0 ]] && webhook=0 && i=$((i + 1)) ||
      die "hack/run.sh sets --webhook-port itself (WEBHOOK_PORT in ${dir}/ports.env); only --webhook-port=0 may be given" ;;
    # The ones set below, for this cluster's port and certificate; every other flag, such as
    # --webhook-reject-unsafe-control-plane (upstream's control-plane rule), goes to the operator.
    --webhook-port=* | --webhook-bind-address | --webhook-bind-address=* | --webhook-cert-dir | \
      --webhook-cert-dir=*)
      die "hack/run.sh sets ${operator_args[i]%%=*} itself (127.0.0.1:${WEBHOOK_PORT}, ${cert_dir}); of these only --webhook-port=0 may be given" ;;
  esac
done

# A CA and a serving certificate for IP 127.0.0.1 (hack/webhook-dev.sh, as the e2e tests make
# theirs), made once and kept while they are valid for at least 7 more days.
ensure_certificate() {
  local crt="${cert_dir}/tls.crt" tmp
  if [[ -f "${cert_dir}/ca.crt" && -f "${cert_dir}/tls.key" && -f "${crt}" ]] &&
    openssl x509 -in "${crt}" -noout -checkend $((7 * 86400)) >/dev/null 2>&1 &&
    openssl verify -CAfile "${cert_dir}/ca.crt" "${crt}" >/dev/null 2>&1 &&
    [[ "$(openssl x509 -in "${crt}" -noout -ext subjectAltName 2>/dev/null)" == *"IP Address:127.0.0.1"* ]]; then
    return 0
  fi
  say "making a CA and a serving certificate for 127.0.0.1 (${cert_dir})"
  tmp="$(mktemp -d "${dir}/webhook-certs.XXXXXX")"
  hack/webhook-dev.sh certificate "${tmp}" 365 || { rm -rf "${tmp}"; die "making the certificate failed"; }
  rm -rf "${cert_dir}"
  mv "${tmp}" "${cert_dir}"
}

webhook_url="https://127.0.0.1:${WEBHOOK_PORT}${webhook_path}"
if ((webhook)); then
  if port_in_use "${WEBHOOK_PORT}"; then
    die "port ${WEBHOOK_PORT} (WEBHOOK_PORT in ${dir}/ports.env) is taken; is an operator running already? (hack/run.sh --stop)"
  fi
  ensure_certificate
  args+=(--webhook-bind-address=127.0.0.1 --webhook-port="${WEBHOOK_PORT}"
    --webhook-cert-dir="${cert_dir}")
fi
args+=("${operator_args[@]}")

# The configuration deploy/webhook installs, pointing at this process instead of a Service.
register_webhook() {
  # delete + create rather than apply: a configuration left by anything else is replaced whole.
  kubectl delete validatingwebhookconfiguration "${webhook_name}" --ignore-not-found >/dev/null
  hack/webhook-dev.sh configuration "${webhook_url}" "${cert_dir}/ca.crt" |
    jq '.metadata.labels["app.kubernetes.io/managed-by"] = "hack-run.sh"' |
    kubectl create -f - >/dev/null
}

# The API server picks a new configuration up asynchronously: ready once a server-side dry-run
# create for a node that does not exist is denied by the webhook (dry run: nothing is stored).
wait_for_webhook() {
  local expected out deadline=$((SECONDS + 30))
  expected="admission webhook \"${webhook_name}\" denied the request: node \"node-that-does-not-exist\" not found in cluster"
  while :; do
    out="$(kubectl create --dry-run=server -f - 2>&1 <<'YAML'
apiVersion: nodemaintenance.medik8s.io/v1beta1
kind: NodeMaintenance
metadata:
  name: run-sh-webhook-probe
spec:
  nodeName: node-that-does-not-exist
  reason: "hack/run.sh: is the webhook answering?"
YAML
    )" || true
    [[ "${out}" == *"${expected}"* ]] && return 0
    kill -0 "${operator_pid}" 2>/dev/null || return 1
    if ((SECONDS >= deadline)); then
      say "the webhook did not answer within 30 s; the API server said: ${out}"
      return 1
    fi
    sleep 0.25
  done
}

mkdir -p "$(dirname "${log_file}")"
: >"${log_file}"
# The operator reads NMO_* from the environment; only the flags above should count.
while read -r name; do unset "${name}"; done < <(compgen -e | grep '^NMO_' || true)

operator_pid=""
tail_pid=""
registered=0
handed_off=0 # --background: the operator and its configuration outlive this script
# Whatever ends this script (a failed start, Ctrl-C, the operator exiting): the configuration
# goes first (failing closed while nothing answers would refuse every create), then the operator.
cleanup() {
  local status=$?
  trap '' INT TERM
  if ((!handed_off)); then
    ((registered)) && unregister_webhook
    if [[ -n "${operator_pid}" ]] && kill -0 "${operator_pid}" 2>/dev/null; then
      stop_pid "${operator_pid}"
    fi
    [[ -n "${operator_pid}" && "$(cat "${pid_file}" 2>/dev/null)" == "${operator_pid}" ]] &&
      rm -f "${pid_file}"
    # tail stops after the operator (--pid), having printed its last lines.
    [[ -n "${tail_pid}" ]] && wait "${tail_pid}" 2>/dev/null
  fi
  exit "${status}"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Its own session: Ctrl-C reaches this script only, which stops the operator in order.
setsid "${binary}" "${args[@]}" >"${log_file}" 2>&1 </dev/null &
operator_pid=$!
echo "${operator_pid}" >"${pid_file}"
if ((!background)); then
  say "log: ${log_file}"
  say "running: ${binary} ${args[*]}"
  tail -n +1 -s 0.2 -f --pid="${operator_pid}" "${log_file}" &
  tail_pid=$!
fi

started() {
  kill -0 "${operator_pid}" 2>/dev/null || {
    ((background)) && cat "${log_file}" >&2
    die "the operator exited at once (log ${log_file})"
  }
}
if ((webhook)); then
  for _ in $(seq 1 300); do
    started
    port_in_use "${WEBHOOK_PORT}" && break
    sleep 0.1
  done
  port_in_use "${WEBHOOK_PORT}" || die "the webhook does not listen on 127.0.0.1:${WEBHOOK_PORT} after 30 s (log ${log_file})"
  registered=1
  register_webhook
  say "registered ValidatingWebhookConfiguration ${webhook_name} -> ${webhook_url}"
  if ! wait_for_webhook; then
    started
    die "the API server does not reach the webhook (log ${log_file})"
  fi
  say "webhook ready: a NodeMaintenance for node-that-does-not-exist is denied"
else
  for _ in $(seq 1 50); do
    started
    grep -q 'starting' "${log_file}" && break
    sleep 0.1
  done
  say "the admission webhook is off (--webhook-port=0): nothing registered"
fi

if ((background)); then
  handed_off=1
  say "operator running in the background, pid ${operator_pid}, log ${log_file}"
  say "stop it (and remove the webhook configuration) with: hack/run.sh --stop"
  echo "${operator_pid}"
  exit 0
fi

say "stop with Ctrl-C (the webhook configuration is removed, the operator stops cleanly; the"
say "cluster keeps running: make cluster-down)"
stop_requested=0
on_stop_signal() {
  ((stop_requested)) && return 0
  stop_requested=1
  say "stopping: removing the webhook configuration, then SIGTERM to the operator"
  ((registered)) && unregister_webhook
  registered=0
  kill -TERM "${operator_pid}" 2>/dev/null || true
}
trap on_stop_signal INT TERM
# `wait` returns early when a trapped signal arrives; wait again until the operator has exited.
while kill -0 "${operator_pid}" 2>/dev/null; do wait "${operator_pid}" || true; done
status=0
wait "${operator_pid}" || status=$?
((stop_requested)) || say "the operator exited by itself (status ${status})"
exit "${status}"
