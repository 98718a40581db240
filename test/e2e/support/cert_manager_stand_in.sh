#!/usr/bin/env bash
# A stand-in for cert-manager, for the e2e tests: cert-manager's controller and CA injector
# cannot be built here (the module proxy serves cert-manager's library module, with its CRDs, but
# not the modules of its binaries), so this plays, once, what they do for a Certificate whose
# issuer is a self-signed Issuer, as cert-manager documents it:
#   - the controller (SelfSigned issuer): a private key and a certificate signed by that key, for
#     the Certificate's spec.dnsNames, in the Secret spec.secretName (type kubernetes.io/tls,
#     keys tls.crt, tls.key and ca.crt, where ca.crt is the certificate itself), annotated with
#     cert-manager.io/certificate-name, issuer-name, issuer-kind and alt-names; then the
#     Certificate's Ready condition True;
#   - the CA injector: every ValidatingWebhookConfiguration annotated
#     cert-manager.io/inject-ca-from: <namespace>/<certificate> gets that Secret's ca.crt as the
#     caBundle of each of its webhooks.
# So the test proves that deploy/webhook/cert-manager, the webhook configuration's annotation and
# the Secret the manager mounts fit together; anything that does not match fails here or later.
#
#   test/e2e/support/cert_manager_stand_in.sh <namespace> <certificate>
set -euo pipefail
ns="$1"
name="$2"
die() {
  printf 'cert-manager stand-in: %s\n' "$*" >&2
  exit 1
}

cert="$(kubectl get certificates.cert-manager.io -n "${ns}" "${name}" -o json)" ||
  die "no Certificate ${ns}/${name}"
secret="$(jq -r '.spec.secretName // empty' <<<"${cert}")"
issuer_kind="$(jq -r '.spec.issuerRef.kind // "Issuer"' <<<"${cert}")"
issuer="$(jq -r '.spec.issuerRef.name // empty' <<<"${cert}")"
mapfile -t dns_names < <(jq -r '.spec.dnsNames[]?' <<<"${cert}")
[[ -n "${secret}" && -n "${issuer}" ]] || die "Certificate ${ns}/${name} has no secretName or issuerRef"
((${#dns_names[@]} > 0)) || die "Certificate ${ns}/${name} has no dnsNames"
[[ "${issuer_kind}" == Issuer ]] || die "only a namespaced Issuer is played here, not ${issuer_kind}"
kubectl get issuers.cert-manager.io -n "${ns}" "${issuer}" -o json | jq -e '.spec.selfSigned != null' >/dev/null ||
  die "Issuer ${ns}/${issuer} is missing or not selfSigned"

work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
sans="$(printf 'DNS:%s,' "${dns_names[@]}")"
openssl req -x509 -newkey rsa:2048 -nodes -days 90 -subj "/" -keyout "${work}/tls.key" \
  -out "${work}/tls.crt" -addext "subjectAltName=${sans%,}" \
  -addext "keyUsage=critical,digitalSignature,keyEncipherment" \
  -addext "extendedKeyUsage=serverAuth" 2>/dev/null || die "openssl failed"
cp "${work}/tls.crt" "${work}/ca.crt"
kubectl create secret tls "${secret}" -n "${ns}" --cert="${work}/tls.crt" --key="${work}/tls.key" \
  --dry-run=client -o json |
  jq --rawfile ca "${work}/ca.crt" --arg cert "${name}" --arg issuer "${issuer}" \
    --arg alt "$(IFS=,; echo "${dns_names[*]}")" \
    '.data["ca.crt"] = ($ca | @base64) | .metadata.annotations = {
       "cert-manager.io/certificate-name": $cert, "cert-manager.io/issuer-name": $issuer,
       "cert-manager.io/issuer-kind": "Issuer", "cert-manager.io/alt-names": $alt}' |
  kubectl apply -f - >/dev/null || die "writing Secret ${ns}/${secret} failed"
now="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
kubectl patch certificates.cert-manager.io -n "${ns}" "${name}" --subresource=status --type=merge -p \
  "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"Ready\",\"message\":\"Certificate is up to date and has not expired\",\"lastTransitionTime\":\"${now}\"}]}}" \
  >/dev/null || die "setting the Certificate's Ready condition failed"

ca="$(base64 -w0 "${work}/ca.crt")"
injected=0
while read -r config count; do
  [[ -n "${config}" ]] || continue
  patch="$(jq -cn --arg ca "${ca}" --argjson n "${count}" \
    '[range(0; $n) | {op: "add", path: "/webhooks/\(.)/clientConfig/caBundle", value: $ca}]')"
  kubectl patch validatingwebhookconfiguration "${config}" --type=json -p "${patch}" >/dev/null ||
    die "injecting the CA into ${config} failed"
  injected=$((injected + 1))
done < <(kubectl get validatingwebhookconfigurations -o json |
  jq -r --arg from "${ns}/${name}" \
    '.items[] | select(.metadata.annotations["cert-manager.io/inject-ca-from"] == $from)
     | "\(.metadata.name) \(.webhooks | length)"')
((injected > 0)) || die "no ValidatingWebhookConfiguration asks for the CA of ${ns}/${name}"
echo "issued ${ns}/${secret} for ${dns_names[*]}; CA injected into ${injected} configuration(s)"
