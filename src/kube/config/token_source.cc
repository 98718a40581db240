#include "kube/config/token_source.h"

#include <sys/stat.h>

#include <cerrno>
#include <mutex>
#include <optional>
#include <system_error>
#include <utility>

#include "base/log.h"
#include "kube/config/internal/file.h"

namespace nmo::kube {
namespace {

class StaticTokenSource final : public TokenSource {
 public:
  explicit StaticTokenSource(std::string token) : token_(std::move(token)) {}

  Result<std::string> token() override { return token_; }

 private:
  const std::string token_;
};

// What identifies one version of the file. A projected token is replaced by swapping a symlink,
// which changes the inode; an in-place rewrite changes mtime and usually the size.
struct FileStamp {
  dev_t device = 0;
  ino_t inode = 0;
  off_t size = 0;
  time_t mtime_seconds = 0;
  long mtime_nanoseconds = 0;  // NOLINT(google-runtime-int): the type of timespec::tv_nsec

  friend bool operator==(const FileStamp&, const FileStamp&) = default;
};

class FileTokenSource final : public TokenSource {
 public:
  FileTokenSource(std::string path, std::chrono::milliseconds check_every)
      : path_(std::move(path)), check_every_(check_every) {}

  Result<std::string> token() override {
    const std::lock_guard lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    if (token_.has_value() && now - last_check_ < check_every_) {
      return *token_;
    }
    last_check_ = now;
    Result<void> refreshed = refresh();
    if (!refreshed.has_value()) {
      if (!token_.has_value()) {
        return std::move(refreshed).error();
      }
      log::root().warn("cannot re-read the token file; keeping the previous token",
                       {{"path", path_}, {"error", refreshed.error().message}});
    }
    return *token_;
  }

 private:
  // Re-reads the file when its stamp differs from the one of the token we hold. The stamp is
  // taken before reading, so the token read is at least as new as the stamp recorded for it.
  Result<void> refresh() {
    struct stat st {};
    if (::stat(path_.c_str(), &st) != 0) {
      const int error = errno;
      return Error(
          error == ENOENT || error == ENOTDIR ? ErrorCode::kNotFound : ErrorCode::kInternal,
          "cannot read " + path_ + ": " + std::generic_category().message(error));
    }
    const FileStamp stamp{st.st_dev, st.st_ino, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec};
    if (token_.has_value() && stamp == stamp_) {
      return {};
    }
    NMO_TRY_ASSIGN(std::string contents, internal::read_file(path_));
    const std::size_t end = contents.find_last_not_of(" \t\n\v\f\r");
    if (end == std::string::npos) {
      return Error(ErrorCode::kInvalid, "token file " + path_ + " is empty");
    }
    contents.resize(end + 1);
    token_ = std::move(contents);
    stamp_ = stamp;
    return {};
  }

  const std::string path_;
  const std::chrono::milliseconds check_every_;

  std::mutex mu_;
  std::optional<std::string> token_;                  // guarded by mu_; the last good token
  FileStamp stamp_;                                   // guarded by mu_; the file token_ came from
  std::chrono::steady_clock::time_point last_check_;  // guarded by mu_
};

}  // namespace

std::shared_ptr<TokenSource> static_token(std::string token) {
  return std::make_shared<StaticTokenSource>(std::move(token));
}

std::shared_ptr<TokenSource> file_token(std::string path, std::chrono::milliseconds check_every) {
  return std::make_shared<FileTokenSource>(std::move(path), check_every);
}

}  // namespace nmo::kube
