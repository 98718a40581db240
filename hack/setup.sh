#!/usr/bin/env bash
# Installs the Debian packages the build, the tests and the local cluster need.
# Idempotent and quiet when everything is already installed.
#
#   hack/setup.sh          everything: the full build, the tests, the local cluster (needs Go)
#   hack/setup.sh build    the C++ build of both binaries and their tests (no Go, no cluster)
#   hack/setup.sh plugin   only what `make plugin` needs: the C++ toolchain and the plugin's
#                          libraries (no clang tools, no prometheus-cpp, no Go)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=hack/testenv-lib.sh
source "${root}/hack/testenv-lib.sh"
mode="${1:-all}"

plugin_packages=(
  # toolchain
  g++ cmake ninja-build make
  # the plugin's C++ libraries (docs/adr/ says why each)
  libboost1.81-dev libboost-json1.81-dev libssl-dev libyaml-cpp-dev
  libspdlog-dev libfmt-dev libcli11-dev
)
build_packages=(
  "${plugin_packages[@]}"
  ccache git clang-14 libclang-rt-14-dev clang-format-14 clang-tidy-14
  # the operator's metrics, the tests and benchmarks
  prometheus-cpp-dev libgtest-dev libgmock-dev libbenchmark-dev
  # the operator's MaintenancePlan time zones (brings libdate-tz3 and tzdata)
  libhowardhinnant-date-dev
)
all_packages=(
  "${build_packages[@]}"
  # local control plane: certificates and health checks
  openssl curl ca-certificates
  # make test: promtool checks the alert rules of deploy/prometheus (test/e2e/deploy_test.sh)
  prometheus
  # make bench: the summary table; make run and the e2e tests: the dev webhook configuration
  # (hack/webhook-dev.sh)
  jq
  # the local cluster's real node (hack/real-node.sh) and the image (make image, hack/image-*.sh)
  containerd runc containernetworking-plugins podman buildah mmdebstrap
)
case "${mode}" in
  plugin) packages=("${plugin_packages[@]}") ;;
  build) packages=("${build_packages[@]}") ;;
  all) packages=("${all_packages[@]}") ;;
  *) die "usage: hack/setup.sh [plugin|build]" ;;
esac

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
[[ "${mode}" == all ]] || exit 0

# Go builds the control plane from modules (testenv/); it is not a Debian package here
# because bookworm's Go is too old for Kubernetes 1.37 (its go.mod asks for Go 1.26.0).
command -v go >/dev/null || die "Go >= 1.26 is required to build the local control plane"
go_minor="$(go env GOVERSION | sed -E 's/^go1\.([0-9]+).*/\1/')"
((go_minor >= 26)) || die "Go >= 1.26 is required (found $(go env GOVERSION))"
