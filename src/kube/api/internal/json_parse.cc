#include "kube/api/internal/json_parse.h"

#include <string>
#include <utility>

#include <boost/json/error.hpp>
#include <boost/json/parse_options.hpp>
#include <boost/json/parser.hpp>

namespace nmo::kube::internal {

Result<boost::json::value> parse_json(std::string_view text, boost::json::storage_ptr storage) {
  boost::json::parse_options options;
  options.max_depth = kMaxJsonDepth;
  // The parser's own work stack starts in this buffer, so small documents allocate nothing
  // beyond the DOM itself.
  unsigned char scratch[1024];
  boost::json::parser parser(boost::json::storage_ptr(), options, scratch, sizeof(scratch));
  parser.reset(std::move(storage));
  boost::system::error_code ec;
  const std::size_t consumed = parser.write(text.data(), text.size(), ec);
  if (ec) {
    std::string reason =
        ec == boost::json::error::incomplete ? std::string("incomplete JSON") : ec.message();
    return Error(ErrorCode::kInvalid, reason + " at byte " + std::to_string(consumed));
  }
  return parser.release();
}

}  // namespace nmo::kube::internal
