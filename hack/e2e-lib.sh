# The environment the end-to-end tests and the chaos experiments run in (sourced, after
# testenv-lib.sh): the control-plane binaries, promcheck, the local cluster, and the variables
# the tests read. Used by hack/test.sh and hack/chaos.sh.
#
#   e2e_prerequisites_start   builds the control-plane binaries and promcheck in the background
#                             (the first control-plane build takes tens of minutes); with
#                             NMO_REAL_NODE=1 also the operator's image (make image)
#   e2e_environment           waits for them, brings the cluster up unless it runs (remembering
#                             that in E2E_STARTED_CLUSTER) and, with NMO_REAL_NODE=1, its real
#                             node, and exports KUBECONFIG, NMO_ETCD_URL, PATH, NMO_PROMCHECK,
#                             NMO_OPERATOR_KUBECONFIG (and NMO_IMAGE_ARCHIVE)
#   e2e_cluster_cleanup       stops the cluster if e2e_environment started it

e2e_prerequisites_start() {
  E2E_TESTENV_LOG="$(mktemp)"
  hack/testenv-build.sh >"${E2E_TESTENV_LOG}" &
  E2E_TESTENV_PID=$!
  # The strict Prometheus exposition checker the e2e tests pipe /metrics through (Go, cached).
  E2E_PROMCHECK_LOG="$(mktemp)"
  hack/promcheck-build.sh >"${E2E_PROMCHECK_LOG}" &
  E2E_PROMCHECK_PID=$!
  if [[ "${NMO_REAL_NODE:-0}" == 1 ]]; then
    E2E_IMAGE_LOG="$(mktemp)"
    NMO_IMAGE_ARCHIVE="$(mktemp --suffix=.tar)"
    export NMO_IMAGE_ARCHIVE
    hack/image-build.sh --archive "${NMO_IMAGE_ARCHIVE}" >"${E2E_IMAGE_LOG}" 2>&1 &
    E2E_IMAGE_PID=$!
  fi
}

E2E_STARTED_CLUSTER=0

e2e_environment() {
  wait "${E2E_TESTENV_PID}" || { rm -f "${E2E_TESTENV_LOG}"; die "building the control-plane binaries failed"; }
  local bin_dir
  bin_dir="$(tail -n 1 "${E2E_TESTENV_LOG}")"
  rm -f "${E2E_TESTENV_LOG}"
  wait "${E2E_PROMCHECK_PID}" || { rm -f "${E2E_PROMCHECK_LOG}"; die "building test/tools/promcheck failed"; }
  NMO_PROMCHECK="$(tail -n 1 "${E2E_PROMCHECK_LOG}")"
  rm -f "${E2E_PROMCHECK_LOG}"
  export NMO_PROMCHECK

  if ! hack/cluster-status.sh >/dev/null 2>&1; then
    hack/cluster-up.sh >/dev/null
    E2E_STARTED_CLUSTER=1
  fi
  if [[ "${NMO_REAL_NODE:-0}" == 1 ]]; then
    hack/real-node.sh up
    if ! wait "${E2E_IMAGE_PID}"; then
      cat "${E2E_IMAGE_LOG}" >&2
      rm -f "${E2E_IMAGE_LOG}"
      die "building the operator's image failed"
    fi
    grep -E '^\[image' "${E2E_IMAGE_LOG}" >&2 || true
    rm -f "${E2E_IMAGE_LOG}"
  fi
  export KUBECONFIG="$(cluster_dir)/admin.kubeconfig"
  NMO_ETCD_URL="http://127.0.0.1:$(sed -n 's/^ETCD_PORT=//p' "$(cluster_dir)/ports.env")"
  export NMO_ETCD_URL
  export PATH="${bin_dir}:$(repo_root)/build/bin:${PATH}"
  # The RBAC proof: the e2e tests run the operator with a token of its ServiceAccount, bound
  # only to deploy/rbac's roles (applied here with the CRD and namespaces).
  NMO_OPERATOR_KUBECONFIG="$(hack/operator-kubeconfig.sh)"
  export NMO_OPERATOR_KUBECONFIG
}

e2e_cluster_cleanup() {
  [[ -n "${NMO_IMAGE_ARCHIVE:-}" ]] && rm -f "${NMO_IMAGE_ARCHIVE}"
  if ((E2E_STARTED_CLUSTER == 1)); then
    hack/cluster-down.sh >/dev/null || true
    E2E_STARTED_CLUSTER=0
  fi
}
