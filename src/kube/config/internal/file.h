// Whole-file reads for the small files a client configuration names: kubeconfigs, PEM files,
// tokens, the in-cluster namespace (private to nmo::kube_config).
//
// Threading: no shared state; safe to call from any thread.
#pragma once

#include <cstddef>
#include <string>

#include "base/result.h"

namespace nmo::kube::internal {

// Larger files are refused: a kubeconfig with many embedded certificates is well under 1 MiB,
// and the cap keeps a path such as /dev/zero from reading forever.
inline constexpr std::size_t kMaxFileSize = std::size_t{16} << 20U;

// The contents of the file at `path`. Errors, with messages "cannot read <path>: <reason>":
//   kNotFound  the file or a directory on the way does not exist (ENOENT, ENOTDIR);
//   kForbidden permission denied (EACCES, EPERM);
//   kInvalid   the file is larger than kMaxFileSize, or is a directory;
//   kInternal  any other I/O error.
[[nodiscard]] Result<std::string> read_file(const std::string& path);

}  // namespace nmo::kube::internal
