#!/usr/bin/env bash
# Installs the Debian packages the build, the tests and the local cluster need.
# Idempotent and quiet when everything is already installed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=hack/testenv-lib.sh
source "${root}/hack/testenv-lib.sh"

packages=(
  # toolchain
  g++ cmake ninja-build ccache make git clang-14 libclang-rt-14-dev clang-format-14 clang-tidy-14
  # C++ libraries (docs/adr/ says why each)
  libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev libssl-dev libyaml-cpp-dev
  libspdlog-dev libfmt-dev prometheus-cpp-dev libcli11-dev libgtest-dev libgmock-dev
  libbenchmark-dev
  # local control plane: certificates and health checks
  openssl curl ca-certificates
  # make test: promtool checks the alert rules of deploy/prometheus (test/e2e/deploy_test.sh)
  prometheus
  # make bench: the summary table; make run and the e2e tests: the dev webhook configuration
  # (hack/webhook-dev.sh)
  jq
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "${p}" 2>/dev/null | grep -q "install ok installed" || missing+=("${p}")
done
if ((${#missing[@]} > 0)); then
  echo "installing Debian packages: ${missing[*]}" >&2
  sudo=()
  ((EUID == 0)) || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

# Go builds the control plane from modules (testenv/); it is not a Debian package here
# because bookworm's Go is too old for Kubernetes 1.34.
command -v go >/dev/null || die "Go >= 1.24 is required to build the local control plane"
go_minor="$(go env GOVERSION | sed -E 's/^go1\.([0-9]+).*/\1/')"
((go_minor >= 24)) || die "Go >= 1.24 is required (found $(go env GOVERSION))"
