#include "kube/config/internal/file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace nmo::kube::internal {
namespace {

// Owns one file descriptor.
class UniqueFd {
 public:
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  [[nodiscard]] int get() const { return fd_; }

 private:
  int fd_;
};

Error read_error(const std::string& path, int errno_value) {
  ErrorCode code = ErrorCode::kInternal;
  switch (errno_value) {
    case ENOENT:
    case ENOTDIR:
      code = ErrorCode::kNotFound;
      break;
    case EACCES:
    case EPERM:
      code = ErrorCode::kForbidden;
      break;
    case EISDIR:
      code = ErrorCode::kInvalid;
      break;
    default:
      break;
  }
  return Error(code, "cannot read " + path + ": " + std::generic_category().message(errno_value));
}

}  // namespace

Result<std::string> read_file(const std::string& path) {
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    return read_error(path, errno);
  }
  std::string contents;
  char buffer[8192];
  while (true) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return read_error(path, errno);
    }
    if (n == 0) {
      return contents;
    }
    contents.append(buffer, static_cast<std::size_t>(n));
    if (contents.size() > kMaxFileSize) {
      return Error(ErrorCode::kInvalid, "cannot read " + path + ": larger than " +
                                            std::to_string(kMaxFileSize >> 20U) + " MiB");
    }
  }
}

}  // namespace nmo::kube::internal
