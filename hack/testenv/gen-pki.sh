#!/usr/bin/env bash
# Generates the local control plane's certificates with openssl into the given directory:
# a CA, the kube-apiserver serving certificate (IP SAN 127.0.0.1), an admin client
# certificate in system:masters, the client certificates of the API server towards kubelets and
# of the real node's kubelet, and the service-account signing key pair.
set -euo pipefail
out="$1"
mkdir -p "${out}"
cd "${out}"

openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 \
  -subj "/CN=nmo-testenv-ca" -addext "basicConstraints=critical,CA:TRUE" \
  -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature"

sign() { # sign <name> <subject> <extensions>
  openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "$2"
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
    -out "$1.crt" -extfile <(printf '%b' "$3")
  rm -f "$1.csr"
}

sign apiserver "/CN=kube-apiserver" \
  "subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE"
sign admin "/O=system:masters/CN=nmo-testenv-admin" \
  "keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE"
# The real node (hack/real-node.sh): the API server's identity towards kubelets (logs, exec),
# and the kubelet's own towards the API server.
sign apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" \
  "keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE"
sign kubelet "/O=system:nodes/CN=system:node:node-real-01" \
  "keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE"

openssl genrsa -out sa.key 2048
openssl rsa -in sa.key -pubout -out sa.pub
openssl verify -CAfile ca.crt apiserver.crt admin.crt apiserver-kubelet-client.crt kubelet.crt
