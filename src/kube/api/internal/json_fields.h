// Typed access to the fields of a Boost.JSON object, for the projection decoders.
//
// Conventions, the same as Go's encoding/json for Kubernetes types: an absent field and a JSON
// null both mean "not set" (the zero value or std::nullopt); any other type mismatch is an
// ErrorCode::kInvalid error naming the field's path, e.g.
//   spec.taints[2].key: expected a string, got number
// Nothing here throws: Boost.JSON's throwing accessors (as_object, at, value_to) are not used.
//
// Threading: pure functions; safe to call from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "base/result.h"
#include "kube/api/labels.h"
#include "kube/api/time.h"

namespace nmo::kube::internal {

// Where a value sits in the document, e.g. "spec.taints[2].key". A chain of frames that live on
// the caller's stack; the text is built only when an error is reported, so decoding that
// succeeds never allocates for paths. A child refers to its parent by address: keep every
// FieldPath in a named variable or pass it straight as an argument, never chain off a temporary.
class FieldPath {
 public:
  // The document root (prints as "").
  FieldPath() = default;

  // The field `key` of the object at this path.
  [[nodiscard]] FieldPath field(std::string_view key) const { return {this, key, 0}; }
  // Element `index` of the array at this path.
  [[nodiscard]] FieldPath element(std::size_t index) const { return {this, {}, index}; }

  // The path as text: "metadata.name", "spec.taints[2].key", "items[3]".
  [[nodiscard]] std::string str() const;

 private:
  FieldPath(const FieldPath* parent, std::string_view key, std::size_t index)
      : parent_(parent), key_(key), index_(index) {}

  const FieldPath* parent_ = nullptr;
  std::string_view key_;  // empty for an array element
  std::size_t index_ = 0;
};

// "null", "bool", "number", "string", "array" or "object".
[[nodiscard]] std::string_view json_type_name(const boost::json::value& value) noexcept;

// The error for a value of the wrong type at `path`: "<path>: expected <expected>, got <type>"
// (just "expected ..." at the root).
[[nodiscard]] Error type_error(const FieldPath& path, std::string_view expected,
                               const boost::json::value& got);

// An ErrorCode::kInvalid error "<path>: <message>" (just the message at the root).
[[nodiscard]] Error field_error(const FieldPath& path, std::string_view message);

// The top level of a Kubernetes object: `value` must be a JSON object whose `kind`, when present
// and not empty, equals `kind` (list items carry no kind). Errors: "expected an object, got
// array", `expected kind "Pod", got "Status"`.
[[nodiscard]] Result<const boost::json::object*> object_of_kind(const boost::json::value& value,
                                                                std::string_view kind);

// The field `key` of `parent`, or nullptr when it is absent or null.
[[nodiscard]] const boost::json::value* find_field(const boost::json::object& parent,
                                                   std::string_view key) noexcept;

// Field `key` of `parent` (at `path`) as an object; nullptr when absent or null.
[[nodiscard]] Result<const boost::json::object*> get_object(const boost::json::object& parent,
                                                            std::string_view key,
                                                            const FieldPath& path);

// Field `key` as an array; nullptr when absent or null.
[[nodiscard]] Result<const boost::json::array*> get_array(const boost::json::object& parent,
                                                          std::string_view key,
                                                          const FieldPath& path);

// Field `key` as a string; "" when absent or null.
[[nodiscard]] Result<std::string> get_string(const boost::json::object& parent,
                                             std::string_view key, const FieldPath& path);

// Field `key` as a string; std::nullopt when absent or null (Go's *string).
[[nodiscard]] Result<std::optional<std::string>> get_optional_string(
    const boost::json::object& parent, std::string_view key, const FieldPath& path);

// Field `key` as a bool; false when absent or null.
[[nodiscard]] Result<bool> get_bool(const boost::json::object& parent, std::string_view key,
                                    const FieldPath& path);

// `value` (at `path`) as an integer that fits std::int64_t; a number with a fraction or an
// exponent is an error ("expected an integer, got number"), as is one out of range.
[[nodiscard]] Result<std::int64_t> to_int64(const boost::json::value& value, const FieldPath& path);

// Field `key` as an integer of type Int (Kubernetes int32 or int64); std::nullopt when absent or
// null; an error when it is not an integer or does not fit Int ("out of range for int32").
template <typename Int>
[[nodiscard]] Result<std::optional<Int>> get_optional_int(const boost::json::object& parent,
                                                          std::string_view key,
                                                          const FieldPath& path) {
  static_assert(std::is_same_v<Int, std::int32_t> || std::is_same_v<Int, std::int64_t>);
  const boost::json::value* field = find_field(parent, key);
  if (field == nullptr) {
    return std::optional<Int>();
  }
  const FieldPath here = path.field(key);
  NMO_TRY_ASSIGN(const std::int64_t wide, to_int64(*field, here));
  if (wide < std::numeric_limits<Int>::min() || wide > std::numeric_limits<Int>::max()) {
    return field_error(
        here, std::to_string(wide) + " out of range for " + (sizeof(Int) == 4 ? "int32" : "int64"));
  }
  return std::optional<Int>(static_cast<Int>(wide));
}

// Field `key` as an integer of type Int; 0 when absent or null.
template <typename Int>
[[nodiscard]] Result<Int> get_int(const boost::json::object& parent, std::string_view key,
                                  const FieldPath& path) {
  NMO_TRY_ASSIGN(const std::optional<Int> value, get_optional_int<Int>(parent, key, path));
  return value.value_or(0);
}

// Field `key` as an RFC 3339 time (see parse_time); std::nullopt when absent or null. A bad
// time is "<path>: invalid RFC 3339 time ...".
[[nodiscard]] Result<std::optional<Time>> get_optional_time(const boost::json::object& parent,
                                                            std::string_view key,
                                                            const FieldPath& path);

// Field `key` as a map of strings (labels, annotations, matchLabels); empty when absent or
// null. Keys listed in `skip` are left out.
[[nodiscard]] Result<Labels> get_string_map(const boost::json::object& parent, std::string_view key,
                                            const FieldPath& path, std::string_view skip = {});

// Field `key` as an array of strings; empty when absent or null.
[[nodiscard]] Result<std::vector<std::string>> get_string_list(const boost::json::object& parent,
                                                               std::string_view key,
                                                               const FieldPath& path);

}  // namespace nmo::kube::internal
