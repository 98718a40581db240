# shellcheck shell=bash
# shellcheck disable=SC2154  # root is the caller's
# Shared helpers of the scenario benchmarks (hack/bench-*.sh; sourced, not executed). The caller
# sets `root` (the repository) and `log`, then calls bench_setup.

# shellcheck source=hack/testenv-lib.sh
source "${root}/hack/testenv-lib.sh"

# Checks the operator binary (NMO_OPERATOR_BIN, default the release build's; sets `binary`), brings
# the local cluster up if needed, exports KUBECONFIG and the pinned kubectl, writes the
# operator's ServiceAccount kubeconfig and takes the cluster's lock, so that no test shares the
# cluster with the benchmark. Sets bench_dir (the cluster's state directory), bench_server (the API
# server's URL), operator_kubeconfig and the ports of .cluster/ports.env (METRICS_PORT, HEALTH_PORT).
bench_setup() {
  binary="${NMO_OPERATOR_BIN:-${root}/build-release/bin/node-maintenance-operator}"
  [[ -x "${binary}" ]] || die "${binary} not found: build the release preset first (make bench does)"
  hack/cluster-status.sh >/dev/null 2>&1 || hack/cluster-up.sh >/dev/null
  eval "$(hack/cluster-env.sh)"
  operator_kubeconfig="$(hack/operator-kubeconfig.sh)"
  bench_dir="$(cluster_dir)"
  # shellcheck source=/dev/null
  source "${bench_dir}/ports.env"
  bench_server="https://127.0.0.1:${APISERVER_PORT}"
  # The tests of the default cluster (.cluster) take /tmp/nmo-cluster.lock; a cluster of its own
  # (NMO_CLUSTER_DIR) has its own lock beside its directory.
  local lock=/tmp/nmo-cluster.lock
  [[ "${bench_dir}" == "$(repo_root)/.cluster" ]] || lock="${bench_dir}.lock"
  exec 9>"${lock}"
  log "waiting for the cluster lock ${lock} (tests running?)"
  flock 9
}

# A scenario on a cluster of its own (hack/bench-scale.sh, hack/bench-cache.sh), in two steps
# around the caller's `trap cleanup EXIT`, so that its cleanup can only ever stop this cluster:
#   bench_own_cluster_select <dir>  exports NMO_CLUSTER_DIR=<dir>, ports chosen by cluster-up
#                                   among the free ones (its lock is beside it: bench_setup);
#   bench_own_cluster_up            stops what an interrupted run left there and brings it up.
# The caller's cleanup stops it with `hack/cluster-down.sh`.
bench_own_cluster_select() {
  export NMO_CLUSTER_DIR="$1"
  unset NMO_CLUSTER_PORT_BASE
}
bench_own_cluster_up() {
  hack/cluster-down.sh >/dev/null
  log "bringing up a cluster of its own in ${NMO_CLUSTER_DIR}"
  hack/cluster-up.sh >/dev/null
}

now() { date +%s.%N; }
elapsed() { awk -v from="$1" -v to="$2" 'BEGIN { printf "%.3f", to - from }'; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2; printf "%.2f", m}'; }

# start_operator <log file> [flags...]: the release operator as its ServiceAccount, metrics on
# plain HTTP and probes on the cluster's spare ports, no webhook; returns once /readyz answers 200
# and sets operator_pid.
start_operator() {
  local log_file="$1" deadline
  shift
  "${binary}" --kubeconfig="${operator_kubeconfig}" --webhook-port=0 --log-format=text \
    --metrics-bind-address="127.0.0.1:${METRICS_PORT}" --metrics-secure=false \
    --health-probe-bind-address="127.0.0.1:${HEALTH_PORT}" "$@" >"${log_file}" 2>&1 &
  operator_pid=$!
  deadline=$((SECONDS + 60))
  until curl -sf "http://127.0.0.1:${HEALTH_PORT}/readyz" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || { tail "${log_file}" >&2; die "the operator did not become ready"; }
    sleep 0.02
  done
}

stop_operator() {
  [[ -n "${operator_pid:-}" ]] || return 0
  kill "${operator_pid}" 2>/dev/null || true
  wait "${operator_pid}" 2>/dev/null || true
  operator_pid=""
}

# upstream_prepare <work dir>: the peer of the side-by-side scenarios, upstream medik8s NMO's own
# manager (the test fixture in NMO_UPSTREAM_NMO_DIR, default shared/upstream-nmo beside the
# checkout; see test/README.md), unpacked into <work dir>/upstream with a throwaway serving
# certificate where controller-runtime looks for one (its webhook server will not start without
# it; nothing calls it). Sets upstream_bin, left empty (and said) when the fixture is missing.
upstream_prepare() {
  local fixture="${NMO_UPSTREAM_NMO_DIR:-$(repo_root)/../shared/upstream-nmo}" dir="$1/upstream"
  upstream_bin=""
  if [[ ! -f "${fixture}/manager.xz" ]]; then
    log "no upstream NMO fixture in ${fixture} (NMO_UPSTREAM_NMO_DIR): its side is left out"
    return 0
  fi
  mkdir -p "${dir}/tmp/k8s-webhook-server/serving-certs"
  xz -dc "${fixture}/manager.xz" >"${dir}/manager" || die "unpacking ${fixture}/manager.xz failed"
  chmod +x "${dir}/manager"
  "$(repo_root)/hack/webhook-dev.sh" certificate "${dir}/tmp/k8s-webhook-server/serving-certs" 1 \
    DNS:localhost || die "making upstream's throwaway serving certificate failed"
  upstream_bin="${dir}/manager"
}

# start_upstream <log file>: upstream's manager as cluster admin with its Deployment's arguments
# (metrics and probes off: nothing here scrapes them); returns once its controller's worker has
# started and sets upstream_pid.
start_upstream() {
  local log_file="$1" deadline
  TMPDIR="$(dirname "${upstream_bin}")/tmp" "${upstream_bin}" --kubeconfig="${KUBECONFIG}" \
    --metrics-bind-address=0 --health-probe-bind-address=0 >"${log_file}" 2>&1 &
  upstream_pid=$!
  deadline=$((SECONDS + 60))
  until grep -qs 'Starting workers' "${log_file}"; do
    kill -0 "${upstream_pid}" 2>/dev/null || { tail "${log_file}" >&2; die "upstream's manager exited"; }
    ((SECONDS < deadline)) || { tail "${log_file}" >&2; die "upstream's manager did not start its worker"; }
    sleep 0.02
  done
}

stop_upstream() {
  [[ -n "${upstream_pid:-}" ]] || return 0
  kill "${upstream_pid}" 2>/dev/null || true
  wait "${upstream_pid}" 2>/dev/null || true
  upstream_pid=""
}

# The API server's own view, the same instrument for every side: its CPU seconds so far
# (process_cpu_seconds_total) and the requests it has answered from all clients
# (apiserver_request_total), as "<cpu> <requests>".
apiserver_usage() {
  admin_curl "${bench_server}/metrics" | awk '
    $1 == "process_cpu_seconds_total" { cpu = $2 }
    /^apiserver_request_total\{/ { requests += $NF }
    END { printf "%s %d\n", cpu, requests }'
}

# The operator's API requests so far, all codes and methods (its rest_client_requests_total).
requests_sent() {
  curl -s "http://127.0.0.1:${METRICS_PORT}/metrics" |
    awk '/^rest_client_requests_total\{/ {sum += $NF} END {printf "%d", sum}'
}

# proc_kib <pid> <VmRSS|VmHWM>: from /proc/<pid>/status, in KiB.
proc_kib() { awk -v f="$2:" '$1 == f {print $2}' "/proc/$1/status"; }

# control_plane_kib <VmRSS|VmHWM>: the sum over the cluster's components (.cluster/pids).
control_plane_kib() {
  local sum=0 pid kib
  while read -r _ pid; do
    kib="$(proc_kib "${pid}" "$1" 2>/dev/null)" || continue
    sum=$((sum + ${kib:-0}))
  done <"${bench_dir}/pids"
  echo "${sum}"
}

# admin_curl [curl args...]: a request to the API server as cluster admin.
admin_curl() {
  curl -sS --cacert "${bench_dir}/pki/ca.crt" --cert "${bench_dir}/pki/admin.crt" \
    --key "${bench_dir}/pki/admin.key" "$@"
}

# The API server's counter lines named $1 (its /metrics as cluster admin).
apiserver_metric() { admin_curl "${bench_server}/metrics" | grep "^$1{" || true; }

# bench_nodes <prefix> <from> <to> <label value>: kwok nodes <prefix>NNNNN, labelled bench=<value>
# and bench-batch=<NNNNN / 500> (so that they can be deleted in parallel batches), as
# "path<TAB>JSON" lines for bench_create.
bench_nodes() {
  awk -v prefix="$1" -v from="$2" -v to="$3" -v label="$4" 'BEGIN {
    for (i = from; i < to; i++) {
      name = sprintf("%s%05d", prefix, i)
      printf "/api/v1/nodes\t{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",", name
      printf "\"labels\":{\"bench\":\"%s\",\"kubernetes.io/hostname\":\"%s\",\"kubernetes.io/os\":\"linux\",\"bench-batch\":\"%d\"},", label, name, int(i / 500)
      printf "\"annotations\":{\"node.alpha.kubernetes.io/ttl\":\"0\",\"kwok.x-k8s.io/node\":\"fake\"}}}\n"
    }
  }'
}

# bench_pods <namespace> <node prefix> <from> <to> <pods per node> <grace seconds> [labels JSON]
# [name suffix]: bare pods bound to nodes <prefix>NNNNN with spec.nodeName (no scheduler), named
# <node>-<j><suffix>, as "path<TAB>JSON" lines for bench_create. Pods made again soon after
# their namesakes were deleted need a new suffix: kwok deletes by name, and a deletion it still
# has queued for the old pod removes the new one.
bench_pods() {
  local labels="${7:-}"
  [[ -n "${labels}" ]] || labels='{}'
  awk -v ns="$1" -v prefix="$2" -v from="$3" -v to="$4" -v per="$5" -v grace="$6" \
    -v labels="${labels}" -v suffix="${8:-}" 'BEGIN {
    for (i = from; i < to; i++) for (j = 0; j < per; j++) {
      node = sprintf("%s%05d", prefix, i)
      printf "/api/v1/namespaces/%s/pods\t{\"apiVersion\":\"v1\",\"kind\":\"Pod\",", ns
      printf "\"metadata\":{\"name\":\"%s-%d%s\",\"labels\":%s},\"spec\":{\"nodeName\":\"%s\",", node, j, suffix, labels, node
      printf "\"terminationGracePeriodSeconds\":%d,\"automountServiceAccountToken\":false,", grace
      printf "\"containers\":[{\"name\":\"c\",\"image\":\"c\"}]}}\n"
    }
  }'
}

# bench_create: POSTs each "path<TAB>JSON" line of stdin as cluster admin, up to
# NMO_BENCH_CREATE_PARALLEL (default 32) at once over HTTP/2 (one curl, `--parallel`); dies
# unless every answer is 201 Created.
bench_create() {
  local config codes
  config="$(mktemp)"
  awk -F'\t' -v server="${bench_server}" -v pki="${bench_dir}/pki" '
    {
      body = $2; gsub(/\\/, "\\\\", body); gsub(/"/, "\\\"", body)
      if (NR > 1) print "next"
      printf "url = \"%s%s\"\ncacert = \"%s/ca.crt\"\ncert = \"%s/admin.crt\"\nkey = \"%s/admin.key\"\n", server, $1, pki, pki, pki
      printf "header = \"Content-Type: application/json\"\ndata-binary = \"%s\"\n", body
      print "output = \"/dev/null\"\nsilent\nshow-error\nwrite-out = \"%{http_code}\\n\""
    }' >"${config}"
  codes="$(curl --parallel --parallel-max "${NMO_BENCH_CREATE_PARALLEL:-32}" --no-progress-meter \
    -K "${config}" 2>&1 | sort | uniq -c)"
  rm -f "${config}"
  [[ "$(awk '$2 != "201"' <<<"${codes}")" == "" ]] || die "creating objects: answers ${codes//$'\n'/, }"
}

# wait_pods_running <namespace> <count> [timeout s] [node]: until <count> pods of the namespace
# (on that node) run (kwok's pod-ready stage); not timed.
wait_pods_running() {
  local deadline=$((SECONDS + ${3:-300})) n=0 selector=status.phase=Running
  [[ -z "${4:-}" ]] || selector+=",spec.nodeName=$4"
  while ((SECONDS < deadline)); do
    n="$(kubectl get pods -n "$1" --field-selector "${selector}" --no-headers 2>/dev/null | wc -l)"
    ((n >= $2)) && return 0
    sleep 0.5
  done
  die "namespace $1: ${n} of $2 pods Running after ${3:-300} s"
}

# make_namespace <name>: creates it and waits for its default ServiceAccount (pods need it).
make_namespace() {
  kubectl create namespace "$1" >/dev/null
  local deadline=$((SECONDS + 60))
  until kubectl get serviceaccount default -n "$1" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || die "namespace $1 has no default ServiceAccount after 60 s"
    sleep 0.2
  done
}

# maintenances <prefix> <from> <to> <labels>: NodeMaintenance <node> for each node
# <prefix>NNNNN, with the labels given as a YAML flow map ("{bench: x}"), as one YAML stream for
# kubectl create.
maintenances() {
  local i node
  for ((i = $2; i < $3; i++)); do
    node="$(printf '%s%05d' "$1" "${i}")"
    printf -- '---\napiVersion: nodemaintenance.medik8s.io/v1beta1\nkind: NodeMaintenance\n'
    printf 'metadata: {name: %s, labels: %s}\nspec: {nodeName: %s, reason: bench}\n' \
      "${node}" "$4" "${node}"
  done
}

# A PodDisruptionBudget in namespace $1 selecting pods labelled blocked=true that allows no
# disruption. An integer minAvailable, since a maxUnavailable budget over bare pods (no
# controller to read the scale from) allows nothing whatever its value.
pdb_blocking() {
  kubectl apply -f - >/dev/null <<EOF
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: bench-blocking, namespace: $1}
spec:
  minAvailable: 1
  selector: {matchLabels: {blocked: "true"}}
EOF
}

# bench_delete_collections: one DELETE (a deletecollection when the path names a collection) per
# path of stdin, as cluster admin, all at once; not checked (cleanup).
bench_delete_collections() {
  local config
  config="$(mktemp)"
  awk -v server="${bench_server}" -v pki="${bench_dir}/pki" '
    {
      if (NR > 1) print "next"
      printf "url = \"%s%s\"\ncacert = \"%s/ca.crt\"\ncert = \"%s/admin.crt\"\nkey = \"%s/admin.key\"\n", server, $1, pki, pki, pki
      print "request = \"DELETE\"\noutput = \"/dev/null\"\nsilent"
    }' >"${config}"
  curl --parallel --parallel-max 16 --no-progress-meter -K "${config}" || true
  rm -f "${config}"
}
