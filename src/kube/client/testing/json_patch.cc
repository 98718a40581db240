#include "kube/client/testing/json_patch.h"

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>

namespace nmo::kube::testing {
namespace {

namespace json = boost::json;

// ---- RFC 6902 -----------------------------------------------------------------------------

// An RFC 6901 JSON pointer, split into unescaped reference tokens ("" is the whole document).
struct Pointer {
  std::string text;
  std::vector<std::string> tokens;
};

Result<Pointer> parse_pointer(std::string_view text) {
  Pointer pointer{std::string(text), {}};
  if (text.empty()) return pointer;
  if (text.front() != '/') {
    return Error(ErrorCode::kInvalid,
                 "JSON pointer \"" + std::string(text) + "\" does not start with '/'");
  }
  std::string token;
  for (std::size_t i = 1; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == '/') {
      pointer.tokens.push_back(std::move(token));
      token.clear();
      continue;
    }
    if (text[i] != '~') {
      token += text[i];
      continue;
    }
    const char next = i + 1 < text.size() ? text[i + 1] : '\0';
    if (next != '0' && next != '1') {
      return Error(ErrorCode::kInvalid,
                   "JSON pointer \"" + std::string(text) + "\" has a bad '~' escape");
    }
    token += next == '0' ? '~' : '/';
    ++i;
  }
  return pointer;
}

// An array index token: digits without a leading zero (RFC 6901 section 4).
std::optional<std::size_t> parse_index(std::string_view token) {
  if (token.empty() || (token.size() > 1 && token.front() == '0')) return std::nullopt;
  std::size_t index = 0;
  const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), index);
  if (ec != std::errc() || end != token.data() + token.size()) return std::nullopt;
  return index;
}

// The value at tokens[0, count), or nullptr when the path does not exist.
json::value* resolve(json::value& doc, const std::vector<std::string>& tokens, std::size_t count) {
  json::value* at = &doc;
  for (std::size_t i = 0; i < count; ++i) {
    if (json::object* object = at->if_object()) {
      const auto found = object->find(tokens[i]);
      if (found == object->end()) return nullptr;
      at = &found->value();
    } else if (json::array* array = at->if_array()) {
      const std::optional<std::size_t> index = parse_index(tokens[i]);
      if (!index || *index >= array->size()) return nullptr;
      at = &(*array)[*index];
    } else {
      return nullptr;
    }
  }
  return at;
}

json::value* resolve(json::value& doc, const Pointer& pointer) {
  return resolve(doc, pointer.tokens, pointer.tokens.size());
}

Error cannot_apply(std::string message) { return {ErrorCode::kInvalid, std::move(message)}; }

Result<void> add(json::value& doc, const Pointer& path, json::value value) {
  if (path.tokens.empty()) {
    doc = std::move(value);
    return {};
  }
  json::value* parent = resolve(doc, path.tokens, path.tokens.size() - 1);
  const std::string& last = path.tokens.back();
  if (parent != nullptr) {
    if (json::object* object = parent->if_object()) {
      (*object)[last] = std::move(value);
      return {};
    }
    if (json::array* array = parent->if_array()) {
      if (last == "-") {
        array->push_back(std::move(value));
        return {};
      }
      const std::optional<std::size_t> index = parse_index(last);
      if (index && *index <= array->size()) {
        array->insert(array->begin() + static_cast<std::ptrdiff_t>(*index), std::move(value));
        return {};
      }
      return cannot_apply("add operation does not apply: index " + last + " out of bounds in \"" +
                          path.text + "\"");
    }
  }
  return cannot_apply("add operation does not apply: doc is missing path: \"" + path.text +
                      "\": missing value");
}

Result<void> remove(json::value& doc, const Pointer& path) {
  json::value* parent =
      path.tokens.empty() ? nullptr : resolve(doc, path.tokens, path.tokens.size() - 1);
  if (parent != nullptr) {
    const std::string& last = path.tokens.back();
    if (json::object* object = parent->if_object(); object != nullptr && object->erase(last) > 0) {
      return {};
    }
    if (json::array* array = parent->if_array()) {
      const std::optional<std::size_t> index = parse_index(last);
      if (index && *index < array->size()) {
        array->erase(array->begin() + static_cast<std::ptrdiff_t>(*index));
        return {};
      }
    }
  }
  return cannot_apply("Unable to remove nonexistent key: " + path.text + ": missing value");
}

// JSON equality as Go's encoding/json sees it: numbers compare by value whatever their
// representation (1, 1u and 1.0 are equal), objects regardless of member order.
bool json_equal(const json::value& a, const json::value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_double() || b.is_double()) return a.to_number<double>() == b.to_number<double>();
    if (a.is_int64() && b.is_int64()) return a.get_int64() == b.get_int64();
    if (a.is_uint64() && b.is_uint64()) return a.get_uint64() == b.get_uint64();
    const std::int64_t signed_value = a.is_int64() ? a.get_int64() : b.get_int64();
    const std::uint64_t unsigned_value = a.is_uint64() ? a.get_uint64() : b.get_uint64();
    return signed_value >= 0 && static_cast<std::uint64_t>(signed_value) == unsigned_value;
  }
  if (a.kind() != b.kind()) return false;
  if (a.is_array()) {
    const json::array& x = a.get_array();
    const json::array& y = b.get_array();
    if (x.size() != y.size()) return false;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (!json_equal(x[i], y[i])) return false;
    }
    return true;
  }
  if (a.is_object()) {
    const json::object& x = a.get_object();
    const json::object& y = b.get_object();
    if (x.size() != y.size()) return false;
    for (const auto& member : x) {
      const json::value* other = y.if_contains(member.key());
      if (other == nullptr || !json_equal(member.value(), *other)) return false;
    }
    return true;
  }
  return a == b;
}

Result<void> apply_operation(json::value& doc, const json::value& operation) {
  const json::object* op = operation.if_object();
  const auto string_member = [op](std::string_view key) -> const json::string* {
    const json::value* member = op == nullptr ? nullptr : op->if_contains(key);
    return member == nullptr ? nullptr : member->if_string();
  };
  const json::string* name = string_member("op");
  const json::string* path_text = string_member("path");
  if (name == nullptr || path_text == nullptr) {
    return Error(ErrorCode::kBadRequest,
                 R"(a JSON patch operation needs an "op" and a "path" string: )" +
                     json::serialize(operation));
  }
  NMO_TRY_ASSIGN(const Pointer path, parse_pointer(*path_text));
  const json::value* value = op->if_contains("value");
  const auto needs_value = [&]() -> Result<void> {
    if (value == nullptr)
      return Error(ErrorCode::kBadRequest, std::string(*name) + " operation has no value");
    return {};
  };
  const auto from = [&]() -> Result<Pointer> {
    const json::value* text = op->if_contains("from");
    if (text == nullptr || !text->is_string()) {
      return Error(ErrorCode::kBadRequest, std::string(*name) + " operation has no \"from\"");
    }
    return parse_pointer(text->get_string());
  };

  if (*name == "add") {
    NMO_TRY(needs_value());
    return add(doc, path, *value);
  }
  if (*name == "remove") return remove(doc, path);
  if (*name == "replace") {
    NMO_TRY(needs_value());
    json::value* target = resolve(doc, path);
    if (target == nullptr) {
      return cannot_apply("replace operation does not apply: doc is missing key: " + path.text +
                          ": missing value");
    }
    *target = *value;
    return {};
  }
  if (*name == "move" || *name == "copy") {
    NMO_TRY_ASSIGN(const Pointer source, from());
    const json::value* found = resolve(doc, source);
    if (found == nullptr) {
      return cannot_apply(std::string(*name) +
                          " operation does not apply: doc is missing from path: " + source.text +
                          ": missing value");
    }
    json::value copy = *found;
    if (*name == "move") {
      if (path.text.starts_with(source.text + "/")) {
        return cannot_apply("move operation does not apply: \"" + source.text +
                            "\" is a parent of \"" + path.text + "\"");
      }
      NMO_TRY(remove(doc, source));
    }
    return add(doc, path, std::move(copy));
  }
  if (*name == "test") {
    NMO_TRY(needs_value());
    const json::value* found = resolve(doc, path);
    // evanphx/json-patch: a missing path tests equal to null.
    if (found == nullptr ? value->is_null() : json_equal(*found, *value)) return {};
    return cannot_apply("testing value " + path.text + " failed: test failed");
  }
  return cannot_apply("Unexpected kind: " + std::string(*name));
}

// ---- strategic merge patch ------------------------------------------------------------------

// How a list at a path merges; an empty key means a set of strings.
struct ListRule {
  std::string_view path;
  std::string_view key;
};

// patchStrategy:"merge" lists of the built-in types that controllers patch (k8s.io/api).
constexpr ListRule kListRules[] = {
    {"status.conditions", "type"},
    {"status.addresses", "type"},
    {"metadata.ownerReferences", "uid"},
    {"metadata.finalizers", ""},
    {"spec.containers", "name"},
    {"spec.initContainers", "name"},
    {"spec.volumes", "name"},
};

const ListRule* list_rule(std::string_view path) {
  for (const ListRule& rule : kListRules) {
    if (rule.path == path) return &rule;
  }
  return nullptr;
}

constexpr std::string_view kPatchDirective = "$patch";
constexpr std::string_view kRetainKeys = "$retainKeys";
constexpr std::string_view kSetElementOrder = "$setElementOrder/";
constexpr std::string_view kDeleteFromPrimitiveList = "$deleteFromPrimitiveList/";

std::string child_path(std::string_view path, std::string_view key) {
  return path.empty() ? std::string(key) : std::string(path) + "." + std::string(key);
}

bool is_directive(const json::value& patch, std::string_view directive) {
  const json::object* object = patch.if_object();
  if (object == nullptr) return false;
  const json::value* found = object->if_contains(kPatchDirective);
  return found != nullptr && found->is_string() && found->get_string() == directive;
}

Result<json::value> merge_value(const json::value& target, const json::value& patch,
                                const std::string& path);

// A list with a merge rule: item by item (see apply_strategic_merge_patch()).
Result<json::value> merge_list(const json::value& target, const json::array& patch,
                               const ListRule& rule) {
  json::array result;
  if (const json::array* existing = target.if_array()) result = *existing;
  if (rule.key.empty()) {
    for (const json::value& item : patch) {
      if (std::none_of(result.begin(), result.end(),
                       [&](const json::value& x) { return json_equal(x, item); })) {
        result.push_back(item);
      }
    }
    return json::value(std::move(result));
  }
  if (std::any_of(patch.begin(), patch.end(),
                  [](const json::value& item) { return is_directive(item, "replace"); })) {
    result.clear();
  }
  for (const json::value& item : patch) {
    if (is_directive(item, "replace")) continue;
    const json::object* object = item.if_object();
    const json::value* key = object == nullptr ? nullptr : object->if_contains(rule.key);
    if (key == nullptr) {
      return Error(ErrorCode::kBadRequest,
                   "map: " + json::serialize(item) +
                       " does not contain declared merge key: " + std::string(rule.key));
    }
    const auto match = std::find_if(result.begin(), result.end(), [&](const json::value& x) {
      const json::value* other = x.is_object() ? x.get_object().if_contains(rule.key) : nullptr;
      return other != nullptr && json_equal(*other, *key);
    });
    if (is_directive(item, "delete")) {
      if (match != result.end()) result.erase(match);
      continue;
    }
    const std::string path(rule.path);
    if (match != result.end()) {
      NMO_TRY_ASSIGN(*match, merge_value(*match, item, path));
    } else {
      NMO_TRY_ASSIGN(json::value added, merge_value(json::value(), item, path));
      result.push_back(std::move(added));
    }
  }
  return json::value(std::move(result));
}

// One value of a strategic merge patch at `path` (dotted, from the document root).
Result<json::value> merge_value(const json::value& target, const json::value& patch,
                                const std::string& path) {
  const json::object* members = patch.if_object();
  if (members == nullptr) {
    if (const json::array* items = patch.if_array()) {
      // A list without a merge rule is replaced; its items lose their directives.
      json::array replaced;
      for (const json::value& item : *items) {
        NMO_TRY_ASSIGN(json::value clean, merge_value(json::value(), item, path));
        replaced.push_back(std::move(clean));
      }
      return json::value(std::move(replaced));
    }
    return patch;
  }
  json::object result;
  if (!is_directive(patch, "replace")) {
    if (const json::object* existing = target.if_object()) result = *existing;
  }
  const json::value* retain = nullptr;
  for (const auto& member : *members) {
    const std::string_view key = member.key();
    const json::value& value = member.value();
    if (key == kPatchDirective || key.starts_with(kSetElementOrder)) continue;
    if (key == kRetainKeys) {
      retain = &value;
      continue;
    }
    if (key.starts_with(kDeleteFromPrimitiveList)) {
      const std::string list(key.substr(kDeleteFromPrimitiveList.size()));
      json::array* current = result.contains(list) ? result[list].if_array() : nullptr;
      if (current == nullptr || !value.is_array()) continue;
      for (const json::value& gone : value.get_array()) {
        const auto kept = std::remove_if(current->begin(), current->end(),
                                         [&](const json::value& x) { return json_equal(x, gone); });
        current->erase(kept, current->end());
      }
      continue;
    }
    if (value.is_null() || is_directive(value, "delete")) {
      result.erase(key);
      continue;
    }
    const std::string at = child_path(path, key);
    const json::value* current = result.if_contains(key);
    const json::value none;
    if (const ListRule* rule = list_rule(at); rule != nullptr && value.is_array()) {
      NMO_TRY_ASSIGN(result[key], merge_list(current ? *current : none, value.get_array(), *rule));
    } else {
      NMO_TRY_ASSIGN(result[key], merge_value(current ? *current : none, value, at));
    }
  }
  if (retain != nullptr && retain->is_array()) {
    std::vector<std::string> dropped;
    for (const auto& member : result) {
      const auto& keys = retain->get_array();
      if (std::none_of(keys.begin(), keys.end(), [&](const json::value& k) {
            return k.is_string() && k.get_string() == member.key();
          })) {
        dropped.emplace_back(member.key());
      }
    }
    for (const std::string& key : dropped) result.erase(key);
  }
  return json::value(std::move(result));
}

}  // namespace

json::value apply_merge_patch(const json::value& target, const json::value& patch) {
  const json::object* members = patch.if_object();
  if (members == nullptr) return patch;
  json::object result;
  if (const json::object* existing = target.if_object()) result = *existing;
  for (const auto& member : *members) {
    if (member.value().is_null()) {
      result.erase(member.key());
      continue;
    }
    const json::value* current = result.if_contains(member.key());
    result[member.key()] = apply_merge_patch(current ? *current : json::value(), member.value());
  }
  // Not `return {result};`: a braced list would pick json::value's initializer-list constructor.
  return json::value(std::move(result));  // NOLINT(modernize-return-braced-init-list)
}

Result<json::value> apply_json_patch(const json::value& target, const json::value& patch) {
  const json::array* operations = patch.if_array();
  if (operations == nullptr) {
    return Error(ErrorCode::kBadRequest, "json: cannot unmarshal " +
                                             std::string(patch.is_object() ? "object" : "value") +
                                             " into Go value of type jsonpatch.Patch");
  }
  json::value doc = target;
  for (const json::value& operation : *operations) NMO_TRY(apply_operation(doc, operation));
  return doc;
}

Result<json::value> apply_strategic_merge_patch(const json::value& target,
                                                const json::value& patch) {
  if (!patch.is_object()) {
    return Error(ErrorCode::kBadRequest, "a strategic merge patch must be a JSON object");
  }
  return merge_value(target, patch, "");
}

}  // namespace nmo::kube::testing
