#!/usr/bin/env bash
# Makes the base images the Containerfile names, debian:bookworm and debian:bookworm-slim, in
# the local container storage from Debian packages (one mmdebstrap run), so that `podman build
# -f Containerfile .` works here without pulling from any registry. Does nothing when both are
# there. The images use this machine's apt sources and Acquire:: options, so `apt-get install`
# inside the build reaches the same archive the machine does.
#   hack/image-base.sh            make them if either is missing
#   hack/image-base.sh --force    make both again
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=hack/testenv-lib.sh
source "${root}/hack/testenv-lib.sh"
log() { printf '[image-base %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

force=0
[[ "${1:-}" == --force ]] && force=1
for tool in mmdebstrap podman; do
  command -v "${tool}" >/dev/null || die "${tool} is not installed (run make setup)"
done
# One run at a time: make test starts one early, and its image build asks again meanwhile.
exec 9>"${TMPDIR:-/tmp}/node-maintenance-operator-image-base.lock"
flock 9
present() { ((force == 0)) && podman image exists "$1"; }
if present localhost/debian:bookworm && present localhost/debian:bookworm-slim; then
  exit 0
fi

# This machine's apt sources and the Acquire:: options it needs to reach them (a snapshot
# archive, for example, needs Check-Valid-Until false).
sources=()
[[ -s /etc/apt/sources.list ]] && sources+=(/etc/apt/sources.list)
for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
  [[ -s "${f}" ]] && sources+=("${f}")
done
((${#sources[@]} > 0)) || die "no apt sources in /etc/apt (needed to make the base images)"
aptopts=()
for f in /etc/apt/apt.conf.d/*; do
  while IFS= read -r line; do aptopts+=("--aptopt=${line}"); done < <(grep -h '^Acquire::' "${f}" || true)
done

started=${SECONDS}
tree="$(mktemp -d)"
trap 'rm -rf "${tree}"' EXIT
log "mmdebstrap bookworm (minbase)"
# The tree is merged-/usr already: usr-is-merged says so, and usrmerge (which mmdebstrap picks
# for init-system-helpers' "usrmerge | usr-is-merged") goes again with the full perl it brought,
# about 50 MB that Debian's own images do not have either.
mmdebstrap --quiet --variant=minbase --format=directory --include=usr-is-merged "${aptopts[@]}" \
  --customize-hook='chroot "$1" apt-get -qq -y purge usrmerge libfile-find-rule-perl \
    libnumber-compare-perl libtext-glob-perl perl perl-modules-5.36 libperl5.36 >/dev/null' \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
  bookworm "${tree}" "${sources[@]}" || die "mmdebstrap failed"

import_tree() { # import_tree <name>: the tree as an image
  tar -C "${tree}" --numeric-owner -cf - . |
    podman import --quiet --change 'CMD ["bash"]' - "$1" >/dev/null || die "podman import of $1 failed"
  log "$1: $(podman image inspect --format '{{.Size}}' "$1") bytes"
}
import_tree localhost/debian:bookworm

# The slim variant, like Debian's own bookworm-slim: no documentation (but the copyright
# files), manual pages or translations, now or in packages installed later.
mkdir -p "${tree}/etc/dpkg/dpkg.cfg.d"
printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' \
  'path-exclude /usr/share/man/*' 'path-exclude /usr/share/info/*' \
  'path-exclude /usr/share/locale/*' 'path-exclude /usr/share/lintian/*' \
  >"${tree}/etc/dpkg/dpkg.cfg.d/slim"
find "${tree}/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
find "${tree}/usr/share/doc" -mindepth 1 -type d -empty -delete
rm -rf "${tree}"/usr/share/{man,info,locale,lintian}/*
import_tree localhost/debian:bookworm-slim
log "done in $((SECONDS - started))s"
