#!/usr/bin/env bash
# e2e.real_node_deploy: the operator installed as users install it, from its image, in a pod on
# the local cluster's real kubelet node (hack/real-node.sh), through deploy/default and the
# overlay of hack/deploy.sh (docs/operations.md, "What the install was tested with").
#
#   1. The manager pod becomes Ready through the kubelet's own startup, liveness and readiness
#      probes; a killed container and a wedged one (SIGSTOP: liveness fails) are restarted by
#      the kubelet, and a maintenance that was running meanwhile finishes.
#   2. The API server calls the admission webhook through its Service (deploy/webhook: a service
#      reference, no URL; the overlay makes the Service an ExternalName of localhost, as no
#      Endpoints may hold a loopback address): the commands of docs/design.md §8 (S6) get the
#      denial messages of docs/design.md §4, with the openssl certificate of
#      deploy/webhook/README.md.
#   3. A maintenance of a kwok worker goes Pending -> Running -> Succeeded and is undone on
#      delete, the operator using its pod's projected ServiceAccount token (in-cluster config).
#   4. `kubectl logs ... -c manager` shows that maintenance's decisions as JSON lines
#      (docs/design.md §6).
#   5. /metrics where the metrics Service sends a scraper (the selected pod's IP and targetPort):
#      200 for a ServiceAccount bound to the metrics-reader role, 401 without a token.
#   6. The leader pod deleted mid-drain: its replacement takes the Lease over and the drain
#      finishes, each pod evicted once (one replica: a second one would need the same host ports
#      on the one loopback node).
#   9. Hostile clients from the pod's own address (the host network): silent connections past
#      the limits of the probe, metrics and webhook ports and a forged admission review; the
#      kubelet's probes keep passing (no restart, Ready throughout, no Unhealthy event), the
#      leader keeps its Lease, and the admin's real create right after the forgery is admitted.
#   8. The same webhook with the certificate of the cert-manager base (deploy/webhook/cert-manager)
#      instead: without a certificate creates fail closed; with the Secret and caBundle that
#      cert-manager makes (played by test/e2e/support/cert_manager_stand_in.sh: its binaries
#      cannot be built here) the denial messages of docs/design.md §4 are back.
#  10. A maintenance of the real node, which runs the one replica: the manager's soft open-file
#      limit is its hard one; the PodDisruptionBudget holds the replica (pendingPodsRefs
#      BlockedByPDB), it is not evicted, and the webhook still refuses a missing node with the
#      story's message; deleting the maintenance makes the node schedulable again.
#   7. Uninstall as docs/operations.md says leaves no NodeMaintenance, finalizer, webhook
#      configuration, Lease of the operator or cordon behind, and the shared medik8s-leases. Afterwards the CRD, namespaces, RBAC and the e2e
#      operator kubeconfig are put back (hack/operator-kubeconfig.sh) for the tests that follow.
#
# Needs the real node (NMO_REAL_NODE=1 make cluster-up, or hack/real-node.sh up) and the image
# (NMO_IMAGE_ARCHIVE, or it is built). Without the real node it exits 77 (ctest: skipped), unless
# NMO_REQUIRE_REAL_NODE=1 (make test), when that is a failure.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "${root}"
# shellcheck source=hack/testenv-lib.sh
source "${root}/hack/testenv-lib.sh"

dir="$(cluster_dir)"
[[ -f "${dir}/admin.kubeconfig" && -f "${dir}/bin-dir" ]] ||
  die "the local cluster is not up (no ${dir}/admin.kubeconfig); start it with make cluster-up"
if ! hack/real-node.sh status >/dev/null 2>&1; then
  if [[ "${NMO_REQUIRE_REAL_NODE:-0}" == 1 ]]; then
    hack/real-node.sh status || true
    die "the real node is required (NMO_REQUIRE_REAL_NODE=1) but not up"
  fi
  echo "SKIP: no real node (NMO_REAL_NODE=1 make cluster-up, or hack/real-node.sh up)" >&2
  exit 77
fi
export KUBECONFIG="${dir}/admin.kubeconfig"
PATH="$(cat "${dir}/bin-dir"):${PATH}"
export PATH
# shellcheck source=/dev/null
source "${dir}/ports.env"
# shellcheck source=/dev/null
source "${dir}/real-node.env"

ns=node-maintenance-operator-system
deployment=node-maintenance-operator-controller-manager
webhook=nodemaintenance-validation.medik8s.io
metrics_service=node-maintenance-operator-controller-manager-metrics-service
suffix="$(openssl rand -hex 3)"
worker="rn-worker-${suffix}"
apps="rn-apps-${suffix}"
reader="rn-metrics-${suffix}"

work="$(mktemp -d)"
checks_name=real-node-deploy
# shellcheck source=test/e2e/support/checks.sh
source "${root}/test/e2e/support/checks.sh"
# shellcheck source=test/e2e/support/foreign_crds.sh
source "${root}/test/e2e/support/foreign_crds.sh"
# log_has <file> <jq condition> [jq args...]: some JSON line of the log satisfies the condition
# (jq 1.6's -e looks only at the last line's result, hence the array).
log_has() {
  local file="$1" condition="$2"
  shift 2
  jq -n -e "$@" "[inputs | select(${condition})] | length > 0" "${file}" >/dev/null
}

# The manager pod that is not being deleted.
manager_pod() {
  kubectl get pods -n "${ns}" -l app.kubernetes.io/component=manager -o json |
    jq -r '[.items[] | select(.metadata.deletionTimestamp == null) | .metadata.name][0] // empty'
}
pod_ready() { [[ "$(kubectl get pod -n "${ns}" "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" == True ]]; }
restarts() { kubectl get pod -n "${ns}" "$1" -o jsonpath='{.status.containerStatuses[0].restartCount}'; }
phase() { kubectl get nm "$1" -o jsonpath='{.status.phase}'; }
phase_is() { [[ "$(phase "$1")" == "$2" ]]; }
# The manager container's main process, as the host sees it (same PID namespace as the shim's
# children: runc's state names the container's init PID).
manager_host_pid() {
  local id
  id="$(kubectl get pod -n "${ns}" "$1" -o jsonpath='{.status.containerStatuses[0].containerID}')"
  id="${id#containerd://}"
  runc --root "${REAL_NODE_STATE}/runc/k8s.io" state "${id}" | jq -r .pid
}

# --- cleanup (trap) ---------------------------------------------------------------------
cleanup() {
  local status=$?
  set +e
  trap - EXIT INT TERM
  say "cleanup"
  [[ -n "${logs_pid:-}" ]] && kill "${logs_pid}" 2>/dev/null
  hack/deploy.sh down >/dev/null 2>&1
  kubectl delete validatingwebhookconfiguration "${webhook}" --ignore-not-found >/dev/null 2>&1
  kubectl delete namespace "${apps}" --ignore-not-found --wait=false >/dev/null 2>&1
  kubectl delete node "${worker}" --ignore-not-found >/dev/null 2>&1
  kubectl delete clusterrolebinding "${reader}" --ignore-not-found >/dev/null 2>&1
  if ((${#installed_crds[@]} > 0)); then
    kubectl delete crd "${installed_crds[@]}" --ignore-not-found >/dev/null 2>&1
  fi
  # The tests that follow run the operator as its ServiceAccount: put it back.
  if ! hack/operator-kubeconfig.sh >/dev/null; then
    say "FAIL: could not put the CRD, namespaces, RBAC and the operator kubeconfig back"
    status=1
  fi
  if ((failed > 0)) && [[ -d "${dir}/logs" ]]; then
    rm -rf "${dir}/logs/real-node-deploy-test"
    cp -r "${work}" "${dir}/logs/real-node-deploy-test"
    say "the manager logs and watch of this run: ${dir}/logs/real-node-deploy-test/"
  fi
  rm -rf "${work}"
  say "real-node deploy: ${passed} passed, ${failed} failed"
  ((failed == 0)) || status=1
  exit "${status}"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- install ----------------------------------------------------------------------------
# Another test's configuration would answer instead of ours; make run's points at 127.0.0.1.
kubectl delete validatingwebhookconfiguration "${webhook}" --ignore-not-found >/dev/null
say "hack/deploy.sh up (image, overlay of deploy/default, openssl certificate)"
started=${SECONDS}
if ! hack/deploy.sh up ${NMO_IMAGE_ARCHIVE:+--image-archive "${NMO_IMAGE_ARCHIVE}"}; then
  fail "hack/deploy.sh up"
  kubectl describe pods -n "${ns}" -l app.kubernetes.io/component=manager >&2 || true
  exit 1
fi
say "installed and rolled out in $((SECONDS - started))s"

# --- 1. probes --------------------------------------------------------------------------
pod="$(manager_pod)"
check "the manager pod ${pod} runs on ${REAL_NODE_NAME}" \
  test "$(kubectl get pod -n "${ns}" "${pod}" -o jsonpath='{.spec.nodeName}')" == "${REAL_NODE_NAME}"
check "the kubelet's startup probe passed (started) and readiness made it Ready" \
  bash -c "[[ \$(kubectl get pod -n ${ns} ${pod} -o jsonpath='{.status.containerStatuses[0].started} {.status.containerStatuses[0].ready}') == 'true true' ]]"
check "the pod's IP is the node's 127.0.0.1 (host network)" \
  test "$(kubectl get pod -n "${ns}" "${pod}" -o jsonpath='{.status.podIP}')" == 127.0.0.1
runs_as_nonroot_readonly() {
  local pid
  pid="$(manager_host_pid "${pod}")"
  awk '/^Uid:/ {print "uid", $2, $3}' "/proc/${pid}/status"
  awk '$5 == "/" {print "root mount options", $6}' "/proc/${pid}/mountinfo"
  [[ "$(awk '/^Uid:/ {print $2}' "/proc/${pid}/status")" == 65532 ]] &&
    awk '$5 == "/" {print $6}' "/proc/${pid}/mountinfo" | grep -q -E '(^|,)ro(,|$)'
}
check "the manager runs as user 65532 on a read-only root filesystem" runs_as_nonroot_readonly
image_labels() {
  podman image inspect --format '{{json .Labels}}' "${NMO_IMAGE:-localhost/node-maintenance-operator:dev}" |
    tee /dev/stderr | jq -e 'has("org.opencontainers.image.version") and has("org.opencontainers.image.revision")
      and has("org.opencontainers.image.source") and has("org.opencontainers.image.licenses")'
}
check "the image carries the OCI labels (version, revision, source, licenses)" image_labels

# Workloads on a kwok worker of this test's own: 4 pods, 2 of them held by a PDB.
kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Node
metadata:
  name: ${worker}
  labels: {kubernetes.io/hostname: ${worker}, kubernetes.io/os: linux}
---
apiVersion: v1
kind: Namespace
metadata:
  name: ${apps}
EOF
wait_until 60 bash -c "[[ \$(kubectl get node ${worker} -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}') == True ]]" ||
  fail "kwok made ${worker} Ready"
make_pods() { # make_pods <prefix> <app label> <count>
  local i
  for i in $(seq 1 "$3"); do
    cat <<EOF
---
apiVersion: v1
kind: Pod
metadata: {name: $1-${i}, namespace: ${apps}, labels: {app: $2}}
spec:
  nodeName: ${worker}
  terminationGracePeriodSeconds: 1
  containers: [{name: c, image: busybox}]
EOF
  done
}
{
  make_pods free free 2
  make_pods held held 2
  cat <<EOF
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: held, namespace: ${apps}}
spec:
  minAvailable: 2
  selector: {matchLabels: {app: held}}
EOF
} | kubectl apply -f - >/dev/null
pods_running() { [[ "$(kubectl get pods -n "${apps}" --field-selector=status.phase=Running -o name | wc -l)" -eq "$1" ]]; }
pdb_blocks() { [[ "$(kubectl get pdb -n "${apps}" held -o jsonpath='{.status.disruptionsAllowed}')" == 0 && "$(kubectl get pdb -n "${apps}" held -o jsonpath='{.status.currentHealthy}')" == 2 ]]; }
wait_until 60 pods_running 4 || fail "the workload pods run on ${worker}"
wait_until 60 pdb_blocks || fail "the PDB allows no disruption"

nm="rn-maintenance-${suffix}"
# Every phase the maintenance goes through: a watch from the list's resourceVersion, taken
# before it exists (so no write can slip between the list and the watch).
rv="$(kubectl get --raw /apis/nodemaintenance.medik8s.io/v1beta1/nodemaintenances | jq -r .metadata.resourceVersion)"
kubectl get --raw "/apis/nodemaintenance.medik8s.io/v1beta1/nodemaintenances?watch=true&resourceVersion=${rv}" \
  >"${work}/phases.json" 2>/dev/null &
watch_pid=$!
if ! kubectl apply -f - <<EOF; then
apiVersion: nodemaintenance.medik8s.io/v1beta1
kind: NodeMaintenance
metadata:
  name: ${nm}
spec:
  nodeName: ${worker}
  reason: "Hardware memory upgrade - scheduled maintenance window"
EOF
  fail "creating NodeMaintenance ${nm} (admitted by the webhook through its Service)"
  exit 1
fi
check "the maintenance runs, held by the PDB (2 pods evicted, 2 pending)" wait_until 60 bash -c \
  "[[ \$(kubectl get nm ${nm} -o jsonpath='{.status.phase} {.status.evictionPods} {.status.totalPods}') == 'Running 2 4' ]]"

# Each container's log, before it goes (the kubelet keeps only the one before the current).
kubectl logs -n "${ns}" "${pod}" -c manager >"${work}/manager-1.log"
say "killing the manager container (SIGKILL) while the maintenance runs"
before="$(restarts "${pod}")"
kill -KILL "$(manager_host_pid "${pod}")"
restarted_and_ready() { # restarted_and_ready <restart count>: that many restarts, and Ready
  [[ "$(restarts "${pod}")" == "$1" ]] && pod_ready "${pod}"
}
check "the kubelet restarted the killed container and it is Ready again" \
  wait_until 120 restarted_and_ready $((before + 1))

kubectl logs -n "${ns}" "${pod}" -c manager >"${work}/manager-2.log"
say "wedging the manager (SIGSTOP): the liveness probe fails, the kubelet restarts it"
before="$(restarts "${pod}")"
kill -STOP "$(manager_host_pid "${pod}")"
check "the kubelet restarted the wedged container (liveness) and it is Ready again" \
  wait_until 180 restarted_and_ready $((before + 1))
check "the kubelet's event names the failed liveness probe" bash -c \
  "kubectl get events -n ${ns} --field-selector involvedObject.name=${pod},reason=Unhealthy -o jsonpath='{.items[*].message}' | grep -q 'Liveness probe failed'"
check "the maintenance still runs, held by the PDB, after both restarts" phase_is "${nm}" Running

# --- 2. the webhook through its Service -------------------------------------------------
check "the webhook configuration reaches the webhook through its Service (no URL)" bash -c \
  "[[ \$(kubectl get validatingwebhookconfiguration ${webhook} -o jsonpath='{.webhooks[0].clientConfig.service.name}/{.webhooks[0].clientConfig.url}') == node-maintenance-operator-webhook-service/ ]]"
denied() { # denied <expected message> <kubectl args...>
  local expected="$1" out
  shift
  if out="$(kubectl "$@" 2>&1)"; then
    echo "accepted: ${out}"
    return 1
  fi
  echo "${out}"
  [[ "${out}" == *"admission webhook \"${webhook}\" denied the request: ${expected}"* ]]
}
refuses_create() { # refuses_create <expected message> <name> <node>: a server-side dry run
  denied "$1" create --dry-run=server -f - <<EOF
apiVersion: nodemaintenance.medik8s.io/v1beta1
kind: NodeMaintenance
metadata: {name: $2}
spec: {nodeName: $3}
EOF
}
check "story ch. 8: changing spec.nodeName is refused with the story's message" \
  denied "nodeName is immutable and cannot be changed after creation; updating spec.NodeName isn't allowed" \
  patch nm "${nm}" --type merge -p '{"spec":{"nodeName":"node-worker-05"}}'
check "a maintenance for a node that does not exist is refused" \
  refuses_create 'node "node-that-does-not-exist" not found in cluster; invalid nodeName, no node with name node-that-does-not-exist found' "rn-missing-${suffix}" node-that-does-not-exist
check "a second maintenance of the same node is refused" \
  refuses_create "node \"${worker}\" is already under maintenance by NodeMaintenance \"${nm}\"; invalid nodeName, a NodeMaintenance for node ${worker} already exists" "rn-second-${suffix}" "${worker}"

# --- 6. leader failover mid-drain -------------------------------------------------------
# The leader-election id, upstream NMO's (docs/operations.md).
lease_name=135b1886.medik8s.io
# The identity is the pod's name and a random suffix: <pod>_<hex>.
holder_is() { [[ "$(kubectl get lease -n "${ns}" "${lease_name}" -o jsonpath='{.spec.holderIdentity}')" == "$1"_* ]]; }
check "the manager pod holds the leader Lease (${lease_name})" wait_until 60 holder_is "${pod}"
# The old leader's log, kept while it exists (a deleted pod's log cannot be read afterwards).
kubectl logs -n "${ns}" -f "${pod}" -c manager >"${work}/manager-3.log" 2>/dev/null &
logs_pid=$!
say "deleting the leader pod ${pod} mid-drain"
kubectl delete pod -n "${ns}" "${pod}" --wait=false >/dev/null
new_pod_ready() {
  local p
  p="$(manager_pod)"
  [[ -n "${p}" && "${p}" != "${pod}" ]] && pod_ready "${p}"
}
check "a replacement pod is Ready" wait_until 180 new_pod_ready
new_pod="$(manager_pod)"
check "the replacement ${new_pod} took the leader Lease over" wait_until 60 holder_is "${new_pod}"
check "the maintenance is still Running, 2 pods pending" bash -c \
  "[[ \$(kubectl get nm ${nm} -o jsonpath='{.status.phase} {.status.evictionPods}') == 'Running 2' ]]"
say "relaxing the PDB: the new leader finishes the drain"
kubectl patch pdb -n "${apps}" held --type merge -p '{"spec":{"minAvailable":0}}' >/dev/null
check "the maintenance Succeeded (4 of 4 pods gone)" wait_until 120 bash -c \
  "[[ \$(kubectl get nm ${nm} -o jsonpath='{.status.phase} {.status.evictionPods} {.status.totalPods} {.status.drainProgress}') == 'Succeeded 4 4 100' ]]"
check "no workload pod is left on ${worker}" wait_until 60 bash -c \
  "[[ -z \$(kubectl get pods -n ${apps} -o name) ]]"
wait "${logs_pid}" 2>/dev/null || true
logs_pid=""
kubectl logs -n "${ns}" "${new_pod}" -c manager >"${work}/manager-4.log"
evicted_once() { # 4 pods named, each once, over the four containers that ran
  cat "${work}"/manager-[1-4].log |
    jq -r 'select(.msg == "pod evicted") | .pod' | sort | uniq -c | tee "${work}/evictions"
  [[ "$(wc -l <"${work}/evictions")" -eq 4 ]] && awk '$1 != 1 {bad = 1} END {exit bad}' "${work}/evictions"
}
check "each of the 4 pods was evicted exactly once across the four manager containers" evicted_once

# --- 3. phases and undo -----------------------------------------------------------------
kubectl delete nm "${nm}" --wait --timeout=60s >/dev/null
kill "${watch_pid}" 2>/dev/null || true
phases_in_order() {
  jq -r --arg nm "${nm}" 'select(.object.metadata.name == $nm) | .object.status.phase // empty' \
    "${work}/phases.json" | uniq | tr '\n' ' ' | tee "${work}/phases"
  [[ "$(cat "${work}/phases")" == "Pending Running Succeeded " ]]
}
check "the maintenance went Pending -> Running -> Succeeded (from a watch)" phases_in_order
node_restored() {
  [[ -z "$(kubectl get node "${worker}" -o jsonpath='{.spec.unschedulable}')" ]] &&
    ! kubectl get node "${worker}" -o jsonpath='{.spec.taints[*].key}' | grep -q 'medik8s.io'
}
check "deleting the maintenance uncordoned and untainted ${worker}" wait_until 60 node_restored
check "the operator talks to the API server with its pod's projected ServiceAccount token" bash -c \
  "kubectl get pod -n ${ns} ${new_pod} -o json | jq -e '[.spec.volumes[] | select(.projected.sources[]?.serviceAccountToken)] | length > 0' >/dev/null"
check "the operator says it started with the in-cluster service account's config" \
  log_has "${work}/manager-4.log" '.msg == "starting" and .config == "in-cluster service account"'

# --- 4. the decisions in kubectl logs (docs/design.md §6) -------------------------------
kubectl logs -n node-maintenance-operator-system deployment/node-maintenance-operator-controller-manager -c manager --since=10m >"${work}/ch9.log"
decisions() {
  local lines
  lines="$(grep -F "\"${nm}\"" "${work}/ch9.log")"
  [[ -n "${lines}" ]] || return 1
  jq -e . <<<"${lines}" >/dev/null || { echo "not JSON lines:"; echo "${lines}"; return 1; }
  jq -r --arg nm "${nm}" 'select(.nodemaintenance == $nm) | .msg' <<<"${lines}" | tee "${work}/msgs"
  grep -qx 'maintenance succeeded' "${work}/msgs"
}
# The new leader adopted a maintenance already requested: its log starts from Running; the
# request itself is in the first container's log (read with the same command before it went).
check "story ch. 9 step 3: kubectl logs deployment/... -c manager --since=10m shows the maintenance's decisions as JSON lines" decisions
check "the maintenance was requested (the first container's log, JSON)" \
  log_has "${work}/manager-1.log" '.nodemaintenance == $nm and .msg == "maintenance requested"' --arg nm "${nm}"

# --- 5. /metrics where the metrics Service sends a scraper -----------------------------
# No EndpointSlice may hold a loopback address, so the Service has no endpoints here; a scraper
# goes where the Service selects: a manager pod's IP and the Service's targetPort.
target_port="$(kubectl get service -n "${ns}" "${metrics_service}" -o jsonpath='{.spec.ports[0].targetPort}')"
scrape_pod="$(kubectl get pods -n "${ns}" \
  -l "$(kubectl get service -n "${ns}" "${metrics_service}" -o json | jq -r '.spec.selector | to_entries | map("\(.key)=\(.value)") | join(",")')" \
  -o json | jq -r '[.items[] | select(.metadata.deletionTimestamp == null)][0].metadata.name')"
address="$(kubectl get pod -n "${ns}" "${scrape_pod}" -o jsonpath='{.status.podIP}')"
port="$(kubectl get pod -n "${ns}" "${scrape_pod}" -o json |
  jq -r --arg p "${target_port}" '.spec.containers[].ports[]? | select(.name == $p) | .containerPort')"
kubectl create serviceaccount -n "${apps}" "${reader}" >/dev/null 2>&1 || true
kubectl create clusterrolebinding "${reader}" --clusterrole=node-maintenance-operator-metrics-reader \
  --serviceaccount="${apps}:${reader}" >/dev/null
token="$(kubectl create token -n "${apps}" "${reader}" --duration=10m)"
metrics_code() { curl -sk -o "${work}/metrics" -w '%{http_code}' "$@" "https://${address}:${port}/metrics"; }
with_token() {
  local code
  code="$(metrics_code -H "Authorization: Bearer ${token}")"
  echo "HTTP ${code} from https://${address}:${port}/metrics (Service ${metrics_service}, targetPort ${target_port})"
  [[ "${code}" == 200 ]] && grep -q '^leader_election_master_status' "${work}/metrics"
}
check "/metrics with a metrics-reader token: 200 with the operator's series" with_token
check "/metrics without a token: 401" test "$(metrics_code)" == 401

# --- 9. hostile clients against the pod -------------------------------------------------
# Silent connections past each server's limits, from the address the kubelet and the API server
# use too (the host network: 127.0.0.1), and a forged admission review, while the kubelet keeps
# probing (docs/reliability.md, "Hostile clients").
# Each flood process keeps its descriptors under 1,024: bash's `read -t 0` polls with select(),
# whose descriptor set ends there (glibc aborts past it), so the webhook's 1,100 take two.
flood() { # flood <port> <connections> <seconds>: holds that many silent connections, reopening the ones the server closes; prints how many it closed
  local port="$1" want="$2" until=$((SECONDS + $3)) closed=0 fd
  local -a fds=() open=()
  while ((SECONDS < until)); do
    open=()
    for fd in "${fds[@]}"; do
      # Readable without a byte sent: the server closed it.
      if read -r -t 0 -u "${fd}"; then
        exec {fd}>&-
        closed=$((closed + 1))
      else
        open+=("${fd}")
      fi
    done
    fds=("${open[@]}")
    while ((${#fds[@]} < want)); do
      exec {fd}<>"/dev/tcp/127.0.0.1/${port}" || break
      fds+=("${fd}")
    done
    sleep 1 # the flood's pace, not a wait for anything
  done
  echo "${closed}"
}
flood_pod="$(manager_pod)"
flood_restarts="$(restarts "${flood_pod}")"
flood_ready_since="$(kubectl get pod -n "${ns}" "${flood_pod}" -o jsonpath='{.status.conditions[?(@.type=="Ready")].lastTransitionTime}')"
flood_transitions="$(kubectl get lease -n "${ns}" "${lease_name}" -o jsonpath='{.spec.leaseTransitions}')"
flood_start="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
flood_seconds=30
say "flooding the probe (150), metrics (150) and webhook (1100) ports with silent connections for ${flood_seconds}s"
flood "${POD_HEALTH_PORT}" 150 "${flood_seconds}" >"${work}/flood-health" 2>"${work}/flood-health.err" &
flood_health=$!
flood "${POD_METRICS_PORT}" 150 "${flood_seconds}" >"${work}/flood-metrics" 2>"${work}/flood-metrics.err" &
flood_metrics=$!
flood "${POD_WEBHOOK_PORT}" 550 "${flood_seconds}" >"${work}/flood-webhook-1" 2>"${work}/flood-webhook-1.err" &
flood_webhook_1=$!
flood "${POD_WEBHOOK_PORT}" 550 "${flood_seconds}" >"${work}/flood-webhook-2" 2>"${work}/flood-webhook-2.err" &
flood_webhook_2=$!
webhook_path="$(kubectl get validatingwebhookconfiguration "${webhook}" -o jsonpath='{.webhooks[0].clientConfig.service.path}')"
forged_review() { # a CREATE for ${worker} that no API server sent, by a made-up user
  jq -n --arg node "${worker}" --arg uid "$(openssl rand -hex 8)" '{
    apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview",
    request: {uid: $uid, operation: "CREATE", name: "forged", dryRun: false,
      kind: {group: "nodemaintenance.medik8s.io", version: "v1beta1", kind: "NodeMaintenance"},
      resource: {group: "nodemaintenance.medik8s.io", version: "v1beta1", resource: "nodemaintenances"},
      userInfo: {username: "mallory", groups: ["system:authenticated"]},
      object: {apiVersion: "nodemaintenance.medik8s.io/v1beta1", kind: "NodeMaintenance",
        metadata: {name: "forged"}, spec: {nodeName: $node, reason: "forged"}}}}' |
    curl -sk --max-time 10 -H 'Content-Type: application/json' --data-binary @- \
      "https://127.0.0.1:${POD_WEBHOOK_PORT}${webhook_path}" | tee "${work}/forged.json" |
    jq -e '.response.allowed == true' >/dev/null
}
check "under the flood: a forged review for ${worker} is answered by the pod" wait_until 20 forged_review
real_create() {
  kubectl create -f - <<EOF
apiVersion: nodemaintenance.medik8s.io/v1beta1
kind: NodeMaintenance
metadata: {name: rn-after-forged-${suffix}}
spec: {nodeName: ${worker}, reason: "the admin's real create"}
EOF
}
check "under the flood: the admin's real create for ${worker} right after the forged review is admitted" real_create
check "under the flood: a maintenance for a node that does not exist is still refused with the story's message" \
  refuses_create 'node "node-that-does-not-exist" not found in cluster; invalid nodeName, no node with name node-that-does-not-exist found' "rn-flood-${suffix}" node-that-does-not-exist
check "under the flood: /metrics with a metrics-reader token is answered 200" with_token
flood_status=0
for pid in "${flood_health}" "${flood_metrics}" "${flood_webhook_1}" "${flood_webhook_2}"; do
  wait "${pid}" || flood_status=$?
done
closed_count() { cat "$@" 2>/dev/null | awk '{ n += $1 } END { print n + 0 }'; }
say "connections the pod closed on the flood: probes $(closed_count "${work}/flood-health"), metrics $(closed_count "${work}/flood-metrics"), webhook $(closed_count "${work}/flood-webhook-1" "${work}/flood-webhook-2")"
check "the flood ran its course (each flood process ended well)" test "${flood_status}" -eq 0
check "the flood reached its connection counts (no error opening them)" bash -c \
  "! grep -H . ${work}/flood-health.err ${work}/flood-metrics.err ${work}/flood-webhook-1.err ${work}/flood-webhook-2.err"
check "the pod shed connections of the flood on the probe port (its limits were reached)" \
  test "$(closed_count "${work}/flood-health")" -gt 0
unchanged_pod() { # no restart, and Ready since before the flood
  local now
  now="$(kubectl get pod -n "${ns}" "${flood_pod}" -o jsonpath='{.status.containerStatuses[0].restartCount} {.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].lastTransitionTime}')"
  echo "restarts, Ready, since: ${now} (before: ${flood_restarts} True ${flood_ready_since})"
  [[ "${now}" == "${flood_restarts} True ${flood_ready_since}" ]]
}
check "after the flood: no restart, the pod Ready since before it" unchanged_pod
no_failed_probe() {
  kubectl get events -n "${ns}" --field-selector "involvedObject.name=${flood_pod},reason=Unhealthy" -o json |
    jq -e --arg t "${flood_start}" '[.items[] | select((.lastTimestamp // .eventTime) >= $t) | .message] | length == 0'
}
check "after the flood: no failed kubelet probe since it began (no Unhealthy event)" no_failed_probe
lease_kept() {
  local now
  now="$(kubectl get lease -n "${ns}" "${lease_name}" -o jsonpath='{.spec.holderIdentity} {.spec.leaseTransitions}')"
  echo "holder, transitions: ${now} (before: ${flood_pod}_* ${flood_transitions})"
  [[ "${now}" == "${flood_pod}"_*" ${flood_transitions}" ]]
}
check "after the flood: the leader kept its Lease (holder and transitions unchanged)" lease_kept
check "the admin's maintenance after the forged review Succeeded" wait_until 60 phase_is "rn-after-forged-${suffix}" Succeeded
kubectl delete nm "rn-after-forged-${suffix}" --wait --timeout=60s >/dev/null
check "deleting it uncordoned and untainted ${worker} again" wait_until 60 node_restored

# --- 10. a maintenance of the node running the replica -----------------------------------
# docs/operations.md, "Availability of the operator": the one replica runs on the real node; a
# maintenance of that node may not evict it (PodDisruptionBudget minAvailable 1), so the webhook
# keeps answering while the node is cordoned and drained.
pod="$(manager_pod)"
open_files_raised() {
  local pid
  pid="$(manager_host_pid "${pod}")"
  grep '^Max open files' "/proc/${pid}/limits"
  awk '/^Max open files/ {exit !($4 == $5)}' "/proc/${pid}/limits"
}
check "the manager's soft open-file limit is its hard one (raised at start)" open_files_raised
self_nm="rn-self-${suffix}"
kubectl apply -f - >/dev/null <<EOF
apiVersion: nodemaintenance.medik8s.io/v1beta1
kind: NodeMaintenance
metadata: {name: ${self_nm}}
spec: {nodeName: ${REAL_NODE_NAME}, reason: "the node running the operator"}
EOF
held_by_pdb() {
  kubectl get nm "${self_nm}" -o jsonpath='{.status.phase} {.status.pendingPodsRefs}{"\n"}'
  kubectl get nm "${self_nm}" -o json | jq -e --arg pod "${pod}" --arg ns "${ns}" '.status.phase == "Running" and
    any(.status.pendingPodsRefs[]?; .name == $pod and .namespace == $ns and .reason == "BlockedByPDB")' >/dev/null
}
check "the maintenance of ${REAL_NODE_NAME} runs; the manager pod ${pod} is held by its PodDisruptionBudget" \
  wait_until 90 held_by_pdb
still_one_replica() {
  [[ "$(kubectl get pods -n "${ns}" -l app.kubernetes.io/component=manager -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.deletionTimestamp}{"\n"}{end}')" == "${pod} " ]] &&
    pod_ready "${pod}"
}
check "the replica was not evicted: ${pod} is still the one manager pod, Ready" still_one_replica
# The node lifecycle conditions (docs/design.md §2.10) on a node whose kubelet rewrites its status
# (every 15 s: hack/real-node.sh): each rewrite carries ours along, Ready's heartbeat advancing.
lifecycle_ours() {
  jq -r '[.status.conditions[] | select(.type == "MaintenanceInProgress" or .type == "DrainInProgress"
    or .type == "Drained") | "\(.type)=\(.status)/\(.reason)"] | sort | join(" ")' <<<"$1"
}
expected_ours="DrainInProgress=True/NodeMaintenanceDraining MaintenanceInProgress=True/NodeMaintenance"
heartbeats=()
lost=""
# One look at the node: records Ready's heartbeat time; done after four different ones (three
# status writes by the kubelet after the first look), or at once when ours are not as expected.
kubelet_heartbeat_kept_ours() {
  local node ours heartbeat
  node="$(kubectl get node "${REAL_NODE_NAME}" -o json)" || return 1
  ours="$(lifecycle_ours "${node}")"
  if [[ "${ours}" != "${expected_ours}" ]]; then
    lost="${ours:-none}"
    return 0
  fi
  heartbeat="$(jq -r '.status.conditions[] | select(.type == "Ready") | .lastHeartbeatTime' <<<"${node}")"
  [[ " ${heartbeats[*]} " == *" ${heartbeat} "* ]] || heartbeats+=("${heartbeat}")
  ((${#heartbeats[@]} >= 4))
}
ours_on_node() { [[ "$(lifecycle_ours "$(kubectl get node "${REAL_NODE_NAME}" -o json)")" == "${expected_ours}" ]]; }
check "${REAL_NODE_NAME} says MaintenanceInProgress and DrainInProgress (${expected_ours})" \
  wait_until 30 ours_on_node
kept_through_heartbeats() {
  wait_until 120 kubelet_heartbeat_kept_ours || {
    echo "the kubelet wrote ${#heartbeats[@]} heartbeat(s) in 120 s: ${heartbeats[*]}"
    return 1
  }
  [[ -z "${lost}" ]] || {
    echo "after heartbeats ${heartbeats[*]}: ${lost}"
    return 1
  }
  echo "Ready heartbeats ${heartbeats[*]}, conditions kept"
}
check "the kubelet rewrote the node's status three times (Ready's heartbeat advancing) and ours stayed" \
  kept_through_heartbeats
describe_shows_ours() {
  local out
  out="$(kubectl describe node "${REAL_NODE_NAME}")"
  grep -E '^  MaintenanceInProgress +True .* NodeMaintenance +' <<<"${out}" &&
    grep -E '^  DrainInProgress +True .* NodeMaintenanceDraining +' <<<"${out}"
}
check "kubectl describe node ${REAL_NODE_NAME} lists them under Conditions" describe_shows_ours
check "the webhook still answers: a maintenance for a missing node is refused with the story's message" \
  refuses_create 'node "node-that-does-not-exist" not found in cluster; invalid nodeName, no node with name node-that-does-not-exist found' "rn-missing3-${suffix}" node-that-does-not-exist
kubectl delete nm "${self_nm}" --wait --timeout=60s >/dev/null || fail "deleting ${self_nm}"
real_node_schedulable() { [[ -z "$(kubectl get node "${REAL_NODE_NAME}" -o jsonpath='{.spec.unschedulable}')" ]]; }
check "deleting it made ${REAL_NODE_NAME} schedulable again" wait_until 60 real_node_schedulable
no_lifecycle_conditions() { [[ -z "$(lifecycle_ours "$(kubectl get node "${REAL_NODE_NAME}" -o json)")" ]]; }
check "and removed its node lifecycle conditions" wait_until 30 no_lifecycle_conditions

# --- 8. the cert-manager base ---------------------------------------------------------
cm_dir="$(module_dir "${cert_manager_module}")"
check "cert-manager's CRDs (Issuer, Certificate from ${cert_manager_module}) installed" \
  install_crds "${cm_dir}/deploy/crds/cert-manager.io_issuers.yaml" \
  "${cm_dir}/deploy/crds/cert-manager.io_certificates.yaml"
say "the certificate from deploy/webhook/cert-manager instead of openssl's"
kubectl delete secret -n "${ns}" node-maintenance-operator-webhook-server-cert >/dev/null
kubectl patch validatingwebhookconfiguration "${webhook}" --type=json \
  -p '[{"op":"remove","path":"/webhooks/0/clientConfig/caBundle"}]' >/dev/null
fails_closed() {
  local out
  out="$(kubectl create --dry-run=server -f - 2>&1 <<EOF
apiVersion: nodemaintenance.medik8s.io/v1beta1
kind: NodeMaintenance
metadata: {name: rn-closed-${suffix}}
spec: {nodeName: ${worker}}
EOF
)" || true
  echo "${out}"
  [[ "${out}" == *"failed calling webhook"* ]]
}
check "without the caBundle, creates fail closed (failurePolicy Fail)" wait_until 30 fails_closed
check "kubectl apply --server-side -k deploy/webhook/cert-manager" \
  kubectl apply --server-side -k deploy/webhook/cert-manager
check "cert-manager (stand-in) issues the Secret and injects the CA" \
  test/e2e/support/cert_manager_stand_in.sh "${ns}" node-maintenance-operator-serving-cert
kubectl -n "${ns}" rollout restart "deployment/${deployment}" >/dev/null
check "the manager rolls out with the cert-manager Secret" \
  kubectl -n "${ns}" rollout status "deployment/${deployment}" --timeout=180s
check "with the cert-manager certificate: a maintenance for a missing node is refused with the story's message" \
  refuses_create 'node "node-that-does-not-exist" not found in cluster' "rn-missing2-${suffix}" node-that-does-not-exist
kubectl delete -k deploy/webhook/cert-manager --ignore-not-found >/dev/null

# --- 7. uninstall -----------------------------------------------------------------------
say "uninstall (docs/operations.md)"
check "hack/deploy.sh down" hack/deploy.sh down
check "no NodeMaintenance is left (the CRD is gone with deploy/default)" bash -c \
  "! kubectl get crd nodemaintenances.nodemaintenance.medik8s.io >/dev/null 2>&1"
check "no webhook configuration is left" bash -c \
  "! kubectl get validatingwebhookconfiguration ${webhook} >/dev/null 2>&1"
check "no Lease of the operator is left (its namespace is gone; none in medik8s-leases held by node-maintenance)" bash -c \
  "! kubectl get lease -n ${ns} -o name 2>/dev/null | grep -q . && ! kubectl get lease -n medik8s-leases -o jsonpath='{.items[*].spec.holderIdentity}' | grep -qw node-maintenance"
check "the shared namespace medik8s-leases is still there" kubectl get namespace medik8s-leases
check "no node is left cordoned or tainted by a maintenance" bash -c \
  "! kubectl get nodes -o jsonpath='{range .items[*]}{.metadata.name} {.spec.unschedulable} {.spec.taints[*].key}{\"\\n\"}{end}' | grep -E 'true|medik8s.io'"
check "no node keeps the operator's prior-state annotation" bash -c \
  "! kubectl get nodes -o jsonpath='{.items[*].metadata.annotations}' | grep -q nodemaintenance.medik8s.io/prior-state"
