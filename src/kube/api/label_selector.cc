#include "kube/api/label_selector.h"

#include <algorithm>
#include <cstddef>
#include <optional>
#include <utility>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "base/strings.h"
#include "kube/api/internal/decoders.h"
#include "kube/api/internal/json_fields.h"

namespace nmo::kube {
namespace {

using internal::FieldPath;

// Longest selector text quoted in an error message.
constexpr std::size_t kQuoteLimit = 200;
// Longest key or value quoted in an error message (valid keys have at most 253 + 1 + 63 bytes).
constexpr std::size_t kKeyQuoteLimit = 320;

bool is_alnum(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// A label name or non-empty value: at most 63 characters, alphanumeric at both ends,
// [-_.A-Za-z0-9] in between (Kubernetes IsQualifiedName's name part).
bool is_label_name(std::string_view name) noexcept {
  if (name.empty() || name.size() > 63 || !is_alnum(name.front()) || !is_alnum(name.back())) {
    return false;
  }
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return is_alnum(c) || c == '-' || c == '_' || c == '.'; });
}

// A DNS-1123 subdomain: at most 253 characters, dot-separated labels of [a-z0-9-] that start and
// end with [a-z0-9].
bool is_dns_subdomain(std::string_view name) noexcept {
  if (name.empty() || name.size() > 253) {
    return false;
  }
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = name.find('.', start);
    const std::string_view label = name.substr(start, dot - start);
    const auto lower_alnum = [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    };
    if (label.empty() || !lower_alnum(label.front()) || !lower_alnum(label.back()) ||
        !std::all_of(label.begin(), label.end(),
                     [&](char c) { return lower_alnum(c) || c == '-'; })) {
      return false;
    }
    if (dot == std::string_view::npos) {
      return true;
    }
    start = dot + 1;
  }
}

// `[prefix/]name`, prefix a DNS subdomain.
bool is_label_key(std::string_view key) noexcept {
  const std::size_t slash = key.find('/');
  if (slash == std::string_view::npos) {
    return is_label_name(key);
  }
  return is_dns_subdomain(key.substr(0, slash)) && is_label_name(key.substr(slash + 1));
}

bool is_label_value(std::string_view value) noexcept {
  return value.empty() || is_label_name(value);
}

std::string invalid_key_message(std::string_view key) {
  return "invalid label key " + quoted(key, kKeyQuoteLimit);
}

std::string invalid_value_message(std::string_view key, std::string_view value) {
  return "invalid label value " + quoted(value, kKeyQuoteLimit) + " for key " +
         quoted(key, kKeyQuoteLimit);
}

std::optional<SelectorOperator> operator_from_string(std::string_view text) noexcept {
  for (const SelectorOperator op : {SelectorOperator::kIn, SelectorOperator::kNotIn,
                                    SelectorOperator::kExists, SelectorOperator::kDoesNotExist}) {
    if (to_string(op) == text) {
      return op;
    }
  }
  return std::nullopt;
}

bool takes_values(SelectorOperator op) noexcept {
  return op == SelectorOperator::kIn || op == SelectorOperator::kNotIn;
}

Result<LabelSelectorRequirement> decode_requirement(const boost::json::value& value,
                                                    const FieldPath& path) {
  const boost::json::object* object = value.if_object();
  if (object == nullptr) {
    return internal::type_error(path, "an object", value);
  }
  LabelSelectorRequirement requirement;
  NMO_TRY_ASSIGN(requirement.key, internal::get_string(*object, "key", path));
  if (!is_label_key(requirement.key)) {
    return internal::field_error(path.field("key"), invalid_key_message(requirement.key));
  }
  NMO_TRY_ASSIGN(const std::string op_text, internal::get_string(*object, "operator", path));
  const std::optional<SelectorOperator> op = operator_from_string(op_text);
  if (!op.has_value()) {
    return internal::field_error(path.field("operator"),
                                 "unknown selector operator " + quoted(op_text, kKeyQuoteLimit));
  }
  requirement.op = *op;
  NMO_TRY_ASSIGN(requirement.values, internal::get_string_list(*object, "values", path));
  if (takes_values(*op) == requirement.values.empty()) {
    return internal::field_error(path.field("values"),
                                 takes_values(*op) ? "must be non-empty for operator " + op_text
                                                   : "must be empty for operator " + op_text);
  }
  const FieldPath values_path = path.field("values");
  for (std::size_t i = 0; i < requirement.values.size(); ++i) {
    if (!is_label_value(requirement.values[i])) {
      return internal::field_error(values_path.element(i),
                                   invalid_value_message(requirement.key, requirement.values[i]));
    }
  }
  return requirement;
}

// Characters of a key token (a value token has no '/').
bool is_key_char(char c) noexcept {
  return is_alnum(c) || c == '-' || c == '_' || c == '.' || c == '/';
}

// Recursive-descent parser for the query-string form; see parse_selector().
class SelectorParser {
 public:
  explicit SelectorParser(std::string_view text) : text_(text) {}

  Result<LabelSelector> parse() {
    LabelSelector selector;
    skip_spaces();
    if (at_end()) {
      return selector;
    }
    while (true) {
      NMO_TRY(requirement(selector));
      skip_spaces();
      if (at_end()) {
        return selector;
      }
      if (!accept(",")) {
        return fail("expected ','");
      }
    }
  }

 private:
  Result<void> requirement(LabelSelector& selector) {
    skip_spaces();
    if (accept("!")) {
      NMO_TRY_ASSIGN(std::string key, label_key());
      selector.match_expressions.push_back({std::move(key), SelectorOperator::kDoesNotExist, {}});
      return {};
    }
    NMO_TRY_ASSIGN(std::string key, label_key());
    skip_spaces();
    if (at_end() || peek(',')) {
      selector.match_expressions.push_back({std::move(key), SelectorOperator::kExists, {}});
      return {};
    }
    if (accept("==") || accept("=")) {
      NMO_TRY_ASSIGN(std::string value, label_value(key));
      add_equality(selector, std::move(key), std::move(value));
      return {};
    }
    if (accept("!=")) {
      NMO_TRY_ASSIGN(std::string value, label_value(key));
      selector.match_expressions.push_back(
          {std::move(key), SelectorOperator::kNotIn, {std::move(value)}});
      return {};
    }
    const std::size_t word_start = pos_;
    const std::string_view word = token();
    if (word != "in" && word != "notin") {
      pos_ = word_start;
      return fail("expected '=', '==', '!=', 'in', 'notin', ',' or the end");
    }
    const SelectorOperator op = word == "in" ? SelectorOperator::kIn : SelectorOperator::kNotIn;
    skip_spaces();
    if (!accept("(")) {
      return fail("expected '('");
    }
    std::vector<std::string> values;
    while (true) {
      NMO_TRY_ASSIGN(std::string value, label_value(key));
      values.push_back(std::move(value));
      skip_spaces();
      if (accept(")")) {
        break;
      }
      if (!accept(",")) {
        return fail("expected ',' or ')'");
      }
    }
    selector.match_expressions.push_back({std::move(key), op, std::move(values)});
    return {};
  }

  // key=value: into match_labels unless the key is there already with another value.
  static void add_equality(LabelSelector& selector, std::string key, std::string value) {
    const std::string* existing = selector.match_labels.find(key);
    if (existing == nullptr) {
      selector.match_labels.set(std::move(key), std::move(value));
    } else if (*existing != value) {
      selector.match_expressions.push_back(
          {std::move(key), SelectorOperator::kIn, {std::move(value)}});
    }
  }

  Result<std::string> label_key() {
    skip_spaces();
    const std::size_t start = pos_;
    const std::string_view key = token();
    if (key.empty()) {
      return fail("expected a label key");
    }
    if (!is_label_key(key)) {
      pos_ = start;
      return fail(invalid_key_message(key));
    }
    return std::string(key);
  }

  Result<std::string> label_value(std::string_view key) {
    skip_spaces();
    const std::size_t start = pos_;
    const std::string_view value = token();
    if (!is_label_value(value)) {
      pos_ = start;
      return fail(invalid_value_message(key, value));
    }
    return std::string(value);
  }

  // The longest run of key characters at the cursor (possibly empty).
  std::string_view token() {
    const std::size_t start = pos_;
    while (!at_end() && is_key_char(text_[pos_])) {
      ++pos_;
    }
    return text_.substr(start, pos_ - start);
  }

  void skip_spaces() {
    while (!at_end() && (text_[pos_] == ' ' || text_[pos_] == '\t')) {
      ++pos_;
    }
  }

  [[nodiscard]] bool at_end() const { return pos_ >= text_.size(); }
  [[nodiscard]] bool peek(char c) const { return !at_end() && text_[pos_] == c; }

  bool accept(std::string_view literal) {
    if (text_.substr(pos_).starts_with(literal)) {
      pos_ += literal.size();
      return true;
    }
    return false;
  }

  [[nodiscard]] Error fail(const std::string& why) const {
    return {ErrorCode::kInvalid, "invalid label selector \"" +
                                     printable_prefix(text_, kQuoteLimit) + "\": " + why +
                                     " at offset " + std::to_string(pos_)};
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

void append_values(std::string& out, const std::vector<std::string>& values) {
  out += " (";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i != 0) {
      out += ',';
    }
    out += values[i];
  }
  out += ')';
}

}  // namespace

std::string_view to_string(SelectorOperator op) noexcept {
  switch (op) {
    case SelectorOperator::kIn:
      return "In";
    case SelectorOperator::kNotIn:
      return "NotIn";
    case SelectorOperator::kExists:
      return "Exists";
    case SelectorOperator::kDoesNotExist:
      return "DoesNotExist";
  }
  return "Unknown";  // an out-of-range value cast into SelectorOperator
}

bool LabelSelectorRequirement::matches(const Labels& labels) const {
  const std::string* value = labels.find(key);
  const auto listed = [&] {
    return std::find(values.begin(), values.end(), *value) != values.end();
  };
  switch (op) {
    case SelectorOperator::kIn:
      return value != nullptr && listed();
    case SelectorOperator::kNotIn:
      return value == nullptr || !listed();
    case SelectorOperator::kExists:
      return value != nullptr;
    case SelectorOperator::kDoesNotExist:
      return value == nullptr;
  }
  return false;
}

bool LabelSelector::matches(const Labels& labels) const {
  for (const auto& [key, wanted] : match_labels) {
    const std::string* value = labels.find(key);
    if (value == nullptr || *value != wanted) {
      return false;
    }
  }
  return std::all_of(match_expressions.begin(), match_expressions.end(),
                     [&](const LabelSelectorRequirement& r) { return r.matches(labels); });
}

std::string LabelSelector::to_query() const {
  std::string out;
  for (const auto& [key, value] : match_labels) {
    if (!out.empty()) {
      out += ',';
    }
    out += key;
    out += '=';
    out += value;
  }
  for (const LabelSelectorRequirement& requirement : match_expressions) {
    if (!out.empty()) {
      out += ',';
    }
    switch (requirement.op) {
      case SelectorOperator::kIn:
        out += requirement.key;
        out += " in";
        append_values(out, requirement.values);
        break;
      case SelectorOperator::kNotIn:
        out += requirement.key;
        out += " notin";
        append_values(out, requirement.values);
        break;
      case SelectorOperator::kExists:
        out += requirement.key;
        break;
      case SelectorOperator::kDoesNotExist:
        out += '!';
        out += requirement.key;
        break;
    }
  }
  return out;
}

Result<LabelSelector> decode_label_selector(const boost::json::value& selector) {
  return internal::decode_label_selector_at(selector, FieldPath());
}

boost::json::object encode_label_selector(const LabelSelector& selector) {
  boost::json::object out;
  if (!selector.match_labels.empty()) {
    boost::json::object labels;
    for (const auto& [key, value] : selector.match_labels) {
      labels[key] = value;
    }
    out["matchLabels"] = std::move(labels);
  }
  if (!selector.match_expressions.empty()) {
    boost::json::array expressions;
    expressions.reserve(selector.match_expressions.size());
    for (const LabelSelectorRequirement& requirement : selector.match_expressions) {
      boost::json::object expression{{"key", requirement.key},
                                     {"operator", to_string(requirement.op)}};
      if (!requirement.values.empty()) {
        boost::json::array values;
        values.reserve(requirement.values.size());
        for (const std::string& value : requirement.values) {
          values.emplace_back(value);
        }
        expression["values"] = std::move(values);
      }
      expressions.emplace_back(std::move(expression));
    }
    out["matchExpressions"] = std::move(expressions);
  }
  return out;
}

Result<LabelSelector> parse_selector(std::string_view text) { return SelectorParser(text).parse(); }

namespace internal {

Result<LabelSelector> decode_label_selector_at(const boost::json::value& selector,
                                               const FieldPath& path) {
  LabelSelector out;
  if (selector.is_null()) {
    return out;
  }
  const boost::json::object* object = selector.if_object();
  if (object == nullptr) {
    return type_error(path, "an object", selector);
  }
  NMO_TRY_ASSIGN(out.match_labels, get_string_map(*object, "matchLabels", path));
  const FieldPath labels_path = path.field("matchLabels");
  for (const auto& [key, value] : out.match_labels) {
    if (!is_label_key(key)) {
      return field_error(labels_path, invalid_key_message(key));
    }
    if (!is_label_value(value)) {
      return field_error(labels_path.field(key), invalid_value_message(key, value));
    }
  }
  NMO_TRY_ASSIGN(const boost::json::array* expressions,
                 get_array(*object, "matchExpressions", path));
  if (expressions != nullptr) {
    const FieldPath expressions_path = path.field("matchExpressions");
    out.match_expressions.reserve(expressions->size());
    for (std::size_t i = 0; i < expressions->size(); ++i) {
      NMO_TRY_ASSIGN(LabelSelectorRequirement requirement,
                     decode_requirement((*expressions)[i], expressions_path.element(i)));
      out.match_expressions.push_back(std::move(requirement));
    }
  }
  return out;
}

}  // namespace internal

}  // namespace nmo::kube
