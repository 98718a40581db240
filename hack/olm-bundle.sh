#!/usr/bin/env bash
# The OLM bundle (deploy/olm), generated from what deploy/ renders so that its RBAC, Deployment
# and webhook are never a hand-kept third copy (docs/development.md, "The OLM bundle"):
#
#   hack/olm-bundle.sh [--out DIR] [--image REF]
#
# renders deploy/before-1.31/default (the CRDs without selectableFields, so the bundle installs
# on every tested Kubernetes from 1.27 on: its minKubeVersion), and has test/tools/olmcheck
# (built and cached by hack/go-tool-build.sh) write, under DIR (default deploy/olm):
# bundle/manifests/ (the ClusterServiceVersion from deploy/olm/csv-base.yaml and the rendered
# objects: every CRD, each owned by the CSV, the metrics Service, the user-facing ClusterRoles),
# bundle/metadata/annotations.yaml, bundle.Containerfile and other-namespaces.yaml; then
# validates the bundle with the Operator Framework's validators (olmcheck validate: any error
# fails).
#   --image REF   the operator's image in the CSV (default: deploy/default's images: entry)
# The version is the project's (CMakeLists.txt). Needs kubectl (PATH, or the local cluster's).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"
# shellcheck source=hack/testenv-lib.sh
source "${root}/hack/testenv-lib.sh"

out="${root}/deploy/olm"
image=""
while (($# > 0)); do
  case "$1" in
    --out) out="$(realpath -m "$2")"; shift 2 ;;
    --image) image="$2"; shift 2 ;;
    *) die "usage: hack/olm-bundle.sh [--out DIR] [--image REF]" ;;
  esac
done
if ! command -v kubectl >/dev/null; then
  [[ -f "$(cluster_dir)/bin-dir" ]] || die "kubectl is not on PATH (nor a local cluster's: make cluster-up)"
  PATH="$(cat "$(cluster_dir)/bin-dir"):${PATH}"
fi
version="$(project_version)"
[[ -n "${version}" ]] || die "no VERSION in CMakeLists.txt"
olmcheck="$(hack/go-tool-build.sh olmcheck)"

work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
source_dir=deploy/before-1.31/default
if [[ -n "${image}" ]]; then
  # An overlay beside the repository's, for the image only (kustomize loads bases by relative path).
  mkdir -p "${work}/overlay"
  cat >"${work}/overlay/kustomization.yaml" <<EOT
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - $(realpath --relative-to="${work}/overlay" "${root}/${source_dir}")
images:
  - name: node-maintenance-operator
    newName: ${image%:*}
    newTag: ${image##*:}
EOT
  source_dir="${work}/overlay"
fi
kubectl kustomize "${source_dir}" >"${work}/rendered.yaml"
mkdir -p "${out}"
"${olmcheck}" generate -base deploy/olm/csv-base.yaml -icon deploy/olm/icon.svg -version "${version}" \
  -out "${out}" <"${work}/rendered.yaml"
"${olmcheck}" validate "${out}/bundle" >"${work}/validate.out" || {
  cat "${work}/validate.out" >&2
  die "the generated bundle does not validate"
}
tail -n 1 "${work}/validate.out" >&2
