#!/usr/bin/env bash
# Prints the default topology of docs/design.md §8: 3 control-plane nodes and 5 workers.
set -euo pipefail

node() { # node <name> <role>
  cat <<YAML
---
apiVersion: v1
kind: Node
metadata:
  name: $1
  labels:
    kubernetes.io/hostname: $1
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    node-role.kubernetes.io/$2: ""
  annotations:
    node.alpha.kubernetes.io/ttl: "0"
    kwok.x-k8s.io/node: fake
YAML
  if [[ "$2" == control-plane ]]; then
    cat <<YAML
spec:
  taints:
  - key: node-role.kubernetes.io/control-plane
    effect: NoSchedule
YAML
  fi
}

for i in 01 02 03; do node "node-master-${i}" control-plane; done
for i in 01 02 03 04 05; do node "node-worker-${i}" worker; done
