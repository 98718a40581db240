#include "kube/api/internal/json_fields.h"

#include <cstddef>
#include <utility>

#include <boost/json/kind.hpp>
#include <boost/json/string.hpp>

namespace nmo::kube::internal {
namespace {

std::string to_std_string(const boost::json::string& text) { return {text.data(), text.size()}; }

}  // namespace

std::string FieldPath::str() const {
  std::vector<const FieldPath*> frames;
  for (const FieldPath* frame = this; frame->parent_ != nullptr; frame = frame->parent_) {
    frames.push_back(frame);
  }
  std::string out;
  for (std::size_t i = frames.size(); i-- > 0;) {  // root first
    const FieldPath& frame = *frames[i];
    if (frame.key_.empty()) {
      out += '[';
      out += std::to_string(frame.index_);
      out += ']';
    } else {
      if (!out.empty()) {
        out += '.';
      }
      out += frame.key_;
    }
  }
  return out;
}

std::string_view json_type_name(const boost::json::value& value) noexcept {
  switch (value.kind()) {
    case boost::json::kind::null:
      return "null";
    case boost::json::kind::bool_:
      return "bool";
    case boost::json::kind::int64:
    case boost::json::kind::uint64:
    case boost::json::kind::double_:
      return "number";
    case boost::json::kind::string:
      return "string";
    case boost::json::kind::array:
      return "array";
    case boost::json::kind::object:
      return "object";
  }
  return "unknown";
}

Error field_error(const FieldPath& path, std::string_view message) {
  std::string text = path.str();
  if (!text.empty()) {
    text += ": ";
  }
  text += message;
  return {ErrorCode::kInvalid, std::move(text)};
}

Error type_error(const FieldPath& path, std::string_view expected, const boost::json::value& got) {
  std::string message = "expected ";
  message += expected;
  message += ", got ";
  message += json_type_name(got);
  return field_error(path, message);
}

Result<const boost::json::object*> object_of_kind(const boost::json::value& value,
                                                  std::string_view kind) {
  const boost::json::object* object = value.if_object();
  if (object == nullptr) {
    return type_error(FieldPath(), "an object", value);
  }
  const boost::json::value* actual = find_field(*object, "kind");
  if (actual != nullptr) {
    const boost::json::string* text = actual->if_string();
    if (text == nullptr) {
      return type_error(FieldPath().field("kind"), "a string", *actual);
    }
    if (!text->empty() && *text != kind) {
      return Error(ErrorCode::kInvalid, "expected kind \"" + std::string(kind) + "\", got \"" +
                                            to_std_string(*text) + "\"");
    }
  }
  return object;
}

const boost::json::value* find_field(const boost::json::object& parent,
                                     std::string_view key) noexcept {
  const boost::json::value* field = parent.if_contains(key);
  if (field == nullptr || field->is_null()) {
    return nullptr;
  }
  return field;
}

Result<const boost::json::object*> get_object(const boost::json::object& parent,
                                              std::string_view key, const FieldPath& path) {
  const boost::json::value* field = find_field(parent, key);
  if (field == nullptr) {
    return static_cast<const boost::json::object*>(nullptr);
  }
  const boost::json::object* object = field->if_object();
  if (object == nullptr) {
    return type_error(path.field(key), "an object", *field);
  }
  return object;
}

Result<const boost::json::array*> get_array(const boost::json::object& parent, std::string_view key,
                                            const FieldPath& path) {
  const boost::json::value* field = find_field(parent, key);
  if (field == nullptr) {
    return static_cast<const boost::json::array*>(nullptr);
  }
  const boost::json::array* array = field->if_array();
  if (array == nullptr) {
    return type_error(path.field(key), "an array", *field);
  }
  return array;
}

Result<std::string> get_string(const boost::json::object& parent, std::string_view key,
                               const FieldPath& path) {
  NMO_TRY_ASSIGN(std::optional<std::string> text, get_optional_string(parent, key, path));
  return std::move(text).value_or(std::string());
}

Result<std::optional<std::string>> get_optional_string(const boost::json::object& parent,
                                                       std::string_view key,
                                                       const FieldPath& path) {
  const boost::json::value* field = find_field(parent, key);
  if (field == nullptr) {
    return std::optional<std::string>();
  }
  const boost::json::string* text = field->if_string();
  if (text == nullptr) {
    return type_error(path.field(key), "a string", *field);
  }
  return std::optional<std::string>(to_std_string(*text));
}

Result<bool> get_bool(const boost::json::object& parent, std::string_view key,
                      const FieldPath& path) {
  const boost::json::value* field = find_field(parent, key);
  if (field == nullptr) {
    return false;
  }
  const bool* flag = field->if_bool();
  if (flag == nullptr) {
    return type_error(path.field(key), "a bool", *field);
  }
  return *flag;
}

Result<std::int64_t> to_int64(const boost::json::value& value, const FieldPath& path) {
  if (const std::int64_t* signed_value = value.if_int64()) {
    return *signed_value;
  }
  if (const std::uint64_t* unsigned_value = value.if_uint64()) {
    // Boost.JSON uses uint64 only for values above INT64_MAX.
    return field_error(path, std::to_string(*unsigned_value) + " out of range for int64");
  }
  return type_error(path, "an integer", value);
}

Result<std::optional<Time>> get_optional_time(const boost::json::object& parent,
                                              std::string_view key, const FieldPath& path) {
  const boost::json::value* field = find_field(parent, key);
  if (field == nullptr) {
    return std::optional<Time>();
  }
  const boost::json::string* text = field->if_string();
  if (text == nullptr) {
    return type_error(path.field(key), "a string", *field);
  }
  Result<Time> time = parse_time(std::string_view(text->data(), text->size()));
  if (!time.has_value()) {
    return field_error(path.field(key), time.error().message);
  }
  return std::optional<Time>(*time);
}

Result<Labels> get_string_map(const boost::json::object& parent, std::string_view key,
                              const FieldPath& path, std::string_view skip) {
  NMO_TRY_ASSIGN(const boost::json::object* map, get_object(parent, key, path));
  if (map == nullptr || map->empty()) {
    return Labels();
  }
  const FieldPath here = path.field(key);
  std::vector<Labels::Entry> entries;
  entries.reserve(map->size());
  for (const boost::json::key_value_pair& entry : *map) {
    const std::string_view name(entry.key().data(), entry.key().size());
    if (!skip.empty() && name == skip) {
      continue;
    }
    const boost::json::string* text = entry.value().if_string();
    if (text == nullptr) {
      return type_error(here.field(name), "a string", entry.value());
    }
    entries.emplace_back(std::string(name), to_std_string(*text));
  }
  if (entries.size() != map->size()) {
    entries.shrink_to_fit();  // a skipped key: cached projections keep no spare capacity
  }
  return Labels(std::move(entries));
}

Result<std::vector<std::string>> get_string_list(const boost::json::object& parent,
                                                 std::string_view key, const FieldPath& path) {
  NMO_TRY_ASSIGN(const boost::json::array* array, get_array(parent, key, path));
  std::vector<std::string> out;
  if (array == nullptr) {
    return out;
  }
  const FieldPath here = path.field(key);
  out.reserve(array->size());
  for (std::size_t i = 0; i < array->size(); ++i) {
    const boost::json::string* text = (*array)[i].if_string();
    if (text == nullptr) {
      return type_error(here.element(i), "a string", (*array)[i]);
    }
    out.push_back(to_std_string(*text));
  }
  return out;
}

}  // namespace nmo::kube::internal
