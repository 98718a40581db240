# Other projects' CRDs for the shell end-to-end tests (sourced, after checks.sh), taken from
# their Go modules (the module cache keeps them). Uses the test's scratch directory `work` and
# records what it installed in `installed_crds`, which the test deletes at the end.
# shellcheck shell=bash
cert_manager_module=github.com/cert-manager/cert-manager@v1.21.2
prometheus_operator_module=github.com/prometheus-operator/prometheus-operator@v0.85.0
installed_crds=()

# module_dir <module@version>: the module's directory in the module cache ("" when unavailable).
module_dir() {
  command -v go >/dev/null || return 0
  (cd "${work}" && GOFLAGS=-mod=mod go mod download -json "$1" 2>/dev/null) |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'
}

# install_crds <file>...: applies CRDs that are not installed yet (without selectableFields) and
# waits until established.
install_crds() {
  local file name
  for file in "$@"; do
    name="$(sed -n 's/^  name: //p' "${file}" | head -n 1)"
    kubectl get crd "${name}" >/dev/null 2>&1 && continue
    # Servers before 1.31 refuse selectableFields (newer projects' CRDs declare them); the
    # fixtures work without.
    kubectl create --dry-run=client -o json -f "${file}" |
      jq 'del(.spec.versions[]?.selectableFields)' |
      kubectl apply --server-side --force-conflicts -f - >/dev/null || return 1
    installed_crds+=("${name}")
    # kubectl wait fails at once, instead of waiting, while a new CRD has no status.conditions
    # yet: retry it until the deadline.
    wait_until 60 kubectl wait --for=condition=Established --timeout=10s "crd/${name}" || return 1
  done
}
