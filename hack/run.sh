#!/usr/bin/env bash
# `make run`: runs the operator on this machine against the local cluster, as its own
# ServiceAccount (not as cluster admin), so a missing RBAC permission in deploy/rbac shows up
# here exactly as it would in a real cluster.
#
#   hack/run.sh [-- operator flags...]     foreground; Ctrl-C stops it cleanly
#   hack/run.sh --background [-- flags...] starts it in the background and prints its PID
#   options: --log-file PATH (default .cluster/logs/operator.log, truncated at start)
#            --no-build      (use build/bin/node-maintenance-operator as it is)
#
# Steps: brings the local cluster up if it is not running, builds the operator, applies
# deploy/crd, deploy/namespaces and deploy/rbac, writes .cluster/operator.kubeconfig (same
# server and CA as admin.kubeconfig, user = a 24 h token of the ServiceAccount
# node-maintenance-operator-system/node-maintenance-operator-controller-manager) and starts
# the operator with --log-format text. Everything it logs goes to the log file as well.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"
# shellcheck source=hack/testenv-lib.sh
source "${root}/hack/testenv-lib.sh"

background=0
build=1
dir="$(cluster_dir)"
log_file="${dir}/logs/operator.log"
while (($# > 0)); do
  case "$1" in
    --background) background=1 ;;
    --no-build) build=0 ;;
    --log-file)
      [[ $# -ge 2 ]] || die "--log-file needs a path"
      log_file="$2"
      shift
      ;;
    --) shift; break ;;
    *) die "unknown option $1 (expected --background, --no-build, --log-file PATH, -- operator flags)" ;;
  esac
  shift
done
operator_args=("$@")

say() { printf '[run %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

namespace=node-maintenance-operator-system
service_account=node-maintenance-operator-controller-manager
binary="${root}/build/bin/node-maintenance-operator"

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

# --- CRD, namespaces, RBAC (as admin) ---------------------------------------------------
say "installing the CRD, namespaces and RBAC (deploy/crd, deploy/namespaces, deploy/rbac)"
apply() { # apply <kustomization dir>: quiet unless something is wrong
  local err
  err="$(kubectl apply -k "$1" 2>&1 >/dev/null)" || { echo "${err}" >&2; die "kubectl apply -k $1 failed"; }
  # Objects created earlier by `kubectl create` (e.g. by a test) draw a harmless warning.
  grep -v 'missing the kubectl.kubernetes.io/last-applied-configuration' <<<"${err}" | grep . >&2 || true
}
apply deploy/crd
kubectl wait --for=condition=Established --timeout=60s \
  crd/nodemaintenances.nodemaintenance.medik8s.io >/dev/null
apply deploy/namespaces
apply deploy/rbac

# --- a kubeconfig for the ServiceAccount ------------------------------------------------
operator_kubeconfig="${dir}/operator.kubeconfig"
server="$(kubectl config view --raw -o jsonpath='{.clusters[0].cluster.server}')"
ca_data="$(kubectl config view --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')"
token="$(kubectl create token "${service_account}" -n "${namespace}" --duration=24h)"
(umask 077 && cat >"${operator_kubeconfig}") <<EOF
# Written by hack/run.sh: the operator's ServiceAccount, for running it outside the cluster.
apiVersion: v1
kind: Config
clusters:
  - name: local
    cluster:
      server: ${server}
      certificate-authority-data: ${ca_data}
users:
  - name: ${service_account}
    user:
      token: ${token}
contexts:
  - name: operator
    context:
      cluster: local
      user: ${service_account}
      namespace: ${namespace}
current-context: operator
EOF
say "identity: system:serviceaccount:${namespace}:${service_account} (${operator_kubeconfig})"

# --- run --------------------------------------------------------------------------------
# The operator's own flags that this binary knows already (newer flags are passed when present).
help="$("${binary}" --help 2>&1 || true)"
args=(--kubeconfig="${operator_kubeconfig}" --log-format=text)
# shellcheck source=/dev/null
source "${dir}/ports.env"
if grep -q -- --metrics-bind-address <<<"${help}"; then
  args+=(--metrics-bind-address="127.0.0.1:${METRICS_PORT}")
  grep -q -- --metrics-secure <<<"${help}" && args+=(--metrics-secure=false)
fi
grep -q -- --health-probe-bind-address <<<"${help}" &&
  args+=(--health-probe-bind-address="127.0.0.1:${HEALTH_PORT}")
# The cluster's spare webhook port, so two checkouts never both take 9443.
grep -q -- --webhook-port <<<"${help}" && args+=(--webhook-port="${WEBHOOK_PORT}")
args+=("${operator_args[@]}")

mkdir -p "$(dirname "${log_file}")"
: >"${log_file}"
# The operator reads NMO_* from the environment; only the flags above should count.
while read -r name; do unset "${name}"; done < <(compgen -e | grep '^NMO_' || true)

if ((background)); then
  setsid "${binary}" "${args[@]}" >"${log_file}" 2>&1 </dev/null &
  pid=$!
  for _ in $(seq 1 50); do
    kill -0 "${pid}" 2>/dev/null || { cat "${log_file}" >&2; die "the operator exited at once"; }
    grep -q 'starting' "${log_file}" && break
    sleep 0.1
  done
  say "operator running in the background, pid ${pid}, log ${log_file}"
  echo "${pid}"
  exit 0
fi

say "log: ${log_file}"
say "running: ${binary} ${args[*]}"
say "stop with Ctrl-C (the operator stops cleanly; the cluster keeps running: make cluster-down)"
# tee ignores Ctrl-C so it still writes the operator's last lines.
"${binary}" "${args[@]}" 2>&1 | (trap '' INT TERM; exec tee -a "${log_file}")
