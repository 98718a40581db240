#include "kube/api/list.h"

#include <boost/json/array.hpp>
#include <boost/json/monotonic_resource.hpp>
#include <boost/json/object.hpp>
#include <boost/json/storage_ptr.hpp>
#include <boost/json/string.hpp>
#include <boost/json/value.hpp>

#include "base/strings.h"
#include "kube/api/internal/json_fields.h"
#include "kube/api/internal/json_parse.h"

namespace nmo::kube::internal {
namespace {

// Longest namespace/name quoted for a bad item (valid ones have at most 63 + 1 + 253 bytes).
constexpr std::size_t kNameQuoteLimit = 320;

// "(namespace/name)", "(name)" or "" for the item's identity in an error message.
std::string item_identity(const boost::json::value& item) {
  std::string name;
  std::string ns;
  if (const boost::json::object* object = item.if_object()) {
    const boost::json::value* metadata = find_field(*object, "metadata");
    if (const boost::json::object* meta = metadata != nullptr ? metadata->if_object() : nullptr) {
      const boost::json::value* name_value = find_field(*meta, "name");
      if (name_value != nullptr && name_value->is_string()) {
        name.assign(name_value->get_string().data(), name_value->get_string().size());
      }
      const boost::json::value* ns_value = find_field(*meta, "namespace");
      if (ns_value != nullptr && ns_value->is_string()) {
        ns.assign(ns_value->get_string().data(), ns_value->get_string().size());
      }
    }
  }
  if (name.empty()) {
    return {};
  }
  const std::string full = ns.empty() ? name : ns + "/" + name;
  return " (" + printable_prefix(full, kNameQuoteLimit) + ")";
}

// The first block of the page's arena: a Boost.JSON DOM takes about three times the bytes of
// compact JSON text (measured on Pod objects), so a page usually fits in one block.
std::size_t arena_size_for(std::string_view body) noexcept { return 3 * body.size() + 1024; }

}  // namespace

Result<ListMetadata> visit_list(std::string_view body, std::string_view item_kind,
                                ListItemSink& sink) {
  boost::json::monotonic_resource arena(arena_size_for(body));
  Result<boost::json::value> parsed = parse_json(body, boost::json::storage_ptr(&arena));
  if (!parsed.has_value()) {
    return Error(ErrorCode::kInvalid, "malformed list (" + parsed.error().message + ")");
  }
  const std::string list_kind = std::string(item_kind) + "List";
  NMO_TRY_ASSIGN(const boost::json::object* list, object_of_kind(*parsed, list_kind));
  const FieldPath root;
  ListMetadata metadata;
  NMO_TRY_ASSIGN(const boost::json::object* meta, get_object(*list, "metadata", root));
  if (meta != nullptr) {
    const FieldPath meta_path = root.field("metadata");
    NMO_TRY_ASSIGN(metadata.resource_version, get_string(*meta, "resourceVersion", meta_path));
    NMO_TRY_ASSIGN(metadata.continue_token, get_string(*meta, "continue", meta_path));
    NMO_TRY_ASSIGN(metadata.remaining_item_count,
                   get_optional_int<std::int64_t>(*meta, "remainingItemCount", meta_path));
  }
  NMO_TRY_ASSIGN(const boost::json::array* items, get_array(*list, "items", root));
  if (items == nullptr) {
    return metadata;
  }
  sink.reserve(items->size());
  for (std::size_t i = 0; i < items->size(); ++i) {
    Result<void> added = sink.add((*items)[i]);
    if (!added.has_value()) {
      Error error = std::move(added).error();
      error.message =
          "items[" + std::to_string(i) + "]" + item_identity((*items)[i]) + ": " + error.message;
      return error;
    }
  }
  return metadata;
}

}  // namespace nmo::kube::internal
