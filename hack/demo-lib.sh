#!/usr/bin/env bash
# What the demos (hack/demo.sh, hack/demo-fleet.sh) share: how they print sections, notes and the
# commands they run, and their clock. Sourced, not run.

# --- presentation -----------------------------------------------------------------------
if [[ -t 1 ]]; then
  bold=$'\033[1m' dim=$'\033[2m' cyan=$'\033[36m' green=$'\033[32m' yellow=$'\033[33m' off=$'\033[0m'
else
  bold='' dim='' cyan='' green='' yellow='' off=''
fi
chapter=0
section() { # section <title> [story chapter]
  chapter=$((chapter + 1))
  printf '\n%s== %d. %s%s%s\n' "${bold}" "${chapter}" "$1" "${2:+  (story, ${2})}" "${off}"
}
note() { printf '%s%s%s\n' "${dim}" "$*" "${off}"; }
show() { printf '%s$ %s%s\n' "${cyan}" "$*" "${off}"; }
run() { show "$*"; "$@"; }
run_sh() { show "$1"; bash -o pipefail -c "$1"; } # for commands with pipes

# (No `cmd | grep -q` tests in the demos: under pipefail, grep quitting early can fail the
# pipeline with SIGPIPE.)

# Microseconds since the epoch (bash 5).
now_us() { echo "${EPOCHREALTIME/./}"; }
seconds_since() { # seconds_since <start_us> -> "12.3"
  local us=$(($(now_us) - $1))
  printf '%d.%01d' $((us / 1000000)) $((us % 1000000 / 100000))
}
