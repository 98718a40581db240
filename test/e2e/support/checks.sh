# Assertions for the shell end-to-end tests (sourced after hack/testenv-lib.sh, whose
# wait_until they use; test/e2e/*_test.sh). Set before sourcing:
#   checks_name   the tag of every line the test prints ("deploy-test")
#   work          a scratch directory of the test's own
# The test reads passed/failed at the end and exits non-zero when anything failed.
# shellcheck shell=bash
passed=0
failed=0
say() { printf '[%s %s] %s\n' "${checks_name}" "$(date +%H:%M:%S)" "$*" >&2; }
pass() {
  passed=$((passed + 1))
  say "ok: $*"
}
fail() {
  failed=$((failed + 1))
  say "FAIL: $*"
}
# check <description> <command...>: one assertion; the command's output is shown when it fails.
check() {
  local what="$1"
  shift
  if "$@" >"${work}/check.out" 2>&1; then
    pass "${what}"
  else
    fail "${what}"
    sed 's/^/    /' "${work}/check.out" >&2
  fi
}
