#!/usr/bin/env bash
# e2e.olm_bundle: the OLM bundle of deploy/olm (docs/development.md, "The OLM bundle").
#
#   1. Regenerating it (hack/olm-bundle.sh into a scratch folder) gives exactly the committed
#      files: the bundle is deploy/'s RBAC, Deployment and webhook, not a hand-kept copy.
#   2. The Operator Framework's own validators (test/tools/olmcheck validate: the default bundle
#      validators, OperatorHub v2, capabilities, categories, good practices, deprecated APIs for
#      1.37, objects) find no error; their warnings are printed. A bundle broken on purpose (an
#      invalid minKubeVersion) is refused, so the check can fail.
#   3. The CSV says what it must: minKubeVersion 1.27.0, the suggested namespace, AllNamespaces
#      only, the project's version, the owned CRDs (every one deploy/ renders, each a file of the
#      bundle) with descriptors, the webhook definition on the manager's webhook port; its
#      permissions are exactly deploy/rbac's rules for the manager (ClusterRoles bound
#      cluster-wide, the Role in its own namespace), and the Deployment mounts no certificate
#      where OLM mounts its own; the manager's PodDisruptionBudget is a bundle object (a kind OLM
#      installs, into its install namespace) and other-namespaces.yaml holds Roles, no Namespace.
#   4. Against the local cluster, a server-side dry run of the ClusterServiceVersion itself
#      against OLM's own schema (this cluster has no OLM: OLM's ClusterServiceVersion CRD from
#      the Operator Framework's API module, olmcheck csv-crd, is installed for it; a CSV broken on
#      purpose is refused), and of what OLM would create from the bundle in a scratch namespace
#      (olmcheck objects: the CRDs, ServiceAccount, Roles, ClusterRoles and bindings, the
#      Deployment, the webhook Service and ValidatingWebhookConfiguration, the metrics Service and
#      user-facing ClusterRoles) and of other-namespaces.yaml. The CRDs are dry-run too, not
#      applied: the bundle's NodeMaintenance CRD lacks selectableFields (minKubeVersion 1.27), and
#      the shared cluster's tests use them.
# Cleanup (trap): the scratch namespace, and OLM's CSV CRD when this test installed it.
#
# Takes the cluster's shared lock when run on its own:
#   flock /tmp/nmo-cluster.lock bash test/e2e/olm_bundle_test.sh
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
checks_name=olm-bundle-test
# shellcheck source=test/e2e/support/checks.sh
source "${root}/test/e2e/support/checks.sh"
bundle=deploy/olm/bundle
csv="${bundle}/manifests/node-maintenance-operator.clusterserviceversion.yaml"
scratch="nmo-olm-$(openssl rand -hex 3)"
kapply() { kubectl apply --server-side --force-conflicts "$@"; }
csv_crd_installed=0

cleanup() {
  local status=$?
  set +e
  trap - EXIT INT TERM
  kubectl delete namespace "${scratch}" --ignore-not-found --wait=false >/dev/null 2>&1
  if ((csv_crd_installed)); then
    kubectl delete crd clusterserviceversions.operators.coreos.com --ignore-not-found >/dev/null 2>&1
  fi
  rm -rf "${work}"
  say "olm bundle: ${passed} passed, ${failed} failed"
  ((failed == 0)) || status=1
  exit "${status}"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

started=${SECONDS}
olmcheck="${NMO_OLMCHECK:-$(hack/go-tool-build.sh olmcheck)}"
say "olmcheck: ${olmcheck} ($((SECONDS - started)) s to build or find)"

# --- 1. regenerated == committed ------------------------------------------------------
regenerated() {
  hack/olm-bundle.sh --out "${work}/regen" &&
    diff -ru "${bundle}" "${work}/regen/bundle" &&
    diff -u deploy/olm/other-namespaces.yaml "${work}/regen/other-namespaces.yaml" &&
    diff -u deploy/olm/bundle.Containerfile "${work}/regen/bundle.Containerfile"
}
check "hack/olm-bundle.sh regenerates exactly the committed deploy/olm (else: run it and commit)" regenerated

# --- 2. the Operator Framework's validators -------------------------------------------
if "${olmcheck}" validate "${bundle}" >"${work}/validate.out" 2>&1; then
  pass "olmcheck validate ${bundle}: $(tail -n 1 "${work}/validate.out")"
else
  fail "olmcheck validate ${bundle}:"
  sed 's/^/    /' "${work}/validate.out" >&2
fi
grep '^WARN ' "${work}/validate.out" | sed 's/^/    /' >&2 || true
cp -r "${bundle}" "${work}/broken"
sed -i 's/^  minKubeVersion: 1.27.0$/  minKubeVersion: one-dot-twenty-seven/' \
  "${work}/broken/manifests/node-maintenance-operator.clusterserviceversion.yaml"
refuses_broken() {
  local rc=0
  "${olmcheck}" validate "${work}/broken" >"${work}/broken.out" 2>&1 || rc=$?
  cat "${work}/broken.out"
  ((rc == 1)) && grep -q '^ERROR .*MinKubeVersion' "${work}/broken.out"
}
check "olmcheck validate refuses a bundle with an invalid minKubeVersion (exit 1, an ERROR line naming it)" refuses_broken

# --- 3. what the CSV says -------------------------------------------------------------
"${olmcheck}" objects -namespace "${scratch}" "${bundle}" >"${work}/objects.json"
kubectl kustomize deploy/default >"${work}/default.yaml"
kubectl create --dry-run=client --validate=false -o json -f "${work}/default.yaml" | jq -s '{items: .}' >"${work}/default.json"
check "minKubeVersion is 1.27.0 (the oldest tested Kubernetes)" grep -qx '  minKubeVersion: 1.27.0' "${csv}"
check "version $(project_version) (CMakeLists.txt) and name node-maintenance-operator.v$(project_version)" \
  bash -c "grep -qx '  version: $(project_version)' '${csv}' && grep -qx '  name: node-maintenance-operator.v$(project_version)' '${csv}'"
check "suggested namespace node-maintenance-operator-system" \
  grep -qx '    operatorframework.io/suggested-namespace: node-maintenance-operator-system' "${csv}"
install_modes() {
  tr -d '\n ' <"${csv}" | grep -qF 'installModes:-supported:falsetype:OwnNamespace-supported:falsetype:SingleNamespace-supported:falsetype:MultiNamespace-supported:truetype:AllNamespaces'
}
check "install modes: AllNamespaces only" install_modes
check "owns nodemaintenances.nodemaintenance.medik8s.io v1beta1 with spec and status descriptors" \
  bash -c "grep -q '      name: nodemaintenances.nodemaintenance.medik8s.io' '${csv}' && grep -q 'specDescriptors:' '${csv}' &&
    grep -q 'urn:alm:descriptor:io.kubernetes.phase' '${csv}' && grep -q 'urn:alm:descriptor:io.kubernetes:Node' '${csv}'"
# Every CRD deploy/ renders is in the bundle (a file of manifests/, so in olmcheck objects) and
# owned by the CSV; olmcheck generate and the bundle validator refuse the converse.
owns_every_crd() {
  local names name ok=0
  names="$(jq -r '.items[] | select(.kind == "CustomResourceDefinition") | .metadata.name' "${work}/default.json" | LC_ALL=C sort)"
  [[ -n "${names}" ]] || { echo "deploy/default renders no CustomResourceDefinition"; return 1; }
  for name in ${names}; do
    if ! jq -e --arg n "${name}" 'any(.items[]; .kind == "CustomResourceDefinition" and .metadata.name == $n)' \
      "${work}/objects.json" >/dev/null; then
      echo "${name}: not in the bundle"
      ok=1
    fi
    if ! grep -qx "      name: ${name}" "${csv}"; then
      echo "${name}: not owned by the CSV"
      ok=1
    fi
  done
  echo "CRDs: ${names//$'\n'/ }"
  return "${ok}"
}
check "every CRD deploy/ renders is in the bundle and owned by the CSV" owns_every_crd
# rules <jq filter of one kind>: the rules of the objects it selects, in order.
rules_of() { jq -c "[.items[] | select($1) | .rules[]]" "$2"; }
cluster_rules_match() {
  [[ "$(rules_of '.kind == "ClusterRole" and (.metadata.name | endswith("cluster-permissions-0"))' "${work}/objects.json")" == \
    "$(rules_of '.kind == "ClusterRole" and (.metadata.name == "node-maintenance-operator-manager-role" or .metadata.name == "node-maintenance-operator-metrics-auth-role")' "${work}/default.json")" ]]
}
check "clusterPermissions are exactly deploy/rbac's manager-role and metrics-auth-role rules" cluster_rules_match
namespace_rules_match() {
  [[ "$(rules_of '.kind == "Role"' "${work}/objects.json")" == \
    "$(rules_of '.kind == "Role" and .metadata.name == "node-maintenance-operator-lease-role"' "${work}/default.json")" ]]
}
check "permissions are exactly deploy/rbac's lease-role rules (the operator's own namespace)" namespace_rules_match
other_namespaces() {
  kubectl create --dry-run=client --validate=false -o json -f deploy/olm/other-namespaces.yaml | jq -s -r '.[] | "\(.kind) \(.metadata.namespace // "-") \(.metadata.name)"' | LC_ALL=C sort >"${work}/others"
  cat "${work}/others"
  diff -u - "${work}/others" <<'EOF'
Role default node-maintenance-operator-event-role
Role medik8s-leases node-maintenance-operator-node-lease-role
RoleBinding default node-maintenance-operator-event-rolebinding
RoleBinding medik8s-leases node-maintenance-operator-node-lease-rolebinding
EOF
}
check "other-namespaces.yaml holds the Roles a CSV cannot (node Leases in medik8s-leases, Events in default), no Namespace" other_namespaces
pdb_in_bundle() {
  jq -e --arg ns "${scratch}" '(.items[] | select(.kind == "Deployment")) as $d |
    [.items[] | select(.kind == "PodDisruptionBudget")] | length == 1 and
    (.[0] | .metadata.namespace == $ns and .spec.minAvailable == 1 and
      (.spec.selector.matchLabels | to_entries | all(. as $e | $d.spec.template.metadata.labels[$e.key] == $e.value)))' \
    "${work}/objects.json"
}
check "the bundle carries the manager's PodDisruptionBudget (minAvailable 1, selecting its pods), installed in OLM's namespace" \
  pdb_in_bundle
no_certificate_volume() {
  jq -e '.items[] | select(.kind == "Deployment") | .spec.template.spec |
    ([.containers[].volumeMounts // [] | .[].mountPath] | index("/tmp/k8s-webhook-server/serving-certs") == null) and
    ([.volumes // [] | .[].secret.secretName] | index("node-maintenance-operator-webhook-server-cert") == null)' "${work}/objects.json"
}
check "the CSV's Deployment mounts no certificate of its own (OLM mounts one there)" no_certificate_volume
webhook_reaches_manager() {
  jq -e '(.items[] | select(.kind == "Deployment")) as $d |
    (.items[] | select(.kind == "ValidatingWebhookConfiguration") | .webhooks[0]) as $w |
    (.items[] | select(.kind == "Service" and .metadata.name == $w.clientConfig.service.name)) as $s |
    ($d.spec.template.spec.containers[] | select(.name == "manager") | .ports[] | select(.name == "webhook-server") | .containerPort) == $s.spec.ports[0].targetPort and
    ($s.spec.selector | to_entries | all(. as $e | $d.spec.template.metadata.labels[$e.key] == $e.value)) and
    $w.failurePolicy == "Fail" and $w.sideEffects == "None" and
    $w.clientConfig.service.path == "/validate-nodemaintenance-medik8s-io-v1beta1-nodemaintenance"' "${work}/objects.json"
}
check "the webhook definition reaches the manager's webhook-server port through OLM's Service, failurePolicy Fail" \
  webhook_reaches_manager

# --- 4. the local cluster -------------------------------------------------------------
no_olm() { [[ -z "$(kubectl api-resources --api-group=operators.coreos.com -o name)" ]]; }
if no_olm; then
  # OLM's own ClusterServiceVersion CRD, from the Operator Framework's API module (the version
  # olmcheck is built with), judges the CSV as a cluster with OLM would; removed again at the end.
  say "no OLM on this cluster: OLM's own ClusterServiceVersion CRD (olmcheck csv-crd) is installed for the dry run, and removed after"
  "${olmcheck}" csv-crd >"${work}/csv-crd.json"
  csv_crd_installed=1
  kapply -f "${work}/csv-crd.json" >/dev/null
  for _ in $(seq 1 240); do
    kubectl get --raw /apis/operators.coreos.com/v1alpha1/clusterserviceversions >/dev/null 2>&1 && break
    sleep 0.25
  done
fi
kubectl create namespace "${scratch}" >/dev/null
# The dry run can fail: a CSV whose installModes is not a list is refused. The API server
# applies a new CRD's schema a moment after serving it, and kubectl maps the new kind only once
# its discovery has caught up (its client-side dry run that turns the CSV into JSON needs that
# too), so this is asked until it refuses (up to 30 s), and the real CSV is judged after that.
refuses_broken_csv() {
  local out=""
  for _ in $(seq 1 60); do
    if ! out="$(kubectl create --dry-run=client --validate=false -o json -f "${csv}" 2>&1 >"${work}/csv.json")"; then
      sleep 0.5
      continue
    fi
    jq '.spec.installModes = "AllNamespaces" | del(.metadata.namespace)' "${work}/csv.json" >"${work}/broken-csv.json"
    if ! out="$(kapply --dry-run=server -n "${scratch}" -f "${work}/broken-csv.json" 2>&1)" &&
      [[ "${out}" == *installModes* ]]; then
      echo "${out}"
      return 0
    fi
    sleep 0.5
  done
  echo "last answer: ${out}"
  return 1
}
check "a ClusterServiceVersion with installModes not a list fails the server-side dry run" refuses_broken_csv
check "the ClusterServiceVersion passes a server-side dry run against OLM's schema, in namespace ${scratch}" \
  kapply --dry-run=server -n "${scratch}" -f "${csv}"
check "server-side dry run of what OLM creates from the bundle, in namespace ${scratch} ($(jq '.items | length' "${work}/objects.json") objects)" \
  kapply --dry-run=server -f "${work}/objects.json"
check "server-side dry run of deploy/olm/other-namespaces.yaml" kapply --dry-run=server -f deploy/olm/other-namespaces.yaml

say "took $((SECONDS - started)) s"
((failed == 0))
