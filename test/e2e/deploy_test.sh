#!/usr/bin/env bash
# e2e.deploy: the install manifests of deploy/ against the local cluster (docs/design.md §9).
#
#   1. `kubectl apply --server-side --dry-run=server -k deploy/default` (deploy/before-1.31/default
#      on a cluster before 1.31), then for real; then
#      deploy/webhook/cert-manager and deploy/prometheus after installing cert-manager's and the
#      Prometheus Operator's CRDs, taken from their Go modules (versions pinned below).
#   2. The Deployment's two pods are created and run (as kwok fakes), with the metrics and
#      health ports and probes; the metrics Service has both as ready endpoints on 8443.
#   3. `kubectl auth can-i --list` for the operator's ServiceAccount, per namespace, equals the
#      listings in docs/rbac.md; it cannot update leases in kube-node-lease or kube-system, nor
#      delete pods, and no rule is a wildcard.
#   4. The alerts: every runbook_url names a heading of docs/operations.md, every metric they use
#      is documented there, and (when promtool is installed: Debian package prometheus) the rule
#      groups pass `promtool check rules` and the unit tests of deploy_alerts_test.yaml.
#   5. The recommended labels (docs/operations.md, "Labels"): every object deploy/default renders
#      carries app.kubernetes.io/name, instance, version (CMakeLists.txt's), component, part-of
#      and managed-by, and so do the manager's pods; the Deployment's and the Services' selectors
#      are still exactly name and component=manager (a Deployment's selector cannot change).
#   6. The manager's PodDisruptionBudget (docs/operations.md, "Availability of the operator"):
#      it covers the two pods and, both Ready, allows one disruption; scaled to one replica it
#      allows none, and an eviction of that replica is refused with the API server's PDB message.
#   7. Shared namespaces (docs/operations.md, "Uninstall"): before the install, the node Leases'
#      namespace medik8s-leases exists (made here as an admin would, if missing) with a foreign
#      Lease held by "NodeHealthCheck-x"; deploy/default renders no Namespace medik8s-leases; the
#      install leaves its labels alone, and `kubectl delete -k` of it (the documented uninstall)
#      leaves the namespace, its labels and the foreign Lease as they were, while the
#      operator's own namespace, CRD and ClusterRoles are gone.
#   8. Cleanup, also on failure (trap): the ValidatingWebhookConfiguration (failurePolicy Fail
#      with no real endpoint would refuse every NodeMaintenance create; a configuration that was
#      there before, e.g. make run's, is put back), the Deployment (its fake pods would count in
#      other tests' drains; waits until they are gone), the Services, the cert-manager and
#      monitoring objects and the CRDs this test installed, the foreign Lease. After the
#      uninstall of 7 the CRD, namespaces, RBAC and the e2e operator kubeconfig are put back
#      (hack/operator-kubeconfig.sh) for the tests that follow.
#
# Takes the cluster's shared lock when run on its own:
#   flock /tmp/nmo-cluster.lock bash test/e2e/deploy_test.sh
# (ctest runs it under RESOURCE_LOCK cluster, like every e2e test.)
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

ns=node-maintenance-operator-system
sa=node-maintenance-operator-controller-manager
as_sa=(--as="system:serviceaccount:${ns}:${sa}")
deployment=node-maintenance-operator-controller-manager
webhook_config=nodemaintenance-validation.medik8s.io
metrics_service=node-maintenance-operator-controller-manager-metrics-service

work="$(mktemp -d)"
checks_name=deploy-test
# shellcheck source=test/e2e/support/checks.sh
source "${root}/test/e2e/support/checks.sh"
# shellcheck source=test/e2e/support/foreign_crds.sh
source "${root}/test/e2e/support/foreign_crds.sh"
# kapply <args...>: server-side apply. --force-conflicts: hack/run.sh and the e2e fixtures apply
# the same objects client-side; this test takes the fields over rather than failing on them.
kapply() { kubectl apply --server-side --force-conflicts "$@"; }

# --- cleanup (trap) ---------------------------------------------------------------------
# The webhook configuration present before this test (make run's points at 127.0.0.1), if any.
saved_webhook="${work}/webhook-before.json"
if kubectl get validatingwebhookconfiguration "${webhook_config}" -o json >"${saved_webhook}" 2>/dev/null; then
  say "a ValidatingWebhookConfiguration ${webhook_config} exists already; it is put back afterwards"
else
  rm -f "${saved_webhook}"
fi
no_manager_pods() {
  [[ -z "$(kubectl get pods -n "${ns}" -l app.kubernetes.io/component=manager -o name)" ]]
}
foreign_lease="node-deploy-test-$(openssl rand -hex 3)"
uninstalled=0
cleanup() {
  local status=$?
  set +e
  trap - EXIT INT TERM
  say "cleanup"
  kubectl delete lease -n medik8s-leases "${foreign_lease}" --ignore-not-found >/dev/null
  # The configuration first: failing closed while nothing answers refuses every create.
  kubectl delete validatingwebhookconfiguration "${webhook_config}" --ignore-not-found --wait=false >/dev/null
  if [[ -f "${saved_webhook}" ]]; then
    jq 'del(.metadata.resourceVersion, .metadata.uid, .metadata.creationTimestamp,
            .metadata.generation, .metadata.managedFields)' "${saved_webhook}" |
      kubectl create -f - >/dev/null && say "restored the earlier ${webhook_config}"
  fi
  kubectl delete deployment "${deployment}" -n "${ns}" --ignore-not-found --wait=false >/dev/null
  kubectl delete service -n "${ns}" --ignore-not-found node-maintenance-operator-webhook-service \
    "${metrics_service}" >/dev/null
  if kubectl get crd issuers.cert-manager.io >/dev/null 2>&1; then
    kubectl delete -k deploy/webhook/cert-manager --ignore-not-found >/dev/null
  fi
  if kubectl get crd prometheusrules.monitoring.coreos.com >/dev/null 2>&1; then
    kubectl delete -k deploy/prometheus --ignore-not-found >/dev/null
  fi
  if ((${#installed_crds[@]} > 0)); then
    kubectl delete crd "${installed_crds[@]}" --ignore-not-found >/dev/null
  fi
  # Fake pods on the cluster's nodes (hack/testenv/nodes.sh) would count in other tests' drains:
  # wait until they are gone.
  if ! wait_until 90 no_manager_pods; then
    say "FAIL: the manager pods are still there 90 s after the Deployment was deleted"
    status=1
  fi
  # The tests that follow run the operator as its ServiceAccount, which the uninstall removed.
  if ((uninstalled)) &&
    ! hack/operator-kubeconfig.sh ${NMO_OPERATOR_KUBECONFIG:+--output "${NMO_OPERATOR_KUBECONFIG}"} >/dev/null; then
    say "FAIL: could not put the CRD, namespaces, RBAC and the operator kubeconfig back"
    status=1
  fi
  rm -rf "${work}"
  say "deploy: ${passed} passed, ${failed} failed"
  ((failed == 0)) || status=1
  exit "${status}"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- 1. apply ---------------------------------------------------------------------------
# The shared node-lease namespace as another medik8s operator leaves it: there (made here as the
# install docs say, when missing), with a node Lease of Node Health Check's in it.
kubectl get namespace medik8s-leases >/dev/null 2>&1 || kubectl create namespace medik8s-leases >/dev/null
kubectl create -f - >/dev/null <<EOF
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: ${foreign_lease}, namespace: medik8s-leases}
spec: {holderIdentity: NodeHealthCheck-x, leaseDurationSeconds: 3600}
EOF
lease_labels() { kubectl get namespace medik8s-leases -o jsonpath='{.metadata.labels}'; }
leases_labels_before="$(lease_labels)"
# deploy/default, or on a cluster before 1.31 (KUBE_VERSION=1.27) deploy/before-1.31/default.
default="$(dirname "$(testenv_crd_kustomization)")/default"
say "server-side dry run of ${default}"
check "kubectl apply --server-side --dry-run=server -k ${default}" \
  kapply --dry-run=server -k "${default}"
kapply --dry-run=server -k "${default}" -o json 2>/dev/null >"${work}/dry-run.json" || true
say "applying ${default}"
check "kubectl apply --server-side -k ${default}" kapply -k "${default}"
check "the CRD is Established" \
  kubectl wait --for=condition=Established --timeout=60s crd/nodemaintenances.nodemaintenance.medik8s.io
applied_webhook() {
  [[ "$(kubectl get validatingwebhookconfiguration "${webhook_config}" \
    -o jsonpath='{.webhooks[0].clientConfig.service.name} {.webhooks[0].failurePolicy}')" == \
    "node-maintenance-operator-webhook-service Fail" ]]
}
check "the webhook configuration is the one of deploy/webhook (Service, failurePolicy Fail)" applied_webhook
# Nothing answers behind that Service here: remove it at once, not only at the end.
kubectl delete validatingwebhookconfiguration "${webhook_config}" --ignore-not-found >/dev/null

cm_dir=""
cm_dir="$(module_dir "${cert_manager_module}")"
if [[ -n "${cm_dir}" && -f "${cm_dir}/deploy/crds/cert-manager.io_certificates.yaml" ]]; then
  check "cert-manager CRDs (Issuer, Certificate from ${cert_manager_module}) installed" \
    install_crds "${cm_dir}/deploy/crds/cert-manager.io_issuers.yaml" \
    "${cm_dir}/deploy/crds/cert-manager.io_certificates.yaml"
  check "kubectl apply --server-side --dry-run=server -k deploy/webhook/cert-manager" \
    kapply --dry-run=server -k deploy/webhook/cert-manager
  check "kubectl apply --server-side -k deploy/webhook/cert-manager" kapply -k deploy/webhook/cert-manager
else
  say "SKIP deploy/webhook/cert-manager: cert-manager's CRDs are not obtainable (go mod download ${cert_manager_module} failed, or it has no deploy/crds)"
fi

po_dir=""
po_dir="$(module_dir "${prometheus_operator_module}")"
crd_dir="${po_dir}/example/prometheus-operator-crd"
if [[ -n "${po_dir}" && -f "${crd_dir}/monitoring.coreos.com_servicemonitors.yaml" ]]; then
  check "Prometheus Operator CRDs (ServiceMonitor, PrometheusRule from ${prometheus_operator_module}) installed" \
    install_crds "${crd_dir}/monitoring.coreos.com_servicemonitors.yaml" \
    "${crd_dir}/monitoring.coreos.com_prometheusrules.yaml"
  check "kubectl apply --server-side --dry-run=server -k deploy/prometheus" \
    kapply --dry-run=server -k deploy/prometheus
  check "kubectl apply --server-side -k deploy/prometheus" kapply -k deploy/prometheus
  monitor_matches_service() {
    [[ "$(kubectl get servicemonitor -n "${ns}" node-maintenance-operator-controller-manager-metrics-monitor \
      -o jsonpath='{.spec.selector.matchLabels.app\.kubernetes\.io/component} {.spec.endpoints[0].port}')" == "metrics https" ]] &&
      [[ "$(kubectl get service -n "${ns}" "${metrics_service}" \
        -o jsonpath='{.metadata.labels.app\.kubernetes\.io/component} {.spec.ports[0].name}')" == "metrics https" ]]
  }
  check "the ServiceMonitor selects the metrics Service by its labels and port" monitor_matches_service
else
  say "SKIP deploy/prometheus: the Prometheus Operator's CRDs are not obtainable (go mod download ${prometheus_operator_module} failed, or it has no example/prometheus-operator-crd)"
fi

# --- 2. the Deployment's pods -----------------------------------------------------------
two_pods_running() {
  [[ "$(kubectl get pods -n "${ns}" -l app.kubernetes.io/component=manager \
    -o jsonpath='{range .items[*]}{.status.phase} {.spec.nodeName}{"\n"}{end}' |
    awk '$1 == "Running" && $2 != ""' | wc -l)" -eq 2 ]]
}
check "the Deployment's 2 pods are created and Running (kwok fakes)" wait_until 90 two_pods_running
check "the Deployment reports 2 available replicas" \
  kubectl rollout status deployment/"${deployment}" -n "${ns}" --timeout=60s
manager() { # manager <jsonpath under the manager container>
  kubectl get deployment "${deployment}" -n "${ns}" \
    -o jsonpath="{.spec.template.spec.containers[?(@.name=='manager')]$1}"
}
ports_and_args() {
  local ports
  ports="$(kubectl get deployment "${deployment}" -n "${ns}" -o jsonpath="{range .spec.template.spec.containers[?(@.name=='manager')].ports[*]}{.name}={.containerPort} {end}")"
  echo "ports: ${ports}; args: $(manager .args)"
  [[ " ${ports}" == *" https=8443 "* && " ${ports}" == *" health=8081 "* ]] &&
    [[ "$(manager .args)" == *'"--metrics-bind-address=:8443"'* ]] &&
    [[ "$(manager .args)" == *'"--health-probe-bind-address=:8081"'* ]]
}
check "the manager listens on 8443 (https, --metrics-bind-address) and 8081 (health, --health-probe-bind-address)" \
  ports_and_args
probes() {
  [[ "$(manager .livenessProbe.httpGet.path) $(manager .livenessProbe.httpGet.port)" == "/healthz health" ]] &&
    [[ "$(manager .readinessProbe.httpGet.path) $(manager .readinessProbe.httpGet.port)" == "/readyz health" ]] &&
    [[ "$(manager .startupProbe.httpGet.path)" == /healthz ]]
}
check "startup and liveness probes GET /healthz, readiness GET /readyz, on port health" probes
metrics_endpoints_ready() {
  local slices=(endpointslices -n "${ns}" -l "kubernetes.io/service-name=${metrics_service}")
  [[ "$(kubectl get "${slices[@]}" -o jsonpath='{range .items[*]}{range .endpoints[*]}{.conditions.ready}{"\n"}{end}{end}' |
    grep -c '^true$')" -eq 2 ]] &&
    [[ "$(kubectl get "${slices[@]}" -o jsonpath='{.items[0].ports[0].name}={.items[0].ports[0].port}')" == https=8443 ]]
}
check "the metrics Service has both pods as ready endpoints on port 8443 (https)" \
  wait_until 60 metrics_endpoints_ready

# --- 3. RBAC ----------------------------------------------------------------------------
# docs/rbac.md documents the listing as the lines every namespace shows
# ("<!-- can-i-list common -->") plus each namespace's own ("<!-- can-i-list namespace=NS -->"),
# each in the ```text block after its marker; compared whitespace-normalised and sorted.
doc_block() {
  awk -v marker="<!-- can-i-list $1 -->" '
    $0 == marker {found = 1; next}
    found && /^```text$/ {inside = 1; next}
    inside && /^```$/ {exit}
    inside {print}' docs/rbac.md
}
# Without what built-in roles grant every authenticated user on some versions only, none of it
# ours: the discovery role's paths with a trailing slash (1.34 and 1.37, not 1.27), and reading
# ClusterTrustBundles (system:cluster-trust-bundle-discovery, from 1.37 on here).
normalise() {
  sed -E 's/[[:space:]]+/ /g; s/ $//; /^$/d; /^ ?\[\/(\.well-known\/openid-configuration|openid\/v1\/jwks)\/\] /d
    /^clustertrustbundles\.certificates\.k8s\.io \[\] \[\] \[get list watch\]$/d' |
    LC_ALL=C sort
}
for namespace in default medik8s-leases "${ns}" kube-node-lease kube-system; do
  { doc_block common && doc_block "namespace=${namespace}"; } | normalise >"${work}/documented"
  kubectl auth can-i --list "${as_sa[@]}" -n "${namespace}" | normalise >"${work}/actual"
  if ! grep -qxF "<!-- can-i-list namespace=${namespace} -->" docs/rbac.md; then
    fail "docs/rbac.md has no listing for namespace ${namespace} (<!-- can-i-list namespace=${namespace} -->)"
  elif diff -u "${work}/documented" "${work}/actual" >"${work}/diff"; then
    pass "kubectl auth can-i --list -n ${namespace} for the ServiceAccount equals docs/rbac.md"
  else
    fail "kubectl auth can-i --list -n ${namespace} differs from docs/rbac.md (- documented, + actual):"
    sed 's/^/    /' "${work}/diff" >&2
  fi
done
cannot() { # cannot <verb> <resource> [-n ns]: the ServiceAccount is denied
  local answer
  answer="$(kubectl auth can-i "$@" "${as_sa[@]}" 2>/dev/null)" || true
  [[ "${answer}" == no* ]]
}
for namespace in kube-node-lease kube-system default; do
  check "cannot update leases in ${namespace}" cannot update leases.coordination.k8s.io -n "${namespace}"
  check "cannot create leases in ${namespace}" cannot create leases.coordination.k8s.io -n "${namespace}"
done
check "cannot delete pods (any namespace)" cannot delete pods --all-namespaces
check "cannot create pods" cannot create pods --all-namespaces
check "cannot update nodes (only patch)" cannot update nodes
check "cannot delete nodes" cannot delete nodes
check "cannot delete namespaces (creates the shared lease namespace, never deletes one)" cannot delete namespaces
check "cannot read secrets" cannot get secrets --all-namespaces
check "cannot patch events outside default" cannot patch events -n kube-system
# No wildcard among the roles bound to the ServiceAccount (the built-in discovery roles every
# account has list non-resource URL patterns such as /api/*; they are not ours).
sa_rules() {
  kubectl get clusterroles,roles -A -l app.kubernetes.io/name=node-maintenance-operator -o json |
    jq -r '.items[] | select(.metadata.name | test("editor|viewer|reader") | not) | .rules[] |
      [(.apiGroups // [] | join(",")), (.resources // [] | join(",")), (.verbs | join(",")),
       (.nonResourceURLs // [] | join(","))] | join(" ")'
}
no_wildcard() { sa_rules >"${work}/rules" && ! grep -F '*' "${work}/rules"; }
no_pods_delete() { sa_rules >"${work}/rules" && ! grep -E '(^| )pods .*delete' "${work}/rules"; }
check "no wildcard in the operator's roles" no_wildcard
check "the operator's roles never grant pods delete" no_pods_delete

# --- 4. alerts --------------------------------------------------------------------------
# GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces to dashes.
heading_anchors() {
  sed -n 's/^#\{1,6\} \(.*\)$/\1/p' docs/operations.md | tr '[:upper:]' '[:lower:]' |
    sed -E 's/[^a-z0-9 _-]//g; s/ /-/g'
}
heading_anchors >"${work}/anchors"
mapfile -t alerts < <(sed -n 's/^ *- alert: //p' deploy/prometheus/alerts.yaml)
mapfile -t runbooks < <(sed -n 's/^ *runbook_url: //p' deploy/prometheus/alerts.yaml)
check "every alert (${#alerts[@]}) has a runbook_url" test "${#alerts[@]}" -eq "${#runbooks[@]}" -a "${#alerts[@]}" -gt 0
for url in "${runbooks[@]}"; do
  check "runbook ${url} is a section of docs/operations.md" \
    grep -qx -- "${url#docs/operations.md#}" "${work}/anchors"
done
mapfile -t metrics < <(grep -oE '\b(nodemaintenance|controller_runtime|leader_election|workqueue)_[a-z_]+' \
  deploy/prometheus/alerts.yaml | sort -u)
for metric in "${metrics[@]}"; do
  check "metric ${metric} used by an alert is documented in docs/operations.md" \
    grep -q -- "${metric}" docs/operations.md
done
if command -v promtool >/dev/null; then
  if kubectl get prometheusrule -n "${ns}" node-maintenance-operator-alerts >/dev/null 2>&1; then
    kubectl get prometheusrule -n "${ns}" node-maintenance-operator-alerts -o json | jq '.spec' >"${work}/rules-full.json"
  else # no CRDs: the groups straight from the file (JSON is YAML)
    kubectl create --dry-run=client -o json -f deploy/prometheus/alerts.yaml 2>/dev/null | jq '.spec' \
      >"${work}/rules-full.json" || true
  fi
  check "promtool check rules (the PrometheusRule's groups)" promtool check rules "${work}/rules-full.json"
  jq '.groups[].rules[].annotations |= {runbook_url}' "${work}/rules-full.json" >"${work}/rules.json"
  cp test/e2e/deploy_alerts_test.yaml "${work}/"
  promtool_test() { (cd "${work}" && promtool test rules deploy_alerts_test.yaml); }
  check "promtool test rules test/e2e/deploy_alerts_test.yaml" promtool_test
else
  say "SKIP promtool check/test rules: promtool is not installed (Debian package prometheus)"
fi

# --- 5. recommended labels ------------------------------------------------------------
recommended='["name", "instance", "version", "component", "part-of", "managed-by"] | map("app.kubernetes.io/" + .)'
# "<kind>/<name>" of each rendered object without one of them, or with another version.
without_labels() {
  jq -r --arg version "$(project_version)" "${recommended} as \$keys | .items[] |
    select((.metadata.labels // {}) as \$l | (\$keys | any(\$l[.] == null)) or \$l[\"app.kubernetes.io/version\"] != \$version) |
    \"\(.kind)/\(.metadata.name)\"" "${work}/dry-run.json"
}
every_object_labelled() {
  local missing
  missing="$(without_labels)"
  echo "objects ($(jq '.items | length' "${work}/dry-run.json")) without all six labels or with another version: ${missing:-none}"
  [[ -z "${missing}" ]] && (($(jq '.items | length' "${work}/dry-run.json") > 15))
}
check "every object of ${default} carries the six recommended labels, version $(project_version)" every_object_labelled
pods_labelled() {
  kubectl get pods -n "${ns}" -l app.kubernetes.io/component=manager -o json >"${work}/pods.json"
  jq -e --arg version "$(project_version)" '.items | length == 2 and all(.metadata.labels |
    .["app.kubernetes.io/instance"] == "node-maintenance-operator" and .["app.kubernetes.io/version"] == $version and
    .["app.kubernetes.io/part-of"] == "medik8s" and .["app.kubernetes.io/managed-by"] == "kustomize")' "${work}/pods.json"
}
check "the manager's pods carry the recommended labels too" pods_labelled
selectors_unchanged() {
  local want='{"app.kubernetes.io/component":"manager","app.kubernetes.io/name":"node-maintenance-operator"}'
  jq -e --argjson want "${want}" '[.items[] | select(.kind == "Deployment") | .spec.selector.matchLabels] +
    [.items[] | select(.kind == "Service") | .spec.selector] | length == 3 and all(. == $want)' "${work}/dry-run.json"
}
check "the Deployment's and the Services' selectors are still exactly name and component=manager" selectors_unchanged

# --- 6. the manager's PodDisruptionBudget ------------------------------------------------
pdb=node-maintenance-operator-controller-manager
pdb_state() {
  kubectl get pdb -n "${ns}" "${pdb}" \
    -o jsonpath='{.spec.minAvailable} {.status.expectedPods} {.status.currentHealthy} {.status.disruptionsAllowed}'
}
pdb_allows_one() { pdb_state && echo && [[ "$(pdb_state)" == "1 2 2 1" ]]; }
check "the PodDisruptionBudget ${pdb} (minAvailable 1) covers the 2 manager pods and allows one disruption" \
  wait_until 60 pdb_allows_one
# evict <pod>: the Eviction API, as a drain (ours or kubectl's) sends it.
evict() {
  kubectl create --raw "/api/v1/namespaces/${ns}/pods/$1/eviction" -f - <<EOF
{"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "$1", "namespace": "${ns}"}}
EOF
}
# Scaled to one replica, that one may not be evicted: minAvailable 1, where maxUnavailable 1 would
# let it go and take the webhook with it. (Two evictions in a row cannot show the budget here: kwok
# makes the first one's replacement Ready at once.)
kubectl scale deployment "${deployment}" -n "${ns}" --replicas=1 >/dev/null
pdb_allows_none() { pdb_state && echo && [[ "$(pdb_state)" == "1 1 1 0" ]]; }
check "scaled to one replica, the PodDisruptionBudget allows no disruption" wait_until 60 pdb_allows_none
last_pod="$(kubectl get pods -n "${ns}" -l app.kubernetes.io/component=manager -o json |
  jq -r '[.items[] | select(.metadata.deletionTimestamp == null) | .metadata.name][0] // "none"')"
last_refused() {
  local out
  ! out="$(evict "${last_pod}" 2>&1)" || return 1
  echo "${out}"
  [[ "${out}" == *"Cannot evict pod as it would violate the pod's disruption budget"* ]]
}
check "evicting the last replica ${last_pod} is refused: it would violate the pod's disruption budget" last_refused

# --- 7. shared namespaces: uninstall -------------------------------------------------------
no_shared_namespace() {
  jq -r '.items[] | select(.kind == "Namespace") | .metadata.name' "${work}/dry-run.json" |
    { ! grep -qx medik8s-leases; }
}
check "${default} renders no Namespace medik8s-leases (shared with NHC and SNR)" no_shared_namespace
check "the install left the labels of medik8s-leases as they were" test "$(lease_labels)" == "${leases_labels_before}"
# The documented uninstall deletes every MaintenancePlan and NodeMaintenance first, with the
# operator running; none runs here, so one left by another test would keep the CRD's deletion
# waiting on its finalizer.
leftovers="$(kubectl get maintenanceplans,nodemaintenances -o name 2>/dev/null || true)"
if [[ -n "${leftovers}" ]]; then
  say "SKIP the uninstall: the cluster holds ${leftovers//$'\n'/ }"
  ((failed == 0))
  exit
fi
say "uninstall: kubectl delete -k ${default} (docs/operations.md, \"Uninstall\")"
uninstalled=1
check "kubectl delete -k ${default}" kubectl delete -k "${default}" --ignore-not-found --wait --timeout=180s
operator_gone() {
  ! kubectl get namespace "${ns}" >/dev/null 2>&1 &&
    ! kubectl get crd nodemaintenances.nodemaintenance.medik8s.io >/dev/null 2>&1 &&
    ! kubectl get clusterrole node-maintenance-operator-manager-role >/dev/null 2>&1
}
check "the uninstall removed what the install added (namespace ${ns}, the CRD, the ClusterRoles)" operator_gone
no_steering_taint_left() {
  ! kubectl get nodes -o jsonpath='{range .items[*]}{.spec.taints[*].key}{"\n"}{end}' |
    grep -q 'nodemaintenance.medik8s.io/planned'
}
check "no node carries the plans' steering taint" no_steering_taint_left
shared_namespace_kept() {
  kubectl get namespace medik8s-leases -o jsonpath='{.status.phase} {.metadata.labels}{"\n"}' &&
    [[ "$(kubectl get namespace medik8s-leases -o jsonpath='{.status.phase}')" == Active ]] &&
    [[ "$(lease_labels)" == "${leases_labels_before}" ]]
}
check "medik8s-leases is still there, Active, with the labels it had" shared_namespace_kept
foreign_lease_kept() {
  [[ "$(kubectl get lease -n medik8s-leases "${foreign_lease}" -o jsonpath='{.spec.holderIdentity}')" == NodeHealthCheck-x ]]
}
check "the foreign Lease ${foreign_lease} (holder NodeHealthCheck-x) is still there" foreign_lease_kept

((failed == 0))

