// Options of the Kubernetes API calls (client.h), as plain values: list paging and selectors,
// watch parameters, delete preconditions, patch types, eviction options. Each knows how to
// render itself as a query string or request body.
//
// Threading: plain value types.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace nmo::kube {

/// GET on a collection. An empty `limit` (0) lists everything in one response.
struct ListOptions {
  std::string label_selector;          ///< e.g. "app=web,tier in (a,b)"
  std::string field_selector;          ///< e.g. "spec.nodeName=node-worker-01"
  std::int64_t limit = 500;            ///< page size (kube-rs and client-go pagers use 500)
  std::string continue_token;          ///< from the previous page
  std::string resource_version;        ///< "" = most recent (consistent read)
  std::string resource_version_match;  ///< "NotOlderThan" / "Exact", with resource_version

  /// "?limit=500&labelSelector=..." (percent-encoded), or "" when nothing is set.
  [[nodiscard]] std::string query() const;
};

/// A watch on a collection.
struct WatchOptions {
  std::string label_selector;
  std::string field_selector;
  /// Start after this version (from a list or the last event). "" starts "now" with synthetic
  /// ADDED events for existing objects; reflectors always list first and pass its version.
  std::string resource_version;
  bool allow_bookmarks = true;
  /// The server ends the watch after this long (client-go uses 5-10 min; kube-rs 290 s).
  std::chrono::seconds timeout{290};
  /// Client side: a stream silent for this long is considered dead. The server sends bookmarks
  /// about every minute when allowed, so this only fires on a broken connection.
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(300)};

  /// "?watch=true&resourceVersion=...&allowWatchBookmarks=true&timeoutSeconds=290..."
  [[nodiscard]] std::string query() const;
};

/// DELETE options (body of the request).
struct DeleteOptions {
  std::optional<std::int64_t> grace_period_seconds;
  std::string precondition_uid;               ///< delete only this incarnation
  std::string precondition_resource_version;  ///< delete only this version
  std::string propagation_policy;             ///< "Foreground", "Background", "Orphan" or ""

  /// A meta.k8s.io/v1 DeleteOptions JSON document.
  [[nodiscard]] std::string body() const;
};

/// The patch formats the API server accepts.
enum class PatchType {
  kJsonPatch,       ///< RFC 6902, may carry `test` operations (application/json-patch+json)
  kMergePatch,      ///< RFC 7386 (application/merge-patch+json)
  kStrategicMerge,  ///< built-in kinds only (application/strategic-merge-patch+json)
  kApply,           ///< server-side apply (application/apply-patch+yaml); needs a field manager
};

/// The Content-Type of a patch type.
[[nodiscard]] std::string_view content_type(PatchType type) noexcept;

/// Options of a write (create, update, patch).
struct WriteOptions {
  std::string field_manager;  ///< recorded in managedFields; required for kApply
  bool force = false;         ///< server-side apply: take over conflicting fields
  bool dry_run = false;       ///< validate and admit, but persist nothing

  /// "?fieldManager=...&force=true&dryRun=All", or "".
  [[nodiscard]] std::string query() const;
};

/// Options of an eviction (policy/v1 Eviction).
struct EvictOptions {
  std::optional<std::int64_t> grace_period_seconds;  ///< overrides the pod's own grace period
  std::string precondition_uid;                      ///< evict only this incarnation of the pod
  bool dry_run = false;
  /// Asked right before the request goes out, after the client's rate limit: an error keeps it
  /// unsent and is returned. A leader checks its lease here, so that an eviction queued before
  /// the process was paused past its lease is not sent when it wakes.
  std::function<Result<void>()> fence;
};

/// Percent-encodes `value` for a query string (RFC 3986 unreserved characters stay).
[[nodiscard]] std::string query_escape(std::string_view value);

}  // namespace nmo::kube
