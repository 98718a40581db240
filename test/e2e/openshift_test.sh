#!/usr/bin/env bash
# e2e.openshift: the OpenShift overlay (deploy/openshift) and the NetworkPolicy component
# (deploy/network-policy) against the local cluster (docs/operations.md, "OpenShift",
# "NetworkPolicy"). The cluster is plain Kubernetes: what only OpenShift does (the SCC that
# assigns a UID, the service CA writing the Secret and the caBundle) is checked as what the
# overlay asks of it.
#
#   1. `kubectl kustomize deploy/openshift` builds; the operator's objects are in
#      openshift-workload-availability (the node-lease and Event Roles stay in medik8s-leases and
#      default) and no Namespace object is rendered (both namespaces are shared, docs/operations.md
#      "Uninstall"), every binding names the ServiceAccount there, the pods set runAsNonRoot and no
#      runAsUser/runAsGroup, the webhook Service asks the service CA for the Secret the
#      Deployment mounts, the ValidatingWebhookConfiguration asks for the caBundle and calls the
#      Service in its new namespace, and cert-manager's annotation is gone.
#   2. A server-side dry run of all of it passes, into openshift-workload-availability as another
#      medik8s operator leaves it: created for the test first when missing, labelled
#      pod-security.kubernetes.io/enforce=privileged as Self Node Remediation's agents need it,
#      with a ConfigMap of its own standing for the other operators' objects.
#   3. Pod Security "restricted", enforcing: in a scratch namespace labelled
#      pod-security.kubernetes.io/enforce=restricted, a server-side dry-run create of a Pod with
#      the Deployment's pod spec is accepted (PodSecurity admission judges dry-run creates), and
#      the same Pod without runAsNonRoot is refused, naming it.
#   4. deploy/network-policy on top of deploy/openshift and of deploy/default: the policy is in
#      the Deployment's namespace with its recommended labels, selects exactly the manager's
#      pods, names only ports the manager container has, allows the metrics port only from
#      namespaces labelled nodemaintenance.medik8s.io/scrape-metrics=true; server-side dry run.
#   5. Install and uninstall for real (`kubectl apply`, then `kubectl delete` of the rendered
#      overlay, as `oc apply -k` / `oc delete -k`): the namespace keeps its labels during the
#      install, and after the uninstall it is still there, Active, with the same labels and the
#      foreign ConfigMap, while the overlay's own objects (Deployment, ClusterRoles, CRD) are gone.
# Cleanup (trap): the scratch namespace, openshift-workload-availability if the test made it (else
# the foreign ConfigMap), the webhook configuration, the manager pods; after 5 the CRD,
# namespaces, RBAC and the e2e operator kubeconfig are put back (hack/operator-kubeconfig.sh).
#
# Takes the cluster's shared lock when run on its own:
#   flock /tmp/nmo-cluster.lock bash test/e2e/openshift_test.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "${root}"
# shellcheck source=hack/testenv-lib.sh
source "${root}/hack/testenv-lib.sh"

dir="$(cluster_dir)"
[[ -f "${dir}/admin.kubeconfig" && -f "${dir}/bin-dir" ]] ||
  die "the local cluster is not up (no ${dir}/admin.kubeconfig); start it with make cluster-up"
export KUBECONFIG="${KUBECONFIG:-${dir}/admin.kubeconfig}"
PATH="$(cat "${dir}/bin-dir"):${PATH}"
export PATH

work="$(mktemp -d)"
checks_name=openshift-test
# shellcheck source=test/e2e/support/checks.sh
source "${root}/test/e2e/support/checks.sh"
ns=openshift-workload-availability
scratch="nmo-psa-$(openssl rand -hex 3)"
made_ns=0
installed=0
foreign="snr-stand-in-$(openssl rand -hex 3)"
kapply() { kubectl apply --server-side --force-conflicts "$@"; }
no_manager_pods() {
  [[ -z "$(kubectl get pods -n "${ns}" -l app.kubernetes.io/component=manager -o name 2>/dev/null)" ]]
}

cleanup() {
  local status=$?
  set +e
  trap - EXIT INT TERM
  kubectl delete namespace "${scratch}" --ignore-not-found --wait=false >/dev/null 2>&1
  if ((installed)); then
    kubectl delete validatingwebhookconfiguration nodemaintenance-validation.medik8s.io --ignore-not-found >/dev/null 2>&1
    kubectl delete -f "${work}/openshift.yaml" --ignore-not-found --wait=false >/dev/null 2>&1
    wait_until 90 no_manager_pods || { say "FAIL: manager pods still in ${ns} after 90 s"; status=1; }
    # The overlay's ClusterRoles, bindings and CRD were deploy/default's too: the tests that
    # follow run the operator as its ServiceAccount.
    if ! hack/operator-kubeconfig.sh ${NMO_OPERATOR_KUBECONFIG:+--output "${NMO_OPERATOR_KUBECONFIG}"} >/dev/null; then
      say "FAIL: could not put the CRD, namespaces, RBAC and the operator kubeconfig back"
      status=1
    fi
  fi
  # Waited for: the next run (or test) would find it Terminating, where nothing can be created.
  if ((made_ns)); then
    kubectl delete namespace "${ns}" --ignore-not-found --timeout=90s >/dev/null 2>&1
  else
    kubectl delete configmap -n "${ns}" "${foreign}" --ignore-not-found >/dev/null 2>&1
  fi
  rm -rf "${work}"
  say "openshift: ${passed} passed, ${failed} failed"
  ((failed == 0)) || status=1
  exit "${status}"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
started=${SECONDS}

# render <kustomization dir> <name>: ${work}/<name>.yaml and, as one JSON List, <name>.json.
render() {
  kubectl kustomize "$1" >"${work}/$2.yaml" &&
    kubectl create --dry-run=client --validate=false -o json -f "${work}/$2.yaml" | jq -s '{items: .}' >"${work}/$2.json"
}

# overlay <dir> <base> [component...]: a kustomization of deploy/<base> with those Components.
overlay() {
  local out="$1" base="$2" c
  shift 2
  mkdir -p "${out}"
  {
    printf 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - %s\ncomponents:\n' \
      "$(realpath --relative-to="${out}" "${root}/deploy/${base}")"
    for c in "$@"; do printf '  - %s\n' "$(realpath --relative-to="${out}" "${root}/deploy/${c}")"; done
  } >"${out}/kustomization.yaml"
}
# Before 1.31 (KUBE_VERSION=1.27: OpenShift 4.14 to 4.17) the overlay docs/operations.md gives for
# those versions: deploy/openshift with the Component before-1.31/component.
openshift=deploy/openshift
old=()
if (($(testenv_minor) < 31)); then
  old=(before-1.31/component)
  overlay "${work}/openshift-old" openshift "${old[@]}"
  openshift="${work}/openshift-old"
fi

# --- 1. the overlay ---------------------------------------------------------------------
check "kubectl kustomize ${openshift#"${work}/"} builds" render "${openshift}" openshift
o="${work}/openshift.json"
in_namespace() {
  jq -r '.items[] | select(.metadata.namespace != null) | "\(.metadata.namespace) \(.kind)/\(.metadata.name)"' "${o}" |
    LC_ALL=C sort >"${work}/placement"
  cat "${work}/placement"
  # Everything namespaced is in ${ns}, except the Roles of the node Leases and of Events.
  ! grep -v -E "^(${ns} |medik8s-leases (Role|RoleBinding)/node-maintenance-operator-node-lease-|default (Role|RoleBinding)/node-maintenance-operator-event-)" "${work}/placement" &&
    jq -e '[.items[] | select(.kind == "Namespace") | .metadata.name] == []' "${o}"
}
check "the operator's objects are in ${ns}; the node-lease and Event Roles stay in medik8s-leases and default; no Namespace object" in_namespace
check "every RoleBinding and ClusterRoleBinding names the ServiceAccount in ${ns}" \
  jq -e --arg ns "${ns}" '[.items[] | select(.kind | test("RoleBinding$")) | .subjects[]] |
    length == 5 and all(.kind == "ServiceAccount" and .namespace == $ns)' "${o}"
deployment='.items[] | select(.kind == "Deployment")'
check "the pods run as non-root with no fixed runAsUser/runAsGroup (restricted-v2 assigns the UID)" \
  jq -e "${deployment} | .spec.template.spec |
    .securityContext.runAsNonRoot == true and ([.securityContext, .containers[].securityContext] |
    all(has(\"runAsUser\") or has(\"runAsGroup\") | not))" "${o}"
service_ca_wired() {
  jq -e "(${deployment} | .spec.template.spec.volumes[] | select(.name == \"webhook-cert\") | .secret.secretName) as \$secret |
    (.items[] | select(.kind == \"Service\" and .metadata.name == \"node-maintenance-operator-webhook-service\") |
      .metadata.annotations[\"service.beta.openshift.io/serving-cert-secret-name\"]) == \$secret and \$secret != null" "${o}"
}
check "the webhook Service asks the service CA for the Secret the Deployment mounts" service_ca_wired
check "the ValidatingWebhookConfiguration asks for the caBundle, calls the Service in ${ns}, has no cert-manager annotation" \
  jq -e --arg ns "${ns}" '.items[] | select(.kind == "ValidatingWebhookConfiguration") |
    .metadata.annotations == {"service.beta.openshift.io/inject-cabundle": "true"} and
    .webhooks[0].clientConfig.service.namespace == $ns' "${o}"

# --- 2. server-side dry run -------------------------------------------------------------
# A namespace still being deleted (an earlier run's) accepts nothing: wait until it is gone.
terminating() { [[ "$(kubectl get namespace "${ns}" -o jsonpath='{.status.phase}' 2>/dev/null)" == Terminating ]]; }
not_terminating() { ! terminating; }
wait_until 90 not_terminating || die "namespace ${ns} is still Terminating after 90 s"
if ! kubectl get namespace "${ns}" >/dev/null 2>&1; then
  kubectl create -f - >/dev/null <<EOF
apiVersion: v1
kind: Namespace
metadata:
  name: ${ns}
  labels: {pod-security.kubernetes.io/enforce: privileged}
EOF
  made_ns=1
fi
kubectl create configmap -n "${ns}" "${foreign}" --from-literal=owner=self-node-remediation >/dev/null
kubectl get namespace medik8s-leases >/dev/null 2>&1 || kubectl create namespace medik8s-leases >/dev/null
ns_labels() { kubectl get namespace "${ns}" -o jsonpath='{.metadata.labels}'; }
labels_before="$(ns_labels)"
check "kubectl apply --server-side --dry-run=server of deploy/openshift ($(jq '.items | length' "${o}") objects)" \
  kapply --dry-run=server -f "${work}/openshift.yaml"

# --- 3. Pod Security "restricted" -------------------------------------------------------
kubectl create namespace "${scratch}" >/dev/null
kubectl label namespace "${scratch}" pod-security.kubernetes.io/enforce=restricted \
  pod-security.kubernetes.io/enforce-version=latest >/dev/null
# The ServiceAccount admission plugin refuses a pod whose account does not exist.
kubectl create serviceaccount -n "${scratch}" "$(jq -r "${deployment} | .spec.template.spec.serviceAccountName" "${o}")" >/dev/null
# pod <jq filter on the pod>: the Deployment's pod template as a Pod in the scratch namespace.
pod() {
  jq --arg ns "${scratch}" "${deployment} | {apiVersion: \"v1\", kind: \"Pod\",
    metadata: {name: \"manager-template\", namespace: \$ns, labels: .spec.template.metadata.labels},
    spec: .spec.template.spec} | $1" "${o}"
}
pod . >"${work}/pod.json"
check "restricted (enforcing): a dry-run create of a Pod with the Deployment's pod spec is accepted" \
  kubectl create --dry-run=server -f "${work}/pod.json"
pod 'del(.spec.securityContext.runAsNonRoot)' >"${work}/pod-root.json"
refused_without_non_root() {
  ! kubectl create --dry-run=server -f "${work}/pod-root.json" >"${work}/refused.out" 2>&1 || return 1
  cat "${work}/refused.out"
  grep -q 'violates PodSecurity "restricted' "${work}/refused.out" && grep -q runAsNonRoot "${work}/refused.out"
}
check "restricted (enforcing): the same Pod without runAsNonRoot is refused, naming runAsNonRoot" refused_without_non_root

# --- 4. the NetworkPolicy component -----------------------------------------------------
for base in openshift default; do
  overlay "${work}/np-${base}" "${base}" network-policy "${old[@]}"
  check "deploy/${base} with the Component deploy/network-policy builds" render "${work}/np-${base}" "np-${base}"
  n="${work}/np-${base}.json"
  policy_fits() {
    jq -e --arg version "$(project_version)" "(${deployment}) as \$d |
      (.items[] | select(.kind == \"NetworkPolicy\")) as \$p |
      (\$d.spec.template.spec.containers[] | select(.name == \"manager\") | [.ports[].name]) as \$ports |
      \$p.metadata.namespace == \$d.metadata.namespace and
      \$p.metadata.labels[\"app.kubernetes.io/version\"] == \$version and
      \$p.metadata.labels[\"app.kubernetes.io/instance\"] == \$d.metadata.labels[\"app.kubernetes.io/instance\"] and
      \$p.spec.podSelector.matchLabels == \$d.spec.selector.matchLabels and
      ([\$p.spec.ingress[].ports[].port] | all(. as \$x | \$ports | index(\$x))) and
      ([\$p.spec.ingress[] | select(.ports | any(.port == \"https\"))] | length == 1 and
        .[0].from == [{namespaceSelector: {matchLabels: {\"nodemaintenance.medik8s.io/scrape-metrics\": \"true\"}}}]) and
      \$p.spec.policyTypes == [\"Ingress\", \"Egress\"]" "${n}"
  }
  check "deploy/${base}: the policy is in the Deployment's namespace, selects the manager's pods, names only its ports; metrics only from labelled namespaces" policy_fits
  jq '.items[] | select(.kind == "NetworkPolicy")' "${n}" >"${work}/np-${base}-policy.json"
  check "deploy/${base}: server-side dry run of the NetworkPolicy" kapply --dry-run=server -f "${work}/np-${base}-policy.json"
done

# --- 5. install and uninstall into the existing namespace ---------------------------------
# As in deploy_test.sh: the uninstall deletes the CRDs, which a leftover maintenance's finalizer
# would hold up with no operator running.
leftovers="$(kubectl get maintenanceplans,nodemaintenances -o name 2>/dev/null || true)"
if [[ -n "${leftovers}" ]]; then
  say "SKIP the install and uninstall: the cluster holds ${leftovers//$'\n'/ }"
  ((failed == 0))
  exit
fi
say "install: kubectl apply of ${openshift#"${work}/"}, into the existing ${ns}"
installed=1
check "kubectl apply --server-side of ${openshift#"${work}/"}" kapply -f "${work}/openshift.yaml"
# Nothing answers behind the webhook's Service here (failurePolicy Fail): not left registered.
kubectl delete validatingwebhookconfiguration nodemaintenance-validation.medik8s.io --ignore-not-found >/dev/null
check "the install left the labels of ${ns} as they were (${labels_before})" test "$(ns_labels)" == "${labels_before}"
check "kubectl delete of ${openshift#"${work}/"} (the documented uninstall)" \
  kubectl delete -f "${work}/openshift.yaml" --ignore-not-found --wait --timeout=180s
check "the manager pods are gone from ${ns}" wait_until 90 no_manager_pods
overlay_gone() {
  ! kubectl get deployment -n "${ns}" node-maintenance-operator-controller-manager >/dev/null 2>&1 &&
    ! kubectl get clusterrole node-maintenance-operator-manager-role >/dev/null 2>&1 &&
    ! kubectl get crd nodemaintenances.nodemaintenance.medik8s.io >/dev/null 2>&1
}
check "the uninstall removed the overlay's own objects (Deployment, ClusterRoles, CRD)" overlay_gone
namespace_kept() {
  kubectl get namespace "${ns}" -o jsonpath='{.status.phase} {.metadata.labels}{"\n"}' &&
    [[ "$(kubectl get namespace "${ns}" -o jsonpath='{.status.phase}')" == Active ]] &&
    [[ "$(ns_labels)" == "${labels_before}" ]] &&
    kubectl get configmap -n "${ns}" "${foreign}" >/dev/null
}
check "${ns} is still there, Active, with its labels and the other operators' objects" namespace_kept

say "took $((SECONDS - started)) s"
((failed == 0))
