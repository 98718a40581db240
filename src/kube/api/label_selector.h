// LabelSelector: metav1.LabelSelector (matchLabels + matchExpressions), decoded from JSON or
// parsed from the `labelSelector=` query form, matched against Labels with Kubernetes semantics.
//
// Empty versus absent. An empty selector ({}, or the query string "") has no requirements and
// matches every object. What an *absent* (null) selector means depends on the API: for a
// policy/v1 PodDisruptionBudget it selects no pods. Types whose selector may be absent hold a
// std::optional<LabelSelector> and decide there (see PodDisruptionBudget::selects).
//
// Threading: plain value types and pure functions; safe to use from any thread as values.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <boost/json/fwd.hpp>

#include "base/result.h"
#include "kube/api/labels.h"

namespace nmo::kube {

// The operator of a set-based requirement.
enum class SelectorOperator {
  kIn,            // the label is present and its value is one of `values`
  kNotIn,         // the label is absent, or its value is none of `values`
  kExists,        // the label is present (any value)
  kDoesNotExist,  // the label is absent
};

// The JSON spelling: "In", "NotIn", "Exists", "DoesNotExist".
[[nodiscard]] std::string_view to_string(SelectorOperator op) noexcept;

// One entry of matchExpressions.
struct LabelSelectorRequirement {
  std::string key;
  SelectorOperator op = SelectorOperator::kExists;
  std::vector<std::string> values;  // non-empty for In/NotIn, empty for Exists/DoesNotExist

  // True when `labels` satisfy this requirement.
  [[nodiscard]] bool matches(const Labels& labels) const;

  friend bool operator==(const LabelSelectorRequirement&,
                         const LabelSelectorRequirement&) = default;
};

// A conjunction: an object matches when it has every label of match_labels and satisfies every
// expression.
struct LabelSelector {
  Labels match_labels;
  std::vector<LabelSelectorRequirement> match_expressions;

  // True when there are no requirements at all: the selector matches every object.
  [[nodiscard]] bool empty() const noexcept {
    return match_labels.empty() && match_expressions.empty();
  }

  // True when `labels` satisfy all requirements (always true for an empty selector).
  [[nodiscard]] bool matches(const Labels& labels) const;

  // The query-string form for `?labelSelector=` (before URL encoding): match_labels first as
  // `key=value` in key order, then the expressions in order as `key in (a,b)`,
  // `key notin (a,b)`, `key` and `!key`, all joined by ','. Example: `app=web,tier in (a,b),!x`.
  // An empty selector gives "". parse_selector(to_query()) gives back an equal selector.
  [[nodiscard]] std::string to_query() const;

  friend bool operator==(const LabelSelector&, const LabelSelector&) = default;
};

// Decodes a metav1.LabelSelector JSON object; null gives an empty selector (callers that must
// tell null from {} look at the JSON first). Keys and values are validated as Kubernetes does
// (qualified names; values of at most 63 characters from [A-Za-z0-9-_.]), and the operator's
// value count is checked (In/NotIn need values, Exists/DoesNotExist take none). Errors are
// ErrorCode::kInvalid naming the field, e.g.
//   matchExpressions[0].operator: unknown selector operator "Maybe"
[[nodiscard]] Result<LabelSelector> decode_label_selector(const boost::json::value& selector);

// The metav1.LabelSelector JSON object: matchLabels and matchExpressions, each left out when
// empty. decode_label_selector() of it gives back an equal selector.
[[nodiscard]] boost::json::object encode_label_selector(const LabelSelector& selector);

// Parses the query-string form, as kubectl -l accepts it: requirements joined by ',', each one
// of `key=value`, `key==value`, `key!=value` (NotIn with one value), `key in (v1,v2)`,
// `key notin (v1,v2)`, `key` (Exists) or `!key` (DoesNotExist), with optional spaces around
// tokens. `key=value` goes into match_labels (a second, different value for the same key becomes
// an In expression, so `a=b,a=c` still matches nothing); the rest become match_expressions in
// order. "" is the empty selector. `<`/`>` (Gt/Lt) are not supported. Errors are
// ErrorCode::kInvalid, e.g.
//   invalid label selector "a in (b": expected ',' or ')' at offset 7
[[nodiscard]] Result<LabelSelector> parse_selector(std::string_view text);

}  // namespace nmo::kube
