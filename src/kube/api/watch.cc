#include "kube/api/watch.h"

#include <array>
#include <cstddef>
#include <optional>
#include <utility>

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/object.hpp>
#include <boost/json/storage_ptr.hpp>
#include <boost/json/string.hpp>

#include "base/strings.h"
#include "kube/api/internal/json_parse.h"
#include "kube/api/status.h"

namespace nmo::kube {
namespace {

// How much of a bad line an error message quotes.
constexpr std::size_t kLineQuoteLimit = 200;
// How much of an unknown type string an error message quotes.
constexpr std::size_t kTypeQuoteLimit = 64;

constexpr std::array kAllTypes = {WatchEventType::kAdded, WatchEventType::kModified,
                                  WatchEventType::kDeleted, WatchEventType::kBookmark,
                                  WatchEventType::kError};

Error invalid_line(std::string_view what, std::string_view line) {
  return {ErrorCode::kInvalid, std::string(what) + ": " + printable_prefix(line, kLineQuoteLimit)};
}

std::optional<WatchEventType> type_from_string(std::string_view text) noexcept {
  for (const WatchEventType type : kAllTypes) {
    if (to_string(type) == text) {
      return type;
    }
  }
  return std::nullopt;
}

// The first block of an event's arena: a Boost.JSON DOM takes about three times the bytes of
// compact JSON text (measured on Pod objects), so most events fit in one block.
std::size_t arena_size_for(std::string_view line) noexcept { return 3 * line.size() + 1024; }

}  // namespace

std::string_view to_string(WatchEventType type) noexcept {
  switch (type) {
    case WatchEventType::kAdded:
      return "ADDED";
    case WatchEventType::kModified:
      return "MODIFIED";
    case WatchEventType::kDeleted:
      return "DELETED";
    case WatchEventType::kBookmark:
      return "BOOKMARK";
    case WatchEventType::kError:
      return "ERROR";
  }
  return "UNKNOWN";  // an out-of-range value cast into WatchEventType
}

Result<WatchEvent> decode_watch_event(std::string_view line) {
  boost::json::storage_ptr arena =
      boost::json::make_shared_resource<boost::json::monotonic_resource>(arena_size_for(line));
  Result<boost::json::value> parsed = internal::parse_json(line, std::move(arena));
  if (!parsed.has_value()) {
    return invalid_line("malformed watch event (" + parsed.error().message + ")", line);
  }
  boost::json::object* top = parsed->if_object();
  if (top == nullptr) {
    return invalid_line("watch event is not a JSON object", line);
  }
  const boost::json::value* type_value = top->if_contains("type");
  const boost::json::string* type_text = type_value != nullptr ? type_value->if_string() : nullptr;
  if (type_text == nullptr) {
    return invalid_line("watch event without a \"type\" string", line);
  }
  const std::string_view type_view(type_text->data(), type_text->size());
  const std::optional<WatchEventType> type = type_from_string(type_view);
  if (!type.has_value()) {
    return invalid_line(
        "unknown watch event type \"" + printable_prefix(type_view, kTypeQuoteLimit) + "\"", line);
  }
  boost::json::value* object = top->if_contains("object");
  if (object == nullptr || !object->is_object()) {
    return invalid_line("watch event without an \"object\" object", line);
  }
  // The moved-to value keeps the arena alive through its storage_ptr; the rest of the line's DOM
  // (the envelope) is freed with the arena.
  return WatchEvent{*type, std::move(*object)};
}

Error error_from_watch_error(const WatchEvent& event) {
  if (event.type != WatchEventType::kError) {
    return {ErrorCode::kInternal,
            "not an ERROR watch event: " + std::string(to_string(event.type))};
  }
  Error error = error_from_status(event.object);
  if (error.http_status == 410) {
    error.code = ErrorCode::kExpired;
  }
  return error;
}

std::string resource_version_of(const boost::json::value& object) {
  const boost::json::object* top = object.if_object();
  const boost::json::value* metadata = top != nullptr ? top->if_contains("metadata") : nullptr;
  const boost::json::object* meta = metadata != nullptr ? metadata->if_object() : nullptr;
  const boost::json::value* version =
      meta != nullptr ? meta->if_contains("resourceVersion") : nullptr;
  const boost::json::string* text = version != nullptr ? version->if_string() : nullptr;
  return text != nullptr ? std::string(text->data(), text->size()) : std::string();
}

}  // namespace nmo::kube
