#!/usr/bin/env bash
# `make demo`: a tour of docs/design.md §8 (S1–S4, S6, S7) in one command.
#
#   1. builds the operator and brings the local cluster up (3 control-plane nodes, 5 workers);
#   2. deploys workloads like Amin's on node-worker-01: three DaemonSets, a web Deployment, a log
#      aggregator with an emptyDir volume and three "VMs" (stand-ins for KubeVirt's virt-launcher
#      pods), one of them protected by a PodDisruptionBudget that allows no disruption;
#   3. starts the operator in the background as its ServiceAccount (hack/run.sh --background),
#      logging to .cluster/logs/operator-demo.log, with its admission webhook registered
#      (ValidatingWebhookConfiguration nodemaintenance-validation.medik8s.io -> 127.0.0.1);
#   4. creates NodeMaintenance maintenance-worker-01 and prints its progress as it changes;
#   5. shows the cordoned, tainted node; shows the drain blocked by the PDB; shows that a second
#      maintenance waits for the first; relaxes the PDB as an admin would (docs/design.md §8 S2);
#   6. waits for Succeeded; shows the webhook refusing a change of spec.nodeName and a
#      maintenance for a node that does not exist; deletes the NodeMaintenance and shows the node
#      restored;
#   6b. chapter 4 without the admin: serves KubeVirt's API (KubeVirt's own CRDs from
#      shared/kubevirt/crds.yaml beside the checkout, else stand-ins), puts the story's
#      vm-order-processing (no eviction strategy, migratable) on node-worker-02, maintains that
#      node and plays virt-controller for the migration the operator creates; removes the CRDs;
#   7. prints how long maintenance-worker-01 took, stops the operator and removes the webhook
#      configuration (hack/run.sh --stop; also on an early exit) and the demo workloads. The cluster
#      keeps running; `make cluster-down` stops it.
#
# Options: --keep leaves the demo workloads in place (namespaces labelled
# demo.node-maintenance/owner=make-demo) for poking at by hand.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"
# shellcheck source=hack/testenv-lib.sh
source "${root}/hack/testenv-lib.sh"

keep=0
for arg in "$@"; do
  case "${arg}" in
    --keep) keep=1 ;;
    *) die "unknown option ${arg} (expected --keep)" ;;
  esac
done

# shellcheck source=hack/demo-lib.sh
source "${root}/hack/demo-lib.sh"

nm=maintenance-worker-01
node=node-worker-01
demo_label=demo.node-maintenance/owner=make-demo
dir="$(cluster_dir)"
demo_dir="${dir}/demo"
operator_log="${dir}/logs/operator-demo.log"
operator_pid=""

webhook_name=nodemaintenance-validation.medik8s.io
demo_nms=("${nm}" maintenance-worker-02 maintenance-typo)

# Removes the demo's NodeMaintenances (while the operator still runs, so their finalizers go),
# then stops the operator this demo started and removes its webhook configuration (failurePolicy
# Fail: left behind, it would refuse every NodeMaintenance create). Idempotent.
stop_operator() {
  [[ -n "${operator_pid}" ]] || return 0
  if kill -0 "${operator_pid}" 2>/dev/null &&
    [[ -n "$(kubectl get nm "${demo_nms[@]}" --ignore-not-found -o name 2>/dev/null)" ]]; then
    note "(removing the demo's NodeMaintenances while the operator still runs)"
    kubectl delete nm "${demo_nms[@]}" --ignore-not-found --timeout=60s >/dev/null 2>&1 || true
  fi
  section "Stopping the operator this demo started (pid ${operator_pid}) and removing its webhook"
  note "hack/run.sh --stop deletes the ValidatingWebhookConfiguration first, then stops the operator."
  run hack/run.sh --stop || true
  local stat
  stat="$(cat "/proc/${operator_pid}/stat" 2>/dev/null)" || stat=""
  stat="${stat##*) }"
  if [[ -n "${stat}" && "${stat:0:1}" != Z ]]; then # still there, and not a zombie
    kill -KILL "${operator_pid}" 2>/dev/null || true
    note "it was still running and was killed"
  else
    tail -n 1 "${operator_log}"
  fi
  if [[ -n "$(kubectl get validatingwebhookconfiguration "${webhook_name}" --ignore-not-found -o name 2>/dev/null)" ]]; then
    kubectl delete validatingwebhookconfiguration "${webhook_name}" --ignore-not-found >/dev/null 2>&1 || true
  fi
  run kubectl get validatingwebhookconfigurations
  operator_pid=""
}

# Deletes the demo's namespaces (unless --keep), so end-to-end tests find the cluster as it was.
remove_workloads() {
  ((keep == 0)) || return 0
  [[ -n "${KUBECONFIG:-}" ]] || return 0
  [[ -n "$(kubectl get ns -l "${demo_label}" -o name 2>/dev/null)" ]] || return 0
  note "Removing the demo workloads (namespaces labelled ${demo_label}; --keep leaves them):"
  run kubectl delete namespace -l "${demo_label}" --wait=false
}

# KubeVirt's API, served for the chapter 4 section by KubeVirt's own CRDs (the fixture
# shared/kubevirt/crds.yaml beside the checkout, as the e2e tests use it) or stand-ins for the two
# kinds the operator uses. Always removed at the end (--keep too): an operator started later would
# otherwise take the cluster for one running KubeVirt.
kubevirt_crds="${NMO_KUBEVIRT_CRDS:-${root}/../shared/kubevirt/crds.yaml}"
kubevirt_stand_ins="${root}/test/e2e/support/kubevirt_stand_in_crds.yaml"
kubevirt_installed=0
remove_kubevirt() {
  ((kubevirt_installed)) || return 0
  [[ -n "${KUBECONFIG:-}" ]] || return 0
  note "Removing KubeVirt's CRDs again (later operators must not find KubeVirt):"
  if [[ -f "${kubevirt_crds}" ]]; then
    run kubectl delete -f "${kubevirt_crds}" --ignore-not-found --timeout=60s || true
  else
    run kubectl delete -f "${kubevirt_stand_ins}" --ignore-not-found --timeout=60s || true
  fi
  kubevirt_installed=0
}

# On an early exit (failure, Ctrl-C): undo what the demo did.
on_exit() {
  local status=$?
  # A second Ctrl-C must not leave the operator running or the node cordoned: the cleanup is
  # bounded (60 s for the NodeMaintenances, 10 s for the operator).
  trap '' INT TERM
  trap - EXIT
  ((status == 0)) || note "(cleaning up; this takes a few seconds)"
  stop_operator
  remove_kubevirt
  remove_workloads
  if ((status != 0)); then
    printf '\n%sThe demo stopped early (exit status %d).%s Operator log: %s\n' "${yellow}" "${status}" "${off}" "${operator_log}" >&2
  fi
  exit "${status}"
}

# --- 1. build and cluster ---------------------------------------------------------------
section "Building the operator (C++) and starting the local cluster"
note "The cluster is real Kubernetes (etcd, kube-apiserver, controller-manager, scheduler) on"
note "127.0.0.1; kwok plays the kubelets, so pods are simulated and start at once."
cmake --preset dev >/dev/null
cmake --build --preset dev --target node-maintenance-operator kubectl-maintenance
if ! hack/cluster-status.sh >/dev/null 2>&1; then
  hack/cluster-up.sh >/dev/null
fi
export KUBECONFIG="${dir}/admin.kubeconfig"
export PATH="$(cat "${dir}/bin-dir"):${PATH}"
trap on_exit EXIT
trap 'exit 130' INT TERM

# An operator already running against this cluster (make run, an end-to-end test) would
# reconcile alongside the demo's; those name this cluster's kubeconfig on their command line.
if others="$(pgrep -f -a -- "node-maintenance-operator .*${dir}/")"; then
  die "an operator is already running; stop it first (it would reconcile alongside the demo's):
${others}"
fi

run kubectl get nodes
if [[ "$(kubectl get node "${node}" -o jsonpath='{.spec.unschedulable}{.spec.taints}')" != "" ]]; then
  die "${node} is cordoned or tainted already; run the demo on a fresh cluster (make cluster-down)"
fi

# --- 2. workloads -----------------------------------------------------------------------
section "Workloads like Amin's on ${node}" "chapters 1 and 3"
if [[ -n "$(kubectl get ns -l "${demo_label}" -o name)" ]]; then
  note "(removing the workloads of an earlier demo first)"
  kubectl delete namespace -l "${demo_label}" --wait=true --timeout=120s >/dev/null
fi
mkdir -p "${demo_dir}"
# Everything prefers node-worker-01 (so the maintained node is busy) but may run anywhere, so the
# evicted pods find a new home on the other workers.
prefer_worker_01='
      affinity:
        nodeAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 100
              preference:
                matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [node-worker-01]}]'
{
  for ns in monitoring logging calico-system shop kubevirt-system; do
    cat <<YAML
---
apiVersion: v1
kind: Namespace
metadata:
  name: ${ns}
  labels: {demo.node-maintenance/owner: make-demo}
YAML
  done
  daemonset() { # daemonset <namespace> <name>
    cat <<YAML
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: $2, namespace: $1}
spec:
  selector: {matchLabels: {app: $2}}
  template:
    metadata: {labels: {app: $2}}
    spec:
      containers: [{name: $2, image: registry.invalid/$2:1}]
YAML
  }
  daemonset monitoring node-exporter
  daemonset logging fluentd
  daemonset calico-system calico-node
  deployment() { # deployment <namespace> <name> <replicas> [extra pod spec]
    cat <<YAML
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: $2, namespace: $1}
spec:
  replicas: $3
  selector: {matchLabels: {app: $2}}
  template:
    metadata: {labels: {app: $2}}
    spec:
      terminationGracePeriodSeconds: 5${prefer_worker_01}
      containers:
        - name: $2
          image: registry.invalid/$2:1${4:-}
YAML
  }
  deployment shop web 4
  deployment logging log-aggregator 1 '
          volumeMounts: [{name: buffer, mountPath: /var/buffer}]
      volumes: [{name: buffer, emptyDir: {}}]'
  for vm in vm-database-01 vm-webserver-02 vm-order-processing; do
    deployment kubevirt-system "virt-launcher-${vm}" 1
  done
  cat <<YAML
---
# The customer's rule: vm-order-processing must always run, even with one replica.
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: vm-order-processing-pdb, namespace: kubevirt-system}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: virt-launcher-vm-order-processing}}
YAML
} >"${demo_dir}/workloads.yaml"
cat <<TEXT
  DaemonSets (one pod per worker; a drain leaves them alone, like kubectl drain --ignore-daemonsets):
    monitoring/node-exporter, logging/fluentd, calico-system/calico-node
  Deployments (their pods must leave ${node}; they are rescheduled elsewhere):
    shop/web (4 replicas), logging/log-aggregator (an emptyDir volume: its data is lost, as
    kubectl drain --delete-emptydir-data), kubevirt-system/virt-launcher-vm-database-01,
    -vm-webserver-02 and -vm-order-processing (stand-ins for KubeVirt VM pods, 1 replica each)
  PodDisruptionBudget kubevirt-system/vm-order-processing-pdb: minAvailable 1 for a single
    replica, so no eviction of that pod is ever allowed
TEXT
run kubectl apply -f "${demo_dir}/workloads.yaml"
for ns in monitoring logging calico-system shop kubevirt-system; do
  until kubectl get serviceaccount default -n "${ns}" >/dev/null 2>&1; do sleep 0.2; done
done
for d in shop/web logging/log-aggregator kubevirt-system/virt-launcher-vm-database-01 \
  kubevirt-system/virt-launcher-vm-webserver-02 kubevirt-system/virt-launcher-vm-order-processing; do
  kubectl rollout status -n "${d%/*}" "deployment/${d#*/}" --timeout=180s >/dev/null
done
for d in monitoring/node-exporter logging/fluentd calico-system/calico-node; do
  kubectl rollout status -n "${d%/*}" "daemonset/${d#*/}" --timeout=180s >/dev/null
done
# The disruption controller must have counted the pod, or the PDB would not block yet.
kubectl wait pdb/vm-order-processing-pdb -n kubevirt-system --timeout=120s \
  --for=jsonpath='{.status.currentHealthy}'=1 >/dev/null
run kubectl get pods -A -o wide --field-selector "spec.nodeName=${node}"
run kubectl get pdb -n kubevirt-system

# --- 3. the operator --------------------------------------------------------------------
section "Installing the CRD and RBAC, starting the operator as its ServiceAccount"
note "hack/run.sh applies deploy/crd, deploy/namespaces and deploy/rbac, writes a kubeconfig with a"
note "token of ServiceAccount node-maintenance-operator-controller-manager (not cluster admin),"
note "starts build/bin/node-maintenance-operator in the background with its admission webhook on"
note "127.0.0.1 (a certificate from a local CA in .cluster/webhook-certs) and registers the"
note "ValidatingWebhookConfiguration ${webhook_name} pointing at it."
show "hack/run.sh --background --no-build --log-file ${operator_log}"
operator_pid="$(hack/run.sh --background --no-build --log-file "${operator_log}" 2>"${demo_dir}/run.err")" ||
  { cat "${demo_dir}/run.err" >&2; die "hack/run.sh could not start the operator"; }
echo "operator pid ${operator_pid}; its log: ${operator_log}"
run_sh "kubectl get validatingwebhookconfiguration ${webhook_name} -o jsonpath='{.webhooks[0].clientConfig.url}{\"\\n\"}'"
# A NodeMaintenance left by an interrupted earlier demo is removed (by this operator).
kubectl delete nm "${demo_nms[@]}" --ignore-not-found --timeout=60s >/dev/null

# --- 4. the NodeMaintenance -------------------------------------------------------------
section "Asking for maintenance of ${node}: one NodeMaintenance" "chapter 2"
cat >"${demo_dir}/${nm}.yaml" <<YAML
apiVersion: nodemaintenance.medik8s.io/v1beta1
kind: NodeMaintenance
metadata:
  name: ${nm}
spec:
  nodeName: ${node}
  reason: "Hardware memory upgrade - scheduled maintenance window"
YAML
run cat "${demo_dir}/${nm}.yaml"
created_us="$(now_us)"
run kubectl apply -f "${demo_dir}/${nm}.yaml"
# Events are selected by the object's uid: an earlier object of the same name (an earlier demo)
# may have left Events that have not expired yet.
nm_uid="$(kubectl get nm "${nm}" -o jsonpath='{.metadata.uid}')"

# --- 5. progress ------------------------------------------------------------------------
# Prints one line per change of the maintenance's status, like `kubectl get nm -w`, until it
# is Succeeded (returns 0) or, with --or-blocked, has been blocked by a PDB with nothing
# changing for 3 s (returns 1).
watch_progress() {
  local or_blocked=0
  [[ "${1:-}" == --or-blocked ]] && or_blocked=1
  local last="" since_change="" out phase progress evicted total pending reasons line
  local deadline=$((SECONDS + 180))
  while ((SECONDS < deadline)); do
    out="$(kubectl get nm "${nm}" -o jsonpath='{.status.phase}|{.status.drainProgress}|{.status.evictionPods}|{.status.totalPods}|{.status.pendingPodsRefs[*].name}|{.status.pendingPodsRefs[*].reason}' 2>/dev/null)" || out=""
    IFS='|' read -r phase progress evicted total pending reasons <<<"${out}"
    line="$(printf '%-10s %4s%%   evicted %s of %s' "${phase:-<none>}" "${progress:-0}" "${evicted:-0}" "${total:-?}")"
    [[ -n "${pending}" ]] && line+="   pending: ${pending} (${reasons})"
    if [[ "${line}" != "${last}" ]]; then
      printf '  %6ss  %s  %s\n' "$(seconds_since "${created_us}")" "${nm}" "${line}"
      last="${line}"
      since_change="${SECONDS}"
    fi
    if [[ -z "${first_blocked_us}" && "${reasons}" == *BlockedByPDB* ]]; then
      first_blocked_us="$(now_us)"
    fi
    [[ "${phase}" == Succeeded ]] && return 0
    if ((or_blocked)) && [[ "${phase}" == Running && "${reasons}" == *BlockedByPDB* ]] &&
      ((SECONDS - since_change >= 3)); then
      return 1
    fi
    sleep 0.25
  done
  die "${nm} did not get there within 180 s (operator log: ${operator_log})"
}
section "Watching the drain" "chapter 3"
note "What kubectl get nodemaintenance ${nm} -w shows, one line per change"
note "(seconds since the NodeMaintenance was created; DaemonSet pods are not counted):"
first_blocked_us=""
relaxed_us=""
blocked=0
watch_progress --or-blocked || blocked=1

section "The node: cordoned and tainted" "chapter 5"
run kubectl get node "${node}"
run_sh "kubectl describe node ${node} | grep -A2 Taints"
note "node.kubernetes.io/unschedulable keeps the scheduler away; medik8s.io/drain=draining is the"
note "operator's own mark, so no unexpected pod runs here until the maintenance ends."
run kubectl get pods -A -o wide --field-selector "spec.nodeName=${node}"
note "Who holds what (story, chapter 9): the operator's budget slot and the medik8s node lease"
note "shared with Node Health Check and Self Node Remediation."
run kubectl get lease -n node-maintenance-operator-system
run kubectl get lease -n medik8s-leases

if ((blocked)); then
  section "Blocked by a PodDisruptionBudget" "chapter 4"
  note "The operator never bypasses a PDB: it keeps retrying and says why in the status and in Events."
  run_sh "kubectl get nodemaintenance ${nm} -o yaml | sed -n '/^status:/,\$p' | grep -v -e '^ *lastTransitionTime:' -e '^ *observedGeneration:'"
  note "Its Events (selected by uid, as a name may have been used before):"
  run kubectl get events --field-selector "involvedObject.uid=${nm_uid}" --sort-by=.lastTimestamp

  section "One maintenance at a time" "chapter 6"
  note "The default budget (--max-parallel-maintenances=1) is taken by ${nm}, so a second"
  note "maintenance waits in Pending and touches nothing:"
  show "kubectl apply -f maintenance-worker-02.yaml   # nodeName: node-worker-02"
  kubectl apply -f - <<'YAML'
apiVersion: nodemaintenance.medik8s.io/v1beta1
kind: NodeMaintenance
metadata:
  name: maintenance-worker-02
spec:
  nodeName: node-worker-02
  reason: "Hardware memory upgrade - next in line"
YAML
  second_uid="$(kubectl get nm maintenance-worker-02 -o jsonpath='{.metadata.uid}')"
  for _ in $(seq 1 40); do
    [[ -n "$(kubectl get events -o name 2>/dev/null \
      --field-selector "involvedObject.uid=${second_uid},reason=BlockedByNodeHealthCheck")" ]] && break
    sleep 0.25
  done
  run kubectl get nm
  run kubectl get events --field-selector "involvedObject.uid=${second_uid},reason=BlockedByNodeHealthCheck"
  note "We only wanted to see it wait; deleting a Pending maintenance leaves node-worker-02 as it was."
  run kubectl delete nodemaintenance maintenance-worker-02

  section "Resolving the block as Amin does: relax the PDB for the maintenance window" "chapter 4, option C"
  note "Only the application owner's consent lets the pod go; here we relax the budget ourselves."
  relaxed_us="$(now_us)"
  run_sh "kubectl patch pdb vm-order-processing-pdb -n kubevirt-system --type=merge -p '{\"spec\":{\"minAvailable\":0}}'"
  note "Kubernetes' disruption controller recomputes the budget: one disruption is allowed now."
  run_sh "kubectl wait pdb/vm-order-processing-pdb -n kubevirt-system --for=jsonpath='{.status.disruptionsAllowed}'=1 --timeout=60s"
  note "The operator retries the eviction on its own (backoff of 5 to 30 s) and finishes:"
  watch_progress
fi
succeeded_us="$(now_us)"
took="$(seconds_since "${created_us}")"

section "Succeeded: ${node} is empty and safe for the hardware work" "chapter 3"
run_sh "kubectl get nodemaintenance ${nm} -o yaml | sed -n '/^status:/,\$p' | grep -v -e '^ *lastTransitionTime:' -e '^ *observedGeneration:'"
run kubectl get nm
run kubectl get node "${node}"
note "Only DaemonSet pods are left on ${node}; the others run elsewhere now:"
run kubectl get pods -A -o wide --field-selector "spec.nodeName=${node}"
run kubectl get pods -n kubevirt-system -o wide

# --- chapter 8: the admission webhook ----------------------------------------------------
# expect_denied <message> <command...>: runs a command the webhook must refuse, prints kubectl's
# answer, and stops the demo if it was not refused with that message.
expect_denied() {
  local expected=$1 out
  shift
  if out="$("$@" 2>&1)"; then
    echo "${out}"
    die "the webhook let that through"
  fi
  echo "${out}"
  [[ "${out}" == *"admission webhook \"${webhook_name}\" denied the request: ${expected}"* ]] ||
    die "expected the webhook's denial: ${expected}"
}
section "Changing the node of a maintenance: the admission webhook says no" "chapter 8"
note "Brian's shortcut: point the existing NodeMaintenance at another node. The API server asks the"
note "operator's validating webhook first (failurePolicy Fail), and it refuses:"
show "kubectl patch nm ${nm} --type merge -p '{\"spec\":{\"nodeName\":\"node-worker-07\"}}'"
expect_denied "nodeName is immutable and cannot be changed after creation" \
  kubectl patch nm "${nm}" --type merge -p '{"spec":{"nodeName":"node-worker-07"}}'
run_sh "kubectl get nm ${nm} -o jsonpath='{.spec.nodeName}{\"\\n\"}'"
note "A maintenance for a node that does not exist fails fast instead of retrying forever:"
cat >"${demo_dir}/maintenance-typo.yaml" <<'YAML'
apiVersion: nodemaintenance.medik8s.io/v1beta1
kind: NodeMaintenance
metadata:
  name: maintenance-typo
spec:
  nodeName: node-that-does-not-exist
YAML
run cat "${demo_dir}/maintenance-typo.yaml"
show "kubectl apply -f - <${demo_dir}/maintenance-typo.yaml"
expect_denied 'node "node-that-does-not-exist" not found in cluster' \
  kubectl apply -f - <"${demo_dir}/maintenance-typo.yaml"
note "Changing anything else (the reason, labels, finalizers, status) is allowed; to maintain"
note "another node, create another NodeMaintenance."

# --- 6. the end of the maintenance ------------------------------------------------------
section "Maintenance done: deleting the NodeMaintenance restores the node" "chapter 5"
run kubectl delete nodemaintenance "${nm}"
run kubectl get node "${node}"
run_sh "kubectl describe node ${node} | grep -A1 Taints"
note "Everything the operator reported about ${nm}, oldest first (story, chapter 9):"
run kubectl get events --field-selector "involvedObject.uid=${nm_uid}" --sort-by=.lastTimestamp
note "And on the node (the newest UncordonNode Event):"
run_sh "kubectl get events --field-selector involvedObject.name=${node},reason=UncordonNode --sort-by=.lastTimestamp | sed -n '1p;\$p'"

# --- 6b. chapter 4 without the admin: a KubeVirt VM the operator live-migrates ------------
vm_ns=kubevirt-vms
vm_node=node-worker-02
vm_target=node-worker-03
vm_nm=maintenance-worker-02
vm_source=virt-launcher-vm-order-processing-x
section "A KubeVirt VM that an eviction would shut down: the operator live-migrates it" "chapter 4, option B, done by the operator"
note "Amin's vm-order-processing has no eviction strategy: evicting its pod would shut it down. The"
note "operator creates a VirtualMachineInstanceMigration instead and waits for the VM to leave."
kubevirt_installed=1
if [[ -f "${kubevirt_crds}" ]]; then
  note "KubeVirt's own CRDs (${kubevirt_crds}) serve kubevirt.io/v1:"
  run kubectl apply --server-side -f "${kubevirt_crds}"
else
  note "KubeVirt's CRDs are not beside the checkout (shared/kubevirt/crds.yaml): stand-ins serve kubevirt.io/v1."
  run kubectl apply -f "${kubevirt_stand_ins}"
fi
kubectl wait crd/virtualmachineinstances.kubevirt.io crd/virtualmachineinstancemigrations.kubevirt.io \
  --for=condition=Established --timeout=60s >/dev/null
# launcher_pod <name> <node>: the pod KubeVirt runs vm-order-processing in, on <node>.
launcher_pod() {
  cat <<YAML
---
apiVersion: v1
kind: Pod
metadata:
  name: $1
  namespace: ${vm_ns}
  labels: {kubevirt.io: virt-launcher}
  annotations: {kubevirt.io/domain: vm-order-processing}
spec:
  nodeName: $2
  restartPolicy: Never
  containers: [{name: compute, image: registry.invalid/virt-launcher:1}]
YAML
}
cat >"${demo_dir}/vm-order-processing.yaml" <<YAML
apiVersion: v1
kind: Namespace
metadata: {name: ${vm_ns}, labels: {${demo_label%%=*}: ${demo_label#*=}}}
---
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: vm-order-processing, namespace: ${vm_ns}}
spec: {domain: {devices: {}}}   # no evictionStrategy, as in the story
status:
  nodeName: ${vm_node}
  phase: Running
  conditions: [{type: LiveMigratable, status: "True"}]
YAML
launcher_pod "${vm_source}" "${vm_node}" >>"${demo_dir}/vm-order-processing.yaml"
run kubectl apply -f "${demo_dir}/vm-order-processing.yaml"
kubectl wait pod "${vm_source}" -n "${vm_ns}" --for=condition=Ready --timeout=60s >/dev/null
note "What the operator would do, before asking (kubectl maintenance plan reads the same verdict):"
run_sh "build/bin/kubectl-maintenance plan ${vm_node} | grep -e vm-order-processing -e Verdict" || true
show "kubectl apply -f maintenance-worker-02.yaml   # nodeName: ${vm_node}"
kubectl apply -f - <<YAML
apiVersion: nodemaintenance.medik8s.io/v1beta1
kind: NodeMaintenance
metadata: {name: ${vm_nm}}
spec:
  nodeName: ${vm_node}
  reason: "Hardware memory upgrade - vm-order-processing must not stop"
YAML
vm_uid="$(kubectl get nm "${vm_nm}" -o jsonpath='{.metadata.uid}')"
vmim=""
for _ in $(seq 1 120); do
  vmim="$(kubectl get vmim -n "${vm_ns}" -l "nodemaintenance.medik8s.io/maintenance-uid=${vm_uid}" \
    -o jsonpath='{.items[0].metadata.name}' 2>/dev/null)" || vmim=""
  [[ -n "${vmim}" ]] && break
  sleep 0.25
done
[[ -n "${vmim}" ]] || die "the operator created no migration for vm-order-processing"
note "The operator's migration, labelled and owned by ${vm_nm}:"
run kubectl get vmim -n "${vm_ns}" -L nodemaintenance.medik8s.io/attempt
note "virt-controller cannot run here, so the demo plays it, as the end-to-end tests do: the"
note "migration runs..."
run kubectl patch vmim "${vmim}" -n "${vm_ns}" --subresource=status --type=merge -p '{"status":{"phase":"Running"}}'
vm_ref_message() {
  kubectl get nm "${vm_nm}" -o jsonpath="{.status.pendingPodsRefs[?(@.name==\"${vm_source}\")].message}"
}
for _ in $(seq 1 40); do
  [[ "$(vm_ref_message)" == *": Running" ]] && break
  sleep 0.25
done
run kubectl get nm "${vm_nm}" -o jsonpath='{range .status.pendingPodsRefs[*]}{.namespace}/{.name}: {.reason}: {.message}{"\n"}{end}'
note "...the VM moves to ${vm_target} (its new launcher pod there), and its source pod completes:"
launcher_pod virt-launcher-vm-order-processing-y "${vm_target}" | kubectl apply -f - >/dev/null
kubectl patch vmi vm-order-processing -n "${vm_ns}" --type=merge -p "{\"status\":{\"nodeName\":\"${vm_target}\"}}" >/dev/null
kubectl patch pod "${vm_source}" -n "${vm_ns}" --subresource=status --type=merge -p '{"status":{"phase":"Succeeded"}}' >/dev/null
run kubectl patch vmim "${vmim}" -n "${vm_ns}" --subresource=status --type=merge -p '{"status":{"phase":"Succeeded"}}'
run kubectl wait nm "${vm_nm}" --for=jsonpath='{.status.phase}'=Succeeded --timeout=60s
run kubectl get vmim -n "${vm_ns}"
run kubectl get vmi vm-order-processing -n "${vm_ns}" -o jsonpath='{.metadata.name} runs on {.status.nodeName}{"\n"}'
run kubectl get pods -n "${vm_ns}" -o wide
note "No eviction ever reached the VM's pod; the Events say what happened:"
run kubectl get events --field-selector "involvedObject.uid=${vm_uid}" --sort-by=.lastTimestamp
run kubectl delete nodemaintenance "${vm_nm}"
remove_kubevirt

# --- 7. summary -------------------------------------------------------------------------
stop_operator
remove_workloads
section "Summary"
printf '%s%s on %s: created -> Succeeded in %s s%s' "${green}${bold}" "${nm}" "${node}" "${took}" "${off}"
echo
if ((blocked)); then
  us_text() { printf '%d.%01d' $(($1 / 1000000)) $(($1 % 1000000 / 100000)); }
  echo "  the PDB first refused an eviction $(us_text $((first_blocked_us - created_us))) s after creation;"
  echo "  the demo then looked around and relaxed the PDB $(us_text $((relaxed_us - created_us))) s after creation;"
  echo "  Succeeded $(us_text $((succeeded_us - relaxed_us))) s after that (blocked evictions are retried with a 5-30 s backoff)."
fi
echo "Operator log (text format): ${operator_log}"
if ((keep)); then
  echo "The demo workloads stay (--keep); remove them with: kubectl delete namespace -l ${demo_label}"
fi
# The same Kubernetes version for the commands below (KUBE_VERSION=1.27 make demo).
version_arg=""
testenv_default_version || version_arg=" KUBE_VERSION=$(testenv_kube_version)"
cat <<TEXT
Not shown here: chapter 7 (a control-plane node waits while etcd quorum would be lost).
Chapter 4's VM: the operator live-migrated it; the VM tests do the same on KubeVirt's own CRDs.
Read more: README.md, deploy/README.md (installing into a real cluster), docs/.

The cluster keeps running. To poke at it by hand:
  eval "\$(make -s cluster-env${version_arg})"     # KUBECONFIG and the matching kubectl
  make run${version_arg}                          # the operator in the foreground, as its ServiceAccount,
                                    # its webhook registered until Ctrl-C
  kubectl apply -f $(realpath --relative-to="${root}" "${demo_dir}")/maintenance-worker-01.yaml
Stop the cluster with: make cluster-down${version_arg}
TEXT
trap - EXIT INT TERM
