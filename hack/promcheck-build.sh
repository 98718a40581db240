#!/usr/bin/env bash
# Builds test/tools/promcheck (the strict Prometheus exposition checker the e2e tests pipe
# /metrics through) into the cache outside the repository, keyed by a hash of its sources and
# the Go version, and prints the binary's path on stdout. Rebuilt only when missing or changed.
#   hack/promcheck-build.sh            -> ~/.cache/node-maintenance-operator/tools/<hash>/promcheck
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=hack/testenv-lib.sh
source "${root}/hack/testenv-lib.sh"

src="${root}/test/tools/promcheck"
command -v go >/dev/null || die "go is not installed (needed to build test/tools/promcheck)"
# The key: the Go version and every Go source, go.mod and go.sum of the tool.
key="$( (go env GOVERSION && cd "${src}" &&
  find . -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) | LC_ALL=C sort | xargs sha256sum) |
  sha256sum | cut -c1-16)"
cache_root="${NMO_TOOLS_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/node-maintenance-operator/tools}"
out_dir="${cache_root}/${key}"
binary="${out_dir}/promcheck"
if [[ -x "${binary}" ]]; then
  echo "${binary}"
  exit 0
fi
mkdir -p "${out_dir}"
exec 9>"${out_dir}/.lock"
flock 9
if [[ ! -x "${binary}" ]]; then
  printf '[promcheck-build %s] building %s\n' "$(date +%H:%M:%S)" "${src}" >&2
  (cd "${src}" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "${binary}.tmp" .) ||
    die "building promcheck failed"
  mv "${binary}.tmp" "${binary}"
fi
echo "${binary}"
