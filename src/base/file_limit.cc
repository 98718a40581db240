#include "base/file_limit.h"

#include <sys/resource.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace nmo {

Result<OpenFileLimit> raise_open_file_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return Error(ErrorCode::kInternal,
                 std::string("getrlimit(RLIMIT_NOFILE): ") + std::strerror(errno));
  }
  OpenFileLimit result{.before = limit.rlim_cur, .after = limit.rlim_cur};
  if (limit.rlim_cur == limit.rlim_max) return result;
  limit.rlim_cur = limit.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return Error(ErrorCode::kInternal,
                 std::string("setrlimit(RLIMIT_NOFILE): ") + std::strerror(errno));
  }
  result.after = limit.rlim_cur;
  return result;
}

}  // namespace nmo
