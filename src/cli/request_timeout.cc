#include "cli/request_timeout.h"

#include <string>

#include "kube/api/duration.h"

namespace nmo::cli {

Result<std::chrono::milliseconds> parse_request_timeout(std::string_view text) {
  std::chrono::milliseconds timeout{0};
  if (!text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos) {
    timeout = std::chrono::seconds(std::stoll(std::string(text)));
  } else {
    NMO_TRY_ASSIGN(const kube::Duration duration, kube::parse_duration(text));
    timeout = std::chrono::duration_cast<std::chrono::milliseconds>(duration);
  }
  if (timeout.count() == 0) return std::chrono::hours(24 * 365);
  return timeout;
}

}  // namespace nmo::cli
