#include "kube/client/request_options.h"

#include <boost/json.hpp>

namespace nmo::kube {
namespace {

// Appends "&key=value" (or "?key=value" for the first parameter).
void add_param(std::string& query, std::string_view key, std::string_view value) {
  query += query.empty() ? '?' : '&';
  query += key;
  query += '=';
  query += query_escape(value);
}

}  // namespace

std::string query_escape(std::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(value.size());
  for (const char ch : value) {
    const auto c = static_cast<unsigned char>(ch);
    const bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved) {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4U]);
      out.push_back(kHex[c & 0xFU]);
    }
  }
  return out;
}

std::string ListOptions::query() const {
  std::string q;
  if (limit > 0) add_param(q, "limit", std::to_string(limit));
  if (!continue_token.empty()) add_param(q, "continue", continue_token);
  if (!label_selector.empty()) add_param(q, "labelSelector", label_selector);
  if (!field_selector.empty()) add_param(q, "fieldSelector", field_selector);
  if (!resource_version.empty()) add_param(q, "resourceVersion", resource_version);
  if (!resource_version_match.empty()) {
    add_param(q, "resourceVersionMatch", resource_version_match);
  }
  return q;
}

std::string WatchOptions::query() const {
  std::string q;
  add_param(q, "watch", "true");
  if (!resource_version.empty()) add_param(q, "resourceVersion", resource_version);
  if (allow_bookmarks) add_param(q, "allowWatchBookmarks", "true");
  if (timeout.count() > 0) add_param(q, "timeoutSeconds", std::to_string(timeout.count()));
  if (!label_selector.empty()) add_param(q, "labelSelector", label_selector);
  if (!field_selector.empty()) add_param(q, "fieldSelector", field_selector);
  return q;
}

std::string DeleteOptions::body() const {
  boost::json::object o{{"apiVersion", "v1"}, {"kind", "DeleteOptions"}};
  if (grace_period_seconds) o["gracePeriodSeconds"] = *grace_period_seconds;
  if (!propagation_policy.empty()) o["propagationPolicy"] = propagation_policy;
  if (!precondition_uid.empty() || !precondition_resource_version.empty()) {
    boost::json::object pre;
    if (!precondition_uid.empty()) pre["uid"] = precondition_uid;
    if (!precondition_resource_version.empty()) {
      pre["resourceVersion"] = precondition_resource_version;
    }
    o["preconditions"] = std::move(pre);
  }
  return boost::json::serialize(o);
}

std::string_view content_type(PatchType type) noexcept {
  switch (type) {
    case PatchType::kJsonPatch:
      return "application/json-patch+json";
    case PatchType::kMergePatch:
      return "application/merge-patch+json";
    case PatchType::kStrategicMerge:
      return "application/strategic-merge-patch+json";
    case PatchType::kApply:
      return "application/apply-patch+yaml";
  }
  return "application/json";
}

std::string WriteOptions::query() const {
  std::string q;
  if (!field_manager.empty()) add_param(q, "fieldManager", field_manager);
  if (force) add_param(q, "force", "true");
  if (dry_run) add_param(q, "dryRun", "All");
  return q;
}

}  // namespace nmo::kube
