#!/usr/bin/env bash
# make dist: the release archives in dist/.
#   kubectl-maintenance-v<version>-linux-<arch>.tar.gz  the plugin (preset `plugin`: C++ libraries
#       linked in) and its completion link kubectl_complete-maintenance
#   node-maintenance-operator-v<version>-linux-<arch>.tar.gz  the operator (preset `release`)
#   SHA256SUMS                                           sha256sum -c checks them
#   maintenance.yaml                                     the krew plugin manifest for the plugin
# Both binaries are stripped. The krew manifest points at NMO_DIST_URL (the folder the archives
# are published in; default: dist/ itself as a file:// URL, for `kubectl krew install
# --manifest=dist/maintenance.yaml --archive=dist/<plugin archive>`).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"
version="v$(sed -nE 's/^  VERSION ([0-9.]+)$/\1/p' CMakeLists.txt)"
[[ "${version}" != v ]] || { echo "error: no project VERSION in CMakeLists.txt" >&2; exit 1; }
case "$(uname -m)" in
  x86_64) arch=amd64 ;;
  aarch64) arch=arm64 ;;
  *) arch="$(uname -m)" ;;
esac
out="${root}/dist"
url="${NMO_DIST_URL:-file://${out}}"

hack/setup.sh build
cmake --preset plugin >/dev/null
cmake --build --preset plugin --target kubectl-maintenance
cmake --preset release >/dev/null
cmake --build --preset release --target node-maintenance-operator

rm -rf "${out}"
mkdir -p "${out}"
stage="$(mktemp -d)"
trap 'rm -rf "${stage}"' EXIT

# archive <name> <files...>: a tarball of the staged files, owned by root, in a stable order.
archive() {
  local name="$1"
  shift
  tar -C "${stage}/${name}" --owner=0 --group=0 --numeric-owner --sort=name \
    --mtime="@$(git log -1 --format=%ct 2>/dev/null || echo 0)" -czf "${out}/${name}.tar.gz" "$@"
}

plugin="kubectl-maintenance-${version}-linux-${arch}"
mkdir -p "${stage}/${plugin}"
install -m 0755 -s build-plugin/bin/kubectl-maintenance "${stage}/${plugin}/kubectl-maintenance"
ln -s kubectl-maintenance "${stage}/${plugin}/kubectl_complete-maintenance"
cp docs/cli.md "${stage}/${plugin}/README.md"
archive "${plugin}" kubectl-maintenance kubectl_complete-maintenance README.md

operator="node-maintenance-operator-${version}-linux-${arch}"
mkdir -p "${stage}/${operator}"
install -m 0755 -s build-release/bin/node-maintenance-operator \
  "${stage}/${operator}/node-maintenance-operator"
archive "${operator}" node-maintenance-operator

(cd "${out}" && sha256sum -- *.tar.gz >SHA256SUMS)
plugin_sha="$(sha256sum "${out}/${plugin}.tar.gz" | cut -d' ' -f1)"
cat >"${out}/maintenance.yaml" <<YAML
apiVersion: krew.googlecontainertools.github.com/v1alpha2
kind: Plugin
metadata:
  name: maintenance
spec:
  version: ${version}
  shortDescription: Start, follow, explain and stop NodeMaintenances
  description: |
    kubectl maintenance drives the Node Maintenance Operator (nodemaintenance.medik8s.io):
    start and stop node maintenances, watch their progress, plan one as a dry run (which pods
    would be evicted, skipped or block, and which gates would keep it Pending) and diagnose a
    stuck one. For shell completion, link kubectl_complete-maintenance to it on PATH.
  platforms:
    - selector:
        matchLabels:
          os: linux
          arch: ${arch}
      uri: ${url}/${plugin}.tar.gz
      sha256: ${plugin_sha}
      files:
        - from: kubectl-maintenance
          to: .
        - from: README.md
          to: .
      bin: kubectl-maintenance
YAML
ls -l "${out}"
