#!/usr/bin/env bash
# Prints the shell exports for using the local cluster by hand:
#   eval "$(make -s cluster-env)"
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=hack/testenv-lib.sh
source "${root}/hack/testenv-lib.sh"
dir="$(cluster_dir)"
[[ -f "${dir}/bin-dir" ]] || die "the local cluster is not up; run make cluster-up"
echo "export KUBECONFIG=${dir}/admin.kubeconfig"
echo "export NMO_ETCD_URL=http://127.0.0.1:$(sed -n 's/^ETCD_PORT=//p' "${dir}/ports.env")"
echo "export PATH=$(cat "${dir}/bin-dir"):${root}/build/bin:\${PATH}"
