#!/usr/bin/env bash
# `make image`: builds the operator's image from the shipped Containerfile with podman, as a
# user would (`podman build -f Containerfile .`), on base images made here from Debian packages
# (hack/image-base.sh), so nothing is pulled from a registry. Tags it
# localhost/node-maintenance-operator:dev (override with NMO_IMAGE) and prints its name.
#   hack/image-build.sh [--archive FILE] [--binary FILE]
#     --archive FILE   also write it as an OCI archive (what the real node's containerd imports)
#     --binary FILE    put this operator binary in the runtime stage instead of compiling one in
#                      the build stage (make test: its own build, so the image costs no second
#                      compile; the runtime stage and its library check are the same)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"
# shellcheck source=hack/testenv-lib.sh
source "${root}/hack/testenv-lib.sh"
log() { printf '[image %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

archive=""
binary=""
while (($# > 0)); do
  case "$1" in
    --archive) archive="${2:?--archive needs a file}" && shift 2 ;;
    --binary) binary="${2:?--binary needs a file}" && shift 2 ;;
    *) die "unknown argument: $1" ;;
  esac
done
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
stage=()
if [[ -n "${binary}" ]]; then
  [[ -x "${binary}" ]] || die "--binary ${binary}: no such executable"
  # The build stage's output, DIR/out/node-maintenance-operator, from the given binary.
  stage_dir="$(mktemp -d)"
  trap 'rm -rf "${stage_dir}"' EXIT
  mkdir "${stage_dir}/out"
  strip -o "${stage_dir}/out/node-maintenance-operator" "${binary}"
  stage=(--build-context "build=${stage_dir}")
  log "the build stage's binary: ${binary}"
fi
log "podman build -f Containerfile -t ${image} (version ${version}, revision ${revision})"
podman build --quiet --pull=never --network=host "${ulimits[@]}" "${stage[@]}" \
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
