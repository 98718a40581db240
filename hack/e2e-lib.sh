# The environment the end-to-end tests and the chaos experiments run in (sourced, after
# testenv-lib.sh): the control-plane binaries, promcheck, the local cluster, and the variables
# the tests read. Used by hack/test.sh and hack/chaos.sh.
#
#   e2e_prerequisites_start   builds the control-plane binaries and promcheck in the background
#                             (the first control-plane build takes tens of minutes)
#   e2e_environment           waits for them, brings the cluster up unless it runs (remembering
#                             that in E2E_STARTED_CLUSTER), and exports KUBECONFIG, NMO_ETCD_URL,
#                             PATH, NMO_PROMCHECK and NMO_OPERATOR_KUBECONFIG
#   e2e_cluster_cleanup       stops the cluster if e2e_environment started it

e2e_prerequisites_start() {
  E2E_TESTENV_LOG="$(mktemp)"
  hack/testenv-build.sh >"${E2E_TESTENV_LOG}" &
  E2E_TESTENV_PID=$!
  # The strict Prometheus exposition checker the e2e tests pipe /metrics through (Go, cached).
  E2E_PROMCHECK_LOG="$(mktemp)"
  hack/promcheck-build.sh >"${E2E_PROMCHECK_LOG}" &
  E2E_PROMCHECK_PID=$!
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
  if ((E2E_STARTED_CLUSTER == 1)); then
    hack/cluster-down.sh >/dev/null || true
    E2E_STARTED_CLUSTER=0
  fi
}
