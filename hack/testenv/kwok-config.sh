#!/usr/bin/env bash
# Prints kwok's configuration: kwok's own "fast" stages from its Go module, plus the
# fault hooks the tests need:
#   - a node labelled test.node-maintenance/not-ready (any value) is left alone by the
#     node stages, so a test can set its Ready condition to False and it stays so;
#   - a pod annotated test.node-maintenance/slow-delete=true is deleted only when its
#     grace period has run out, so tests can see pods stuck terminating.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=hack/testenv-lib.sh
source "${root}/hack/testenv-lib.sh"

version="$(awk '$1 == "sigs.k8s.io/kwok" {print $2}' "${root}/testenv/kwok/go.mod")"
stages="$(cd "${root}/testenv/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage"
[[ -d "${stages}" ]] || die "kwok ${version} stages not found at ${stages}"

# Adds a matchExpression to the first selector of a stage file.
with_expression() { # with_expression <file> <key> <operator> [value]
  local file="$1" key="$2" op="$3" value="${4:-}"
  awk -v key="${key}" -v op="${op}" -v value="${value}" '
    { print }
    /^    matchExpressions:$/ && !done {
      print "    - key: '\''" key "'\''"
      print "      operator: '\''" op "'\''"
      if (value != "") { print "      values:"; print "      - '\''" value "'\''" }
      done = 1
    }' "${file}"
}

not_ready='.metadata.labels["test.node-maintenance/not-ready"]'
slow_delete='.metadata.annotations["test.node-maintenance/slow-delete"]'

cat <<YAML
apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  manageAllNodes: true
  nodeLeaseDurationSeconds: 40
  nodeIP: 127.0.0.1
---
YAML
with_expression "${stages}/node/fast/node-initialize.yaml" "${not_ready}" DoesNotExist
echo "---"
with_expression "${stages}/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml" "${not_ready}" DoesNotExist
echo "---"
cat "${stages}/pod/fast/pod-ready.yaml"
echo "---"
cat "${stages}/pod/fast/pod-complete.yaml"
echo "---"
with_expression "${stages}/pod/fast/pod-delete.yaml" "${slow_delete}" DoesNotExist
echo "---"
cat <<YAML
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-delete-after-grace-period
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'Exists'
    - key: '${slow_delete}'
      operator: 'In'
      values:
      - 'true'
  delay:
    durationMilliseconds: 1000
    # The deletion timestamp is the moment the grace period ends.
    durationFrom:
      expressionFrom: '.metadata.deletionTimestamp'
  next:
    finalizers:
      empty: true
    delete: true
YAML
