#!/usr/bin/env bash
# `make image`: builds the operator's image from the shipped Containerfile with podman, as a
# user would (`podman build -f Containerfile .`), on base images made here from Debian packages
# (hack/image-base.sh), so nothing is pulled from a registry. Tags it
# localhost/node-maintenance-operator:dev (override with NMO_IMAGE) and prints its name.
#   hack/image-build.sh [--archive FILE]   also write it as an OCI archive (what the real node's
#                                         containerd imports)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"
# shellcheck source=hack/testenv-lib.sh
source "${root}/hack/testenv-lib.sh"
log() { printf '[image %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

archive=""
[[ "${1:-}" == --archive ]] && archive="${2:?--archive needs a file}"
image="${NMO_IMAGE:-localhost/node-maintenance-operator:dev}"
started=${SECONDS}
hack/image-base.sh

version="$(project_version)"
revision="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
git diff --quiet HEAD 2>/dev/null || revision+="-dirty"
source_url="$(git config --get remote.origin.url 2>/dev/null || true)"
# This sandbox may not raise the open-files and process limits podman asks runc for by
# default (it has no CAP_SYS_RESOURCE): ask for what the caller already has.
ulimits=(--ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" --ulimit "nproc=4096:4096")
log "podman build -f Containerfile -t ${image} (version ${version}, revision ${revision})"
podman build --quiet --pull=never --network=host "${ulimits[@]}" \
  --build-arg VERSION="${version}" --build-arg REVISION="${revision}" \
  --build-arg SOURCE="${source_url}" -f Containerfile -t "${image}" . >/dev/null ||
  die "podman build failed"
# Upstream NMO's manifests run /manager: the image must answer there too.
answer="$(podman run --rm --network=none "${ulimits[@]}" --entrypoint /manager "${image}" --version)" ||
  die "the image does not run /manager --version"
[[ "${answer}" == "node-maintenance-operator ${version}" ]] ||
  die "/manager --version in the image says \"${answer}\", not \"node-maintenance-operator ${version}\""
size="$(podman image inspect --format '{{.Size}}' "${image}")"
log "${image}: $((size / 1024 / 1024)) MiB, built in $((SECONDS - started))s"
if [[ -n "${archive}" ]]; then
  rm -f "${archive}"
  podman save --quiet --format oci-archive -o "${archive}" "${image}" || die "podman save failed"
fi
echo "${image}"
