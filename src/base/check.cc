#include "base/check.h"

#include <cstdio>
#include <cstdlib>

namespace nmo::internal {

void check_failed(const char* file, int line, const char* condition,
                  std::string_view message) noexcept {
  // One fprintf call so lines from concurrent failures do not interleave mid-message.
  std::fprintf(stderr, "%s:%d: NMO_CHECK(%s) failed: %.*s\n", file, line, condition,
               static_cast<int>(message.size()), message.data());
  std::fflush(stderr);
  std::abort();
}

}  // namespace nmo::internal
