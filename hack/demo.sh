#!/usr/bin/env bash
# `make demo`: builds everything, brings the local cluster up, deploys a small workload like
# the story's (a Deployment, a DaemonSet and a PodDisruptionBudget) and shows the cluster the
# operator works on. The cluster stays up afterwards; `make cluster-down` stops it.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"
# shellcheck source=hack/testenv-lib.sh
source "${root}/hack/testenv-lib.sh"

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
[[ -t 1 ]] || say() { printf '\n== %s\n' "$*"; }

say "Building the operator (C++)"
cmake --preset dev >/dev/null
cmake --build --preset dev
bin_dir="$(hack/testenv-build.sh)"

say "Starting the local control plane (etcd, kube-apiserver, controller-manager, scheduler, kwok)"
hack/cluster-up.sh >/dev/null
export KUBECONFIG="$(cluster_dir)/admin.kubeconfig"
export PATH="${bin_dir}:${root}/build/bin:${PATH}"

say "Nodes (3 control-plane, 5 workers, kubelets simulated by kwok)"
kubectl get nodes -o wide

say "A workload like the story's: a web Deployment, a node agent DaemonSet and a PDB"
kubectl create namespace demo --dry-run=client -o yaml | kubectl apply -f - >/dev/null
until kubectl get serviceaccount default -n demo >/dev/null 2>&1; do sleep 0.2; done
kubectl apply -n demo -f - <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 6
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{name: web, image: registry.invalid/web:1}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: node-agent
spec:
  selector: {matchLabels: {app: node-agent}}
  template:
    metadata: {labels: {app: node-agent}}
    spec:
      containers: [{name: agent, image: registry.invalid/agent:1}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web
spec:
  minAvailable: 4
  selector: {matchLabels: {app: web}}
YAML
kubectl rollout status -n demo deployment/web --timeout=120s
kubectl rollout status -n demo daemonset/node-agent --timeout=120s
kubectl get pods -n demo -o wide
kubectl get pdb -n demo

say "What the operator does with this (once it is built)"
cat <<'TEXT'
Create a NodeMaintenance naming node-worker-01: the operator waits until taking the node out
is safe, cordons and taints it, evicts the web pods through the Eviction API while the PDB
keeps at least 4 web pods running (DaemonSet pods stay), and reports progress in the
object's status and in Events. Deleting the NodeMaintenance uncordons the node.

The cluster keeps running. To poke at it by hand:
  eval "$(make -s cluster-env)"
  kubectl get nodes
Stop it with: make cluster-down
TEXT
