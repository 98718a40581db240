# The environment the end-to-end tests and the chaos experiments run in (sourced, after
# testenv-lib.sh): the control-plane binaries, promcheck, the local cluster, and the variables
# the tests read. Used by hack/test.sh and hack/chaos.sh.
#
#   e2e_prerequisites_start   builds the control-plane binaries, promcheck and olmcheck in the background
#                             (the first control-plane build takes tens of minutes); with
#                             NMO_REAL_NODE=1 also the image's base images; with
#                             NMO_TEST_OLDEST=1 also the oldest tested Kubernetes' binaries (those
#                             two at nice 19: they are needed last)
#   e2e_image_start <binary>  with NMO_REAL_NODE=1, the operator's image around that binary in the
#                             background at nice 19 (hack/image-build.sh --binary), exporting
#                             NMO_IMAGE_ARCHIVE
#   e2e_environment           waits for the binaries, brings the cluster up unless it runs
#                             (remembering that in E2E_STARTED_CLUSTER) and, with NMO_REAL_NODE=1,
#                             its real node, and exports KUBECONFIG, NMO_ETCD_URL, PATH,
#                             NMO_PROMCHECK, NMO_OLMCHECK, NMO_OPERATOR_KUBECONFIG
#   e2e_image_wait            waits for the image e2e_image_start builds
#   e2e_environment_oldest    the same for the oldest tested Kubernetes (KUBE_VERSION exported
#                             too), its cluster beside the first (E2E_STARTED_OLDEST_CLUSTER)
#   e2e_cluster_cleanup       stops the clusters that e2e_environment* started

e2e_prerequisites_start() {
  E2E_TESTENV_LOG="$(mktemp)"
  hack/testenv-build.sh >"${E2E_TESTENV_LOG}" &
  E2E_TESTENV_PID=$!
  if [[ "${NMO_TEST_OLDEST:-0}" == 1 ]]; then
    E2E_OLDEST_TESTENV_LOG="$(mktemp)"
    # Needed last: at the lowest priority, so that it takes only what the rest leaves idle.
    KUBE_VERSION="$(testenv_oldest_version)" nice -n 19 hack/testenv-build.sh >"${E2E_OLDEST_TESTENV_LOG}" &
    E2E_OLDEST_TESTENV_PID=$!
  fi
  # The strict Prometheus exposition checker the e2e tests pipe /metrics through (Go, cached).
  E2E_PROMCHECK_LOG="$(mktemp)"
  hack/promcheck-build.sh >"${E2E_PROMCHECK_LOG}" &
  E2E_PROMCHECK_PID=$!
  # The OLM bundle validator (test/e2e/olm_bundle_test.sh; Go, cached; minutes the first time).
  E2E_OLMCHECK_LOG="$(mktemp)"
  hack/go-tool-build.sh olmcheck >"${E2E_OLMCHECK_LOG}" &
  E2E_OLMCHECK_PID=$!
  if [[ "${NMO_REAL_NODE:-0}" == 1 ]]; then
    E2E_IMAGE_BASE_LOG="$(mktemp)"
    {
      rc=0
      nice -n 19 hack/image-base.sh >"${E2E_IMAGE_BASE_LOG}" 2>&1 || rc=$?
      echo "${rc}" >"${E2E_IMAGE_BASE_LOG}.status"
    } &
    E2E_IMAGE_BASE_PID=$!
  fi
}

# The image build runs hack/image-base.sh again, which waits for the run started above (a lock)
# and then finds the base images there.
e2e_image_start() {
  [[ "${NMO_REAL_NODE:-0}" == 1 ]] || return 0
  local binary="$1"
  NMO_IMAGE_ARCHIVE="$(mktemp --suffix=.tar)"
  export NMO_IMAGE_ARCHIVE
  E2E_IMAGE_LOG="$(mktemp)"
  {
    rc=0
    nice -n 19 hack/image-build.sh --archive "${NMO_IMAGE_ARCHIVE}" --binary "${binary}" \
      >"${E2E_IMAGE_LOG}" 2>&1 || rc=$?
    echo "${rc}" >"${E2E_IMAGE_LOG}.status"
  } &
  E2E_IMAGE_PID=$!
}

# job_status <pid> <status file>: waits for a background job (in this shell: a subshell cannot)
# and sets JOB_STATUS to the exit status it wrote into its status file. `wait` alone is not
# enough: bash can lose the status of a job that ended long before ("pid N is not a child of this
# shell": the base-image job usually ends within a second, twenty minutes before it is waited
# for), so `wait` only waits and the file says how the job ended.
job_status() {
  wait "$1" 2>/dev/null || true
  JOB_STATUS=1
  [[ -s "$2" ]] && JOB_STATUS="$(cat "$2")"
  rm -f "$2"
}

e2e_image_wait() {
  [[ "${NMO_REAL_NODE:-0}" == 1 ]] || return 0
  job_status "${E2E_IMAGE_BASE_PID}" "${E2E_IMAGE_BASE_LOG}.status"
  if [[ "${JOB_STATUS}" != 0 ]]; then
    cat "${E2E_IMAGE_BASE_LOG}" >&2
    rm -f "${E2E_IMAGE_BASE_LOG}"
    die "making the image's base images failed (status ${JOB_STATUS})"
  fi
  grep -E '^\[image' "${E2E_IMAGE_BASE_LOG}" >&2 || true
  rm -f "${E2E_IMAGE_BASE_LOG}"
  job_status "${E2E_IMAGE_PID}" "${E2E_IMAGE_LOG}.status"
  if [[ "${JOB_STATUS}" != 0 ]]; then
    cat "${E2E_IMAGE_LOG}" >&2
    rm -f "${E2E_IMAGE_LOG}"
    die "building the operator's image failed (status ${JOB_STATUS})"
  fi
  grep -E '^\[image' "${E2E_IMAGE_LOG}" >&2 || true
  rm -f "${E2E_IMAGE_LOG}"
}

E2E_STARTED_CLUSTER=0
E2E_STARTED_OLDEST_CLUSTER=0

# e2e_wait_build <pid> <log>: waits for a background testenv-build (in this shell: a subshell
# cannot wait for it) and sets E2E_BIN_DIR to the bin directory it printed last.
e2e_wait_build() {
  wait "$1" || { rm -f "$2"; die "building the control-plane binaries failed"; }
  E2E_BIN_DIR="$(tail -n 1 "$2")"
  rm -f "$2"
}

# e2e_use_cluster <bin dir>: the selected version's cluster up (E2E_CLUSTER_WAS_DOWN=1 when it
# was not running before) and the variables the tests read pointing at it.
e2e_use_cluster() {
  E2E_CLUSTER_WAS_DOWN=0
  if ! hack/cluster-status.sh >/dev/null 2>&1; then
    hack/cluster-up.sh >/dev/null
    E2E_CLUSTER_WAS_DOWN=1
  fi
  export KUBECONFIG="$(cluster_dir)/admin.kubeconfig"
  NMO_ETCD_URL="http://127.0.0.1:$(sed -n 's/^ETCD_PORT=//p' "$(cluster_dir)/ports.env")"
  export NMO_ETCD_URL
  export PATH="$1:$(repo_root)/build/bin:${PATH}"
  # The RBAC proof: the e2e tests run the operator with a token of its ServiceAccount, bound
  # only to deploy/rbac's roles (applied here with the CRD and namespaces).
  NMO_OPERATOR_KUBECONFIG="$(hack/operator-kubeconfig.sh)"
  export NMO_OPERATOR_KUBECONFIG
}

e2e_environment() {
  e2e_wait_build "${E2E_TESTENV_PID}" "${E2E_TESTENV_LOG}"
  wait "${E2E_PROMCHECK_PID}" || { rm -f "${E2E_PROMCHECK_LOG}"; die "building test/tools/promcheck failed"; }
  NMO_PROMCHECK="$(tail -n 1 "${E2E_PROMCHECK_LOG}")"
  rm -f "${E2E_PROMCHECK_LOG}"
  export NMO_PROMCHECK
  wait "${E2E_OLMCHECK_PID}" || { rm -f "${E2E_OLMCHECK_LOG}"; die "building test/tools/olmcheck failed"; }
  NMO_OLMCHECK="$(tail -n 1 "${E2E_OLMCHECK_LOG}")"
  rm -f "${E2E_OLMCHECK_LOG}"
  export NMO_OLMCHECK

  e2e_use_cluster "${E2E_BIN_DIR}"
  E2E_STARTED_CLUSTER=${E2E_CLUSTER_WAS_DOWN}
  # The version it runs (KUBE_VERSION=1.27 make e2e-test uses that one alone): cleanup stops that
  # cluster, never another one that was already up.
  E2E_CLUSTER_VERSION="$(testenv_kube_version)"
  if [[ "${NMO_REAL_NODE:-0}" == 1 ]]; then hack/real-node.sh up; fi
}

e2e_environment_oldest() {
  e2e_wait_build "${E2E_OLDEST_TESTENV_PID}" "${E2E_OLDEST_TESTENV_LOG}"
  KUBE_VERSION="$(testenv_oldest_version)"
  export KUBE_VERSION
  e2e_use_cluster "${E2E_BIN_DIR}"
  E2E_STARTED_OLDEST_CLUSTER=${E2E_CLUSTER_WAS_DOWN}
}

e2e_cluster_cleanup() {
  [[ -n "${NMO_IMAGE_ARCHIVE:-}" ]] && rm -f "${NMO_IMAGE_ARCHIVE}"
  if ((E2E_STARTED_OLDEST_CLUSTER == 1)); then
    KUBE_VERSION="$(testenv_oldest_version)" hack/cluster-down.sh >/dev/null || true
    E2E_STARTED_OLDEST_CLUSTER=0
  fi
  if ((E2E_STARTED_CLUSTER == 1)); then
    KUBE_VERSION="${E2E_CLUSTER_VERSION}" hack/cluster-down.sh >/dev/null || true
    E2E_STARTED_CLUSTER=0
  fi
}
