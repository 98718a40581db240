// The process's limit on open file descriptors (RLIMIT_NOFILE). Every watch and every request in
// flight holds a connection (one watch per cached collection and per node being drained, up to
// --evictions-in-flight-total evictions): the soft limit container runtimes set (1,024 under
// containerd 2.x) is raised to the hard one, usually far higher, so that a burst never meets it
// (docs/operations.md, "Availability of the operator").
//
// Threading: call once at start, before other threads open descriptors.
#pragma once

#include <cstdint>

#include "base/result.h"

namespace nmo {

/// The soft RLIMIT_NOFILE before and after raise_open_file_limit().
struct OpenFileLimit {
  std::uint64_t before = 0;
  std::uint64_t after = 0;
};

/// Raises the soft RLIMIT_NOFILE to the hard one (no privilege needed). A soft limit already at
/// the hard one is left alone (before == after). Fails with kInternal, naming errno, when the
/// limit cannot be read or set.
[[nodiscard]] Result<OpenFileLimit> raise_open_file_limit();

}  // namespace nmo
