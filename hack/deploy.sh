#!/usr/bin/env bash
# `make deploy` / `make undeploy`: the operator's image and deploy/default, through an overlay
# for the local cluster's real node, as a user installs it (docs/operations.md, "Install").
#
#   hack/deploy.sh up [--image-archive FILE] [--cert openssl|none]
#       brings the cluster and its real node up when needed, builds the image (make image) unless
#       an archive is given, loads it into the node's containerd, makes the webhook's serving
#       certificate the way deploy/webhook/README.md says ("Without cert-manager"; --cert none
#       leaves the Secret and the caBundle to the caller), applies the overlay and waits until the
#       manager is rolled out
#   hack/deploy.sh down
#       uninstalls as docs/operations.md says: every MaintenancePlan, then every NodeMaintenance
#       (the operator restores the nodes), then everything deploy/default created (not the
#       shared namespace medik8s-leases, which it does not ship)
#   hack/deploy.sh overlay
#       only writes the overlay and prints its directory
#
# The overlay (written to .cluster/deploy/, since it names this cluster's ports) changes only
# what one loopback node needs: the image and its pull policy, one replica on the real node's
# host network with its own ports (and the Pod Security level that admits it), the API server's
# address for in-cluster clients, and the webhook Service's way to the pod: there is no
# kube-proxy behind a ClusterIP here, and no Endpoints may hold a loopback address.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"
# shellcheck source=hack/testenv-lib.sh
source "${root}/hack/testenv-lib.sh"
log() { printf '[deploy %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

dir="$(cluster_dir)"
ns=node-maintenance-operator-system
deployment=node-maintenance-operator-controller-manager
webhook_config=nodemaintenance-validation.medik8s.io
webhook_service=node-maintenance-operator-webhook-service
cert_secret=node-maintenance-operator-webhook-server-cert
image="${NMO_IMAGE:-localhost/node-maintenance-operator:dev}"

cluster() {
  # shellcheck source=/dev/null
  source "${dir}/ports.env"
  bin="$(cat "${dir}/bin-dir")"
  export KUBECONFIG="${dir}/admin.kubeconfig"
  kubectl=("${bin}/kubectl")
}

write_overlay() { # after cluster(); prints the overlay's directory
  local out="${dir}/deploy" node
  # shellcheck source=/dev/null
  source "${dir}/real-node.env"
  node="${REAL_NODE_NAME}"
  mkdir -p "${out}"
  cat >"${out}/kustomization.yaml" <<EOF
# Written by hack/deploy.sh for this cluster: deploy/default on the real node ${node}.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - $(realpath --relative-to="${out}" "${root}/deploy/default")
images:
  - name: node-maintenance-operator
    newName: ${image%:*}
    newTag: ${image##*:}
patches:
  - path: manager.yaml
  # The host network is outside the "restricted" Pod Security level deploy/ enforces (the
  # manager itself passes it); "privileged" is the level that admits hostNetwork.
  - target: {kind: Namespace, name: ${ns}}
    patch: |-
      - op: replace
        path: /metadata/labels/pod-security.kubernetes.io~1enforce
        value: privileged
  # The API server still calls the webhook through its Service (a service reference, checked
  # against the Service's DNS name), but no Endpoints or EndpointSlice may hold a loopback
  # address, and there is no kube-proxy behind a ClusterIP: the Service names the node's
  # loopback instead (type ExternalName), and the configuration the port the pod listens on.
  - target: {kind: Service, name: ${webhook_service}}
    patch: |-
      - op: replace
        path: /spec/type
        value: ExternalName
      - op: add
        path: /spec/externalName
        value: localhost
      - op: remove
        path: /spec/selector
      - op: replace
        path: /spec/ports/0/port
        value: ${POD_WEBHOOK_PORT}
      - op: replace
        path: /spec/ports/0/targetPort
        value: ${POD_WEBHOOK_PORT}
  - target: {kind: ValidatingWebhookConfiguration, name: ${webhook_config}}
    patch: |-
      - op: add
        path: /webhooks/0/clientConfig/service/port
        value: ${POD_WEBHOOK_PORT}
EOF
  cat >"${out}/manager.yaml" <<EOF
apiVersion: apps/v1
kind: Deployment
metadata:
  name: ${deployment}
  namespace: ${ns}
spec:
  # One loopback node: a second replica would need the same host ports.
  replicas: 1
  strategy:
    rollingUpdate:
      maxSurge: 0
      maxUnavailable: 1
  template:
    spec:
      hostNetwork: true
      dnsPolicy: ClusterFirstWithHostNet
      nodeSelector:
        node-maintenance.test/real-kubelet: "true"
      tolerations:
        - key: node-maintenance.test/real-kubelet
          operator: Exists
          effect: NoSchedule
      containers:
        - name: manager
          imagePullPolicy: Never
          args:
            - --leader-elect
            - --log-format=json
            - --metrics-bind-address=127.0.0.1:${POD_METRICS_PORT}
            - --health-probe-bind-address=127.0.0.1:${POD_HEALTH_PORT}
            - --webhook-bind-address=127.0.0.1
            - --webhook-port=${POD_WEBHOOK_PORT}
          ports:
            - \$patch: replace
            - name: https
              containerPort: ${POD_METRICS_PORT}
              protocol: TCP
            - name: health
              containerPort: ${POD_HEALTH_PORT}
              protocol: TCP
            - name: webhook-server
              containerPort: ${POD_WEBHOOK_PORT}
              protocol: TCP
          env:
            - name: KUBERNETES_SERVICE_HOST
              value: "127.0.0.1"
            - name: KUBERNETES_SERVICE_PORT
              value: "${APISERVER_PORT}"
EOF
  echo "${out}"
}

# deploy/webhook/README.md, "Without cert-manager", with this cluster's kubectl and the
# repository's one certificate script (hack/webhook-dev.sh); sets ca_bundle (the CA, base64) for
# the configuration.
openssl_certificate() {
  local work svc="${webhook_service}"
  work="$(mktemp -d)"
  hack/webhook-dev.sh certificate "${work}" 365 \
    "DNS:${svc}.${ns}.svc,DNS:${svc}.${ns}.svc.cluster.local" ||
    { rm -rf "${work}"; die "making the webhook certificate failed"; }
  "${kubectl[@]}" -n "${ns}" create secret tls "${cert_secret}" --cert="${work}/tls.crt" \
    --key="${work}/tls.key" --dry-run=client -o yaml | "${kubectl[@]}" apply -f - >/dev/null
  ca_bundle="$(base64 -w0 "${work}/ca.crt")"
  rm -rf "${work}"
}

up() {
  local archive="" cert=openssl
  while (($# > 0)); do
    case "$1" in
      --image-archive) archive="$2"; shift 2 ;;
      --cert) cert="$2"; shift 2 ;;
      *) die "unknown argument $1" ;;
    esac
  done
  if ! hack/cluster-status.sh >/dev/null 2>&1; then NMO_REAL_NODE=1 hack/cluster-up.sh >/dev/null; fi
  hack/real-node.sh up
  cluster
  if [[ -z "${archive}" ]]; then
    archive="${dir}/deploy/image.tar"
    mkdir -p "${dir}/deploy"
    NMO_IMAGE="${image}" hack/image-build.sh --archive "${archive}" >/dev/null
  fi
  hack/real-node.sh load-image "${archive}"
  local overlay existed=0
  overlay="$(write_overlay)"
  "${kubectl[@]}" get deployment -n "${ns}" "${deployment}" >/dev/null 2>&1 && existed=1
  # The CRD first: the rest of deploy/default is checked against it.
  "${kubectl[@]}" apply --server-side --force-conflicts -k deploy/crd >/dev/null
  "${kubectl[@]}" wait --for=condition=Established --timeout=60s \
    crd/nodemaintenances.nodemaintenance.medik8s.io >/dev/null
  # The shared node-lease namespace, when no other medik8s component made it (docs/operations.md,
  # "Install"): deploy/default has a Role in it but not the namespace, which uninstall keeps.
  "${kubectl[@]}" get namespace medik8s-leases >/dev/null 2>&1 ||
    "${kubectl[@]}" create namespace medik8s-leases >/dev/null
  log "kubectl apply --server-side -k ${overlay#"${root}/"}"
  "${kubectl[@]}" apply --server-side --force-conflicts -k "${overlay}" >/dev/null
  # The manager pods wait for the Secret (ContainerCreating) until it exists.
  if [[ "${cert}" == openssl ]]; then
    openssl_certificate
    "${kubectl[@]}" patch validatingwebhookconfiguration "${webhook_config}" --type=json -p \
      "[{\"op\":\"add\",\"path\":\"/webhooks/0/clientConfig/caBundle\",\"value\":\"${ca_bundle}\"}]" >/dev/null
    # Running pods would see the new certificate only when the kubelet refreshes the mount.
    if ((existed)); then "${kubectl[@]}" -n "${ns}" rollout restart "deployment/${deployment}" >/dev/null; fi
  fi
  if ! "${kubectl[@]}" -n "${ns}" rollout status "deployment/${deployment}" --timeout=180s >&2; then
    # What the manager said before it exited: a crash-looping container leaves no other trace
    # once the real node is removed.
    "${kubectl[@]}" -n "${ns}" logs "deployment/${deployment}" --all-containers --previous \
      --tail=40 >&2 || true
    die "the manager did not roll out (kubectl -n ${ns} describe pods; logs in ${dir}/logs/kubelet.log)"
  fi
  log "deployed ${image} on the real node"
}

down() {
  cluster
  # docs/operations.md, "Uninstall": the MaintenancePlans first (they would make new
  # NodeMaintenances), then the NodeMaintenances, while the operator runs.
  if "${kubectl[@]}" get crd maintenanceplans.nodemaintenance.medik8s.io >/dev/null 2>&1; then
    "${kubectl[@]}" delete maintenanceplans --all --wait --timeout=180s >/dev/null
  fi
  if "${kubectl[@]}" get crd nodemaintenances.nodemaintenance.medik8s.io >/dev/null 2>&1; then
    "${kubectl[@]}" delete nm --all --wait --timeout=180s >/dev/null
  fi
  local overlay
  overlay="$(write_overlay)"
  "${kubectl[@]}" delete -k "${overlay}" --ignore-not-found --wait --timeout=180s >/dev/null
  "${kubectl[@]}" delete secret -n "${ns}" "${cert_secret}" --ignore-not-found >/dev/null 2>&1 || true
  log "undeployed"
}

case "${1:-}" in
  up) shift; up "$@" ;;
  down) down ;;
  overlay) cluster && write_overlay ;;
  *) die "usage: hack/deploy.sh up [--image-archive FILE] [--cert openssl|none] | down | overlay" ;;
esac
