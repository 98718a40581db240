#!/usr/bin/env bash
# Installs what the operator needs to run against the local cluster as its own ServiceAccount,
# and writes a kubeconfig for that ServiceAccount; prints the kubeconfig's path on stdout.
#
#   hack/operator-kubeconfig.sh [--output PATH] [--duration 24h] [--service-account NAME]
#
# As cluster admin (.cluster/admin.kubeconfig): applies deploy/crd (deploy/before-1.31/crd for
# KUBE_VERSION=1.27; waits until the CRD is Established), deploy/namespaces, the namespace
# medik8s-leases when missing, and deploy/rbac. Then writes PATH (default
# .cluster/operator.kubeconfig, mode 600, replaced atomically): the admin kubeconfig's server and
# CA, user = a token of node-maintenance-operator-system/node-maintenance-operator-controller-manager
# from `kubectl create token` (--service-account: another ServiceAccount of that namespace, which
# must exist, e.g. one a test binds to upstream NMO's roles). A process using it has exactly the permissions deploy/rbac grants,
# so a missing rule shows up as Forbidden (403) as it would in a real cluster. Used by hack/run.sh
# (make run, make demo) and hack/test.sh (exported as NMO_OPERATOR_KUBECONFIG for the e2e tests).
# The cluster must be up (make cluster-up).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"
# shellcheck source=hack/testenv-lib.sh
source "${root}/hack/testenv-lib.sh"

dir="$(cluster_dir)"
output="${dir}/operator.kubeconfig"
duration=24h
namespace=node-maintenance-operator-system
service_account=node-maintenance-operator-controller-manager
while (($# > 0)); do
  case "$1" in
    --output)
      [[ $# -ge 2 ]] || die "--output needs a path"
      output="$2"
      shift
      ;;
    --duration)
      [[ $# -ge 2 ]] || die "--duration needs a value (e.g. 24h)"
      duration="$2"
      shift
      ;;
    --service-account)
      [[ $# -ge 2 ]] || die "--service-account needs a name"
      service_account="$2"
      shift
      ;;
    *) die "unknown option $1 (expected --output PATH, --duration D, --service-account NAME)" ;;
  esac
  shift
done

[[ -f "${dir}/admin.kubeconfig" && -f "${dir}/bin-dir" ]] ||
  die "the local cluster is not up (no ${dir}/admin.kubeconfig); start it with make cluster-up"
export KUBECONFIG="${dir}/admin.kubeconfig"
PATH="$(cat "${dir}/bin-dir"):${PATH}"
export PATH

apply() { # apply <kustomization dir>: quiet unless something is wrong
  local err
  err="$(kubectl apply -k "$1" 2>&1 >/dev/null)" || { echo "${err}" >&2; die "kubectl apply -k $1 failed"; }
  # Objects created earlier by `kubectl create` (e.g. by a test) draw a harmless warning.
  grep -v 'missing the kubectl.kubernetes.io/last-applied-configuration' <<<"${err}" | grep . >&2 || true
}
crd="$(testenv_crd_kustomization)"
apply "${crd}"
kubectl wait --for=condition=Established --timeout=60s \
  crd/nodemaintenances.nodemaintenance.medik8s.io >/dev/null
apply deploy/namespaces
# The node Leases' namespace is shared and not in deploy/ (docs/operations.md, "Install"): made
# here when missing, as an admin would, so deploy/rbac's Role in it can be applied.
kubectl get namespace medik8s-leases >/dev/null 2>&1 || kubectl create namespace medik8s-leases >/dev/null
apply deploy/rbac

server="$(kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.server}')"
ca_data="$(kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')"
[[ -n "${server}" && -n "${ca_data}" ]] || die "cannot read the server and CA from ${KUBECONFIG}"
token="$(kubectl create token "${service_account}" -n "${namespace}" --duration="${duration}")"

mkdir -p "$(dirname "${output}")"
tmp="$(mktemp "${output}.XXXXXX")"
(umask 077 && cat >"${tmp}") <<YAML
# Written by hack/operator-kubeconfig.sh: the operator's ServiceAccount
# (system:serviceaccount:${namespace}:${service_account}), token valid for ${duration}.
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
YAML
chmod 600 "${tmp}"
mv -f "${tmp}" "${output}"
echo "${output}"
