#!/usr/bin/env bash
# Builds the local control-plane binaries (kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl, etcd, kwok) and the real node's kubelet from the pinned Go wrapper
# modules in testenv/, for the Kubernetes minor KUBE_VERSION selects (default: the newest; the
# kubelet only for that one, the real node runs it). Binaries are cached outside the repository,
# keyed by the version and a hash of its pins, and are rebuilt only when missing or when the pins
# change. Prints the bin directory on stdout.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=hack/testenv-lib.sh
source "${root}/hack/testenv-lib.sh"

bin_dir="$(testenv_bin_dir)"
k8s_dir="$(basename "$(testenv_k8s_dir)")"
# What is built: <module dir in testenv/> <binary> <package>.
targets=(
  "etcd etcd go.etcd.io/etcd/server/v3"
  "kwok kwok sigs.k8s.io/kwok/cmd/kwok"
  "${k8s_dir} kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver"
  "${k8s_dir} kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager"
  "${k8s_dir} kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler"
  "${k8s_dir} kubectl k8s.io/kubernetes/cmd/kubectl"
)
if testenv_default_version; then
  targets+=("${k8s_dir} kubelet k8s.io/kubernetes/cmd/kubelet")
fi
complete() {
  local target dir name pkg
  for target in "${targets[@]}"; do
    read -r dir name pkg <<<"${target}"
    [[ -x "${bin_dir}/${name}" ]] || return 1
  done
}
if complete; then
  echo "${bin_dir}"
  exit 0
fi

command -v go >/dev/null || die "go is not installed (needed to build the control plane)"
mkdir -p "${bin_dir}"
# One build at a time per cache entry (make test and make demo may both ask for it).
exec 9>"${bin_dir}/.lock"
flock 9
if complete; then
  echo "${bin_dir}"
  exit 0
fi
log() { printf '[testenv-build %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

k8s_version="$(testenv_k8s_version)"
build_date="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
minor="$(echo "${k8s_version}" | cut -d. -f2)"
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X ${pkg}.gitVersion=${k8s_version} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${minor}"
  ldflags+=" -X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=${build_date}"
done

build() { # build <module dir> <output name> <package>: the k8s ones carry their version
  local dir="$1" name="$2" pkg="$3" flags="-s -w"
  [[ "${dir}" == "${k8s_dir}" ]] && flags="${ldflags}"
  if [[ -x "${bin_dir}/${name}" ]]; then
    log "${name}: cached"
    return
  fi
  local started=${SECONDS}
  log "${name}: building ${pkg} (a cold build takes minutes)"
  (cd "${root}/testenv/${dir}" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath \
    -ldflags "${flags}" -o "${bin_dir}/${name}.tmp" "${pkg}") ||
    die "building ${name} failed"
  mv "${bin_dir}/${name}.tmp" "${bin_dir}/${name}"
  log "${name}: done in $((SECONDS - started))s"
}

started=${SECONDS}
log "downloading modules"
for dir in "${k8s_dir}" etcd kwok; do
  (cd "${root}/testenv/${dir}" && go mod download) || die "go mod download failed in testenv/${dir}"
done
for target in "${targets[@]}"; do
  # shellcheck disable=SC2086 # three words: dir, binary, package
  build ${target}
done
log "all binaries ready in ${bin_dir} ($((SECONDS - started))s)"
echo "${bin_dir}"
