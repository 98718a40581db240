#!/usr/bin/env bash
# Builds test/tools/promcheck (the strict Prometheus exposition checker the e2e tests pipe
# /metrics through) into the cache outside the repository and prints the binary's path on stdout
# (hack/go-tool-build.sh: keyed by its sources and the Go version, rebuilt only when changed).
#   hack/promcheck-build.sh            -> ~/.cache/node-maintenance-operator/tools/<hash>/promcheck
exec "$(dirname "${BASH_SOURCE[0]}")/go-tool-build.sh" promcheck
