// Bearer tokens for the API client: a fixed string, or a file that is re-read when it changes.
//
// Service-account tokens projected into a pod are bound and expire; the kubelet rewrites the file
// well before that (client-go re-reads it about every minute). file_token() therefore never
// caches a token for the process lifetime: it checks the file's identity (inode, size, mtime) at
// most every `check_every` and re-reads it when any of them changed.
//
// Threading: every TokenSource is thread-safe; token() may be called from any thread at any time.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "base/result.h"

namespace nmo::kube {

// Supplies the current bearer token for each request.
class TokenSource {
 public:
  virtual ~TokenSource() = default;

  // The token to send as `Authorization: Bearer <token>`. Cheap when nothing changed, so call it
  // for every request instead of keeping the string.
  [[nodiscard]] virtual Result<std::string> token() = 0;
};

// A source that always returns `token` unchanged.
[[nodiscard]] std::shared_ptr<TokenSource> static_token(std::string token);

// A source that reads the token from the file at `path`, with trailing whitespace trimmed.
// The file is (re-)read on the first call and then whenever its inode, size or modification time
// changed, checked at most every `check_every` (0 checks on every call; tests use that).
// When a re-read fails (missing, unreadable or empty file) the last good token is kept and the
// failure is logged as a warning; token() reports an error only while it never had a token:
// "cannot read <path>: <reason>" (kNotFound when missing) or "token file <path> is empty"
// (kInvalid).
[[nodiscard]] std::shared_ptr<TokenSource> file_token(
    std::string path, std::chrono::milliseconds check_every = std::chrono::seconds(10));

}  // namespace nmo::kube
