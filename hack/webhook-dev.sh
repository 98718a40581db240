#!/usr/bin/env bash
# The admission webhook outside a cluster: one source for its serving certificate and for its
# ValidatingWebhookConfiguration, used by `make run` (hack/run.sh) and the end-to-end tests.
#
#   hack/webhook-dev.sh certificate DIR [DAYS [SAN]]
#       makes a CA (DIR/ca.crt) and a serving certificate signed by it (DIR/tls.crt,
#       DIR/tls.key; DAYS valid, default 365) for SAN, an openssl subjectAltName list (default
#       IP:127.0.0.1; hack/deploy.sh gives the webhook Service's DNS names); DIR is created,
#       its files replaced. The one place this repository makes a certificate.
#   hack/webhook-dev.sh configuration URL CA_FILE
#       prints deploy/webhook/validating_webhook_configuration.yaml as JSON with clientConfig
#       pointing at URL (the operator's webhook outside the cluster) and CA_FILE as caBundle,
#       without the cert-manager annotation; everything else (rules, matchConditions,
#       failurePolicy, timeout) as deploy/webhook has it. Needs kubectl and KUBECONFIG.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

die() { printf 'webhook-dev.sh: %s\n' "$*" >&2; exit 1; }

certificate() {
  local dir="$1" days="${2:-365}" san="${3:-IP:127.0.0.1}"
  # The subject names the first name of the list (its value after "IP:" or "DNS:") when it fits
  # a common name's 64 characters; the SAN list is what clients check.
  local cn="${san%%,*}"
  cn="${cn#*:}"
  ((${#cn} <= 64)) || cn=node-maintenance-operator-webhook
  mkdir -p "${dir}"
  # Each step after the other with &&: `set -e` does not reach into a subshell that is the left
  # side of ||, and a failed step must fail the whole.
  (
    umask 077 &&
      cd "${dir}" &&
      openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days "${days}" \
        -subj "/CN=node-maintenance-operator-ca" -keyout ca.key -out ca.crt &&
      openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=${cn}" \
        -keyout tls.key -out tls.csr &&
      printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\n' "${san}" >san.ext &&
      openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days "${days}" \
        -extfile san.ext -out tls.crt &&
      # Only what the operator (tls.crt, tls.key) and the caBundle (ca.crt) need.
      rm -f ca.key ca.srl tls.csr san.ext
  ) >/dev/null 2>"${dir}/.openssl.err" || { cat "${dir}/.openssl.err" >&2; die "openssl failed"; }
  rm -f "${dir}/.openssl.err"
}

configuration() {
  local url="$1" ca_file="$2"
  [[ -r "${ca_file}" ]] || die "cannot read ${ca_file}"
  # kubectl reads the YAML (it needs the cluster's KUBECONFIG for the kind's mapping).
  kubectl create --dry-run=client -o json \
    -f "${root}/deploy/webhook/validating_webhook_configuration.yaml" |
    jq --arg url "${url}" --arg ca "$(base64 -w0 "${ca_file}")" '
      del(.metadata.annotations["cert-manager.io/inject-ca-from"])
      | if .metadata.annotations == {} then del(.metadata.annotations) else . end
      | .webhooks |= map(.clientConfig = {url: $url, caBundle: $ca})'
}

case "${1:-}" in
  certificate) [[ $# -ge 2 && $# -le 4 ]] || die "usage: certificate DIR [DAYS [SAN]]"
    certificate "$2" "${3:-365}" "${4:-IP:127.0.0.1}" ;;
  configuration) [[ $# -eq 3 ]] || die "usage: configuration URL CA_FILE"; configuration "$2" "$3" ;;
  *) die "usage: hack/webhook-dev.sh certificate DIR [DAYS [SAN]] | configuration URL CA_FILE" ;;
esac
