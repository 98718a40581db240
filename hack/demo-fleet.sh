#!/usr/bin/env bash
# `make demo-fleet`: the story's fleet task in small (docs/design.md §10; the admin's SOP for the
# 22 nodes is in docs/operations.md, "The story's 22 nodes with a MaintenancePlan"): three
# workers taken out one after the other by one MaintenancePlan while a web shop keeps its
# PodDisruptionBudget.
#
#   1. builds the operator and the plugin and brings the local cluster up (3 control-plane nodes,
#      5 workers), as `make demo` does;
#   2. deploys a web shop on the workers (5 replicas spread over them) with a
#      PodDisruptionBudget that allows one pod down at a time;
#   3. starts the operator in the background as its ServiceAccount (hack/run.sh --background),
#      logging to .cluster/logs/operator-demo-fleet.log;
#   4. checks the plan with `kubectl maintenance rollout --dry-run`, then creates it: workers 01,
#      02 and 03 in that order, one at a time, at most one node of the plan unavailable, each node
#      given back when the technician says the work is done;
#   5. for each node: waits until the plan has drained it, shows `kubectl maintenance
#      plan-status` and the cordoned node, and plays the technician (`kubectl maintenance done`);
#      the plan gives the node back and waits until it is healthy and the PDB whole before the
#      next node;
#   6. waits for Succeeded and shows the plan, its Events, the nodes schedulable again and the
#      shop's pods;
#   7. deletes the plan, stops the operator (hack/run.sh --stop; also on an early exit) and
#      removes the workloads. The cluster keeps running; `make cluster-down` stops it.
#
# Options: --keep leaves the shop in place (namespace labelled
# demo.node-maintenance/owner=make-demo-fleet).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"
# shellcheck source=hack/testenv-lib.sh
source "${root}/hack/testenv-lib.sh"
# shellcheck source=hack/demo-lib.sh
source "${root}/hack/demo-lib.sh"

keep=0
for arg in "$@"; do
  case "${arg}" in
    --keep) keep=1 ;;
    *) die "unknown option ${arg} (expected --keep)" ;;
  esac
done

plan=memory-upgrade
nodes=(node-worker-01 node-worker-02 node-worker-03)
ns=fleet-shop
demo_label=demo.node-maintenance/owner=make-demo-fleet
dir="$(cluster_dir)"
demo_dir="${dir}/demo-fleet"
operator_log="${dir}/logs/operator-demo-fleet.log"
operator_pid=""

# Deletes the plan while the operator still runs (its finalizer stops at a safe point and gives
# back a node in progress), then any NodeMaintenance it left, then stops the operator this demo
# started and removes its webhook configuration. Idempotent.
stop_operator() {
  [[ -n "${operator_pid}" ]] || return 0
  if kill -0 "${operator_pid}" 2>/dev/null; then
    kubectl delete mp "${plan}" --ignore-not-found --timeout=60s >/dev/null 2>&1 || true
    kubectl delete nm -l "nodemaintenance.medik8s.io/plan=${plan}" --ignore-not-found \
      --timeout=60s >/dev/null 2>&1 || true
  fi
  section "Stopping the operator this demo started (pid ${operator_pid})"
  run hack/run.sh --stop || true
  operator_pid=""
}

remove_workloads() {
  ((keep == 0)) || return 0
  [[ -n "${KUBECONFIG:-}" ]] || return 0
  [[ -n "$(kubectl get ns -l "${demo_label}" -o name 2>/dev/null)" ]] || return 0
  note "Removing the shop (namespace labelled ${demo_label}; --keep leaves it):"
  run kubectl delete namespace -l "${demo_label}" --wait=false
}

on_exit() {
  local status=$?
  trap '' INT TERM
  trap - EXIT
  ((status == 0)) || note "(cleaning up; this takes a few seconds)"
  stop_operator
  remove_workloads
  if ((status != 0)); then
    printf '\n%sThe demo stopped early (exit status %d).%s Operator log: %s\n' "${yellow}" \
      "${status}" "${off}" "${operator_log}" >&2
  fi
  exit "${status}"
}

# --- 1. build and cluster ---------------------------------------------------------------
section "Building the operator and the plugin (C++), starting the local cluster"
note "The cluster is real Kubernetes (etcd, kube-apiserver, controller-manager, scheduler) on"
note "127.0.0.1; kwok plays the kubelets, so pods are simulated and start at once."
cmake --preset dev >/dev/null
cmake --build --preset dev --target node-maintenance-operator kubectl-maintenance
if ! hack/cluster-status.sh >/dev/null 2>&1; then
  hack/cluster-up.sh >/dev/null
fi
export KUBECONFIG="${dir}/admin.kubeconfig"
# kubectl finds the plugin on PATH: `kubectl maintenance ...` runs build/bin/kubectl-maintenance.
export PATH="${root}/build/bin:$(cat "${dir}/bin-dir"):${PATH}"
trap on_exit EXIT
trap 'exit 130' INT TERM

if others="$(pgrep -f -a -- "node-maintenance-operator .*${dir}/")"; then
  die "an operator is already running; stop it first (it would reconcile alongside the demo's):
${others}"
fi
for node in "${nodes[@]}"; do
  if [[ "$(kubectl get node "${node}" -o jsonpath='{.spec.unschedulable}{.spec.taints}')" != "" ]]; then
    die "${node} is cordoned or tainted already; run the demo on a fresh cluster (make cluster-down)"
  fi
done
run kubectl get nodes

# --- 2. workloads -----------------------------------------------------------------------
section "A web shop on the workers, with a PodDisruptionBudget" "chapter 1"
if [[ -n "$(kubectl get ns -l "${demo_label}" -o name)" ]]; then
  note "(removing the shop of an earlier demo first)"
  kubectl delete namespace -l "${demo_label}" --wait=true --timeout=120s >/dev/null
fi
mkdir -p "${demo_dir}"
cat >"${demo_dir}/shop.yaml" <<YAML
apiVersion: v1
kind: Namespace
metadata:
  name: ${ns}
  labels: {${demo_label%%=*}: ${demo_label#*=}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ${ns}}
spec:
  replicas: 5
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      topologySpreadConstraints:
        - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway,
           labelSelector: {matchLabels: {app: web}}}
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
              - matchExpressions: [{key: node-role.kubernetes.io/control-plane, operator: DoesNotExist}]
      containers: [{name: web, image: registry.invalid/web:1}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web-pdb, namespace: ${ns}}
spec:
  maxUnavailable: 1
  selector: {matchLabels: {app: web}}
YAML
run kubectl apply -f "${demo_dir}/shop.yaml"
kubectl wait deployment/web -n "${ns}" --for=condition=Available --timeout=120s >/dev/null
kubectl wait pdb/web-pdb -n "${ns}" --timeout=120s --for=jsonpath='{.status.currentHealthy}'=5 >/dev/null
run kubectl get pods -n "${ns}" -o wide
run kubectl get pdb -n "${ns}"

# --- 3. the operator --------------------------------------------------------------------
section "Starting the operator as its ServiceAccount"
note "hack/run.sh applies deploy/crd (NodeMaintenance and MaintenancePlan), deploy/namespaces and"
note "deploy/rbac, and starts build/bin/node-maintenance-operator in the background."
show "hack/run.sh --background --no-build --log-file ${operator_log}"
operator_pid="$(hack/run.sh --background --no-build --log-file "${operator_log}" 2>"${demo_dir}/run.err")" ||
  { cat "${demo_dir}/run.err" >&2; die "hack/run.sh could not start the operator"; }
echo "operator pid ${operator_pid}; its log: ${operator_log}"
# A plan left by an interrupted earlier demo is removed (by this operator).
kubectl delete mp "${plan}" --ignore-not-found --timeout=60s >/dev/null

# --- 4. the plan ------------------------------------------------------------------------
section "One plan for three workers: kubectl maintenance rollout" "the 22 nodes, in small"
rollout=(kubectl maintenance rollout "${plan}" --nodes "$(
  IFS=,
  echo "${nodes[*]}"
)" --reason "Hardware memory upgrade" --max-unavailable 1 --done-when Confirmed)
note "First a server-side dry run: the API server checks the plan against the CRD's rules."
run "${rollout[@]}" --dry-run
started_us="$(now_us)"
run "${rollout[@]}"
run kubectl get mp "${plan}"

# --- 5. node after node -----------------------------------------------------------------
# Waits until the plan shows `node` in `phase` (or the plan failed); prints the wait.
wait_node_phase() { # wait_node_phase <node> <phase> <seconds>
  local node="$1" phase="$2" deadline=$((SECONDS + $3)) now plan_phase
  while ((SECONDS < deadline)); do
    now="$(kubectl get mp "${plan}" -o jsonpath="{.status.nodes[?(@.name==\"${node}\")].phase}")"
    [[ "${now}" == "${phase}" ]] && return 0
    plan_phase="$(kubectl get mp "${plan}" -o jsonpath='{.status.phase}')"
    [[ "${plan_phase}" == Failed || "${plan_phase}" == Paused ]] &&
      die "the plan is ${plan_phase}: $(kubectl get mp "${plan}" -o jsonpath='{.status.message}')"
    sleep 0.5 # polling the plan's status; the deadline bounds the wait
  done
  die "${node} did not reach ${phase} within $3 s"
}

for node in "${nodes[@]}"; do
  section "${node}: drained by the plan, then the technician's turn" "chapter 2"
  wait_node_phase "${node}" InMaintenance 120
  run kubectl maintenance plan-status "${plan}"
  run kubectl get node "${node}"
  run_sh "kubectl get pods -n ${ns} -o wide --no-headers | awk '{print \$1, \$3, \$7}'"
  note "The memory is upgraded. The technician says so; the plan gives the node back, waits until"
  note "it is Ready and schedulable and web-pdb is whole again, then takes the next node."
  run kubectl maintenance done "${node}"
done

# --- 6. the end -------------------------------------------------------------------------
section "Every node done"
deadline=$((SECONDS + 120))
until [[ "$(kubectl get mp "${plan}" -o jsonpath='{.status.phase}')" == Succeeded ]]; do
  ((SECONDS < deadline)) || die "the plan did not succeed within 120 s"
  sleep 0.5 # polling the plan's status; the deadline bounds the wait
done
run kubectl maintenance plan-status "${plan}"
run kubectl get mp "${plan}"
note "The plan's Events (kubectl orders them by their time in whole seconds; within one second"
note "the order is arbitrary: plan-status above is the history in order)."
run_sh "kubectl get events --field-selector involvedObject.kind=MaintenancePlan,involvedObject.name=${plan} --sort-by=.lastTimestamp -o custom-columns=TYPE:.type,REASON:.reason,MESSAGE:.message"
run kubectl get nodes "${nodes[@]}"
run kubectl get pods -n "${ns}" -o wide
printf '\n%sThree workers maintained one after the other in %s s, web-pdb honoured throughout.%s\n' \
  "${green}" "$(seconds_since "${started_us}")" "${off}"

# --- 7. cleanup -------------------------------------------------------------------------
section "Cleaning up"
run kubectl delete mp "${plan}" --timeout=60s
stop_operator
remove_workloads
trap - EXIT
