#include "kube/api/int_or_string.h"

#include <boost/json/object.hpp>
#include <boost/json/string.hpp>
#include <boost/json/value.hpp>

#include "kube/api/internal/decoders.h"

namespace nmo::kube {

Result<IntOrString> decode_int_or_string(const boost::json::value& value) {
  return internal::decode_int_or_string_at(value, internal::FieldPath());
}

namespace internal {

Result<IntOrString> decode_int_or_string_at(const boost::json::value& value,
                                            const FieldPath& path) {
  if (const boost::json::string* text = value.if_string()) {
    return IntOrString::from_string(std::string(text->data(), text->size()));
  }
  if (!value.is_number()) {
    return type_error(path, "an integer or a string", value);
  }
  NMO_TRY_ASSIGN(const std::int64_t number, to_int64(value, path));
  return IntOrString::from_int(number);
}

Result<std::optional<IntOrString>> get_optional_int_or_string(const boost::json::object& parent,
                                                              std::string_view key,
                                                              const FieldPath& path) {
  const boost::json::value* field = find_field(parent, key);
  if (field == nullptr) return std::optional<IntOrString>();
  NMO_TRY_ASSIGN(IntOrString value, decode_int_or_string_at(*field, path.field(key)));
  return std::optional<IntOrString>(std::move(value));
}

}  // namespace internal

}  // namespace nmo::kube
