#!/usr/bin/env bash
# Builds one of the Go test tools under test/tools/ (each its own module: promcheck, the strict
# Prometheus exposition checker; olmcheck, the OLM bundle validator) into the cache outside the
# repository, keyed by a hash of its sources and the Go version, and prints the binary's path on
# stdout. Rebuilt only when missing or changed.
#   hack/go-tool-build.sh <tool>   -> ~/.cache/node-maintenance-operator/tools/<hash>/<tool>
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=hack/testenv-lib.sh
source "${root}/hack/testenv-lib.sh"

tool="${1:-}"
[[ -n "${tool}" && -f "${root}/test/tools/${tool}/go.mod" ]] ||
  die "usage: hack/go-tool-build.sh <tool> (a folder of test/tools with a go.mod)"
src="${root}/test/tools/${tool}"
command -v go >/dev/null || die "go is not installed (needed to build test/tools/${tool})"
# The key: the tool's name, the Go version and every Go source, go.mod and go.sum of the tool.
key="$( (echo "${tool}" && go env GOVERSION && cd "${src}" &&
  find . -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) | LC_ALL=C sort | xargs sha256sum) |
  sha256sum | cut -c1-16)"
cache_root="${NMO_TOOLS_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/node-maintenance-operator/tools}"
out_dir="${cache_root}/${key}"
binary="${out_dir}/${tool}"
if [[ -x "${binary}" ]]; then
  echo "${binary}"
  exit 0
fi
mkdir -p "${out_dir}"
exec 9>"${out_dir}/.lock"
flock 9
if [[ ! -x "${binary}" ]]; then
  printf '[go-tool-build %s] building %s\n' "$(date +%H:%M:%S)" "${src}" >&2
  (cd "${src}" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "${binary}.tmp" .) ||
    die "building ${tool} failed"
  mv "${binary}.tmp" "${binary}"
fi
echo "${binary}"
