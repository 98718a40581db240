// Finalizers (kube-rs's runtime::finalizer as the model): whether an object carries one, and the
// guarded JSON patches that add and remove it, so that a controller's cleanup runs before the
// API server lets the object go.
//
//   if (!has_finalizer(obj.meta, kFinalizer)) co_await add_finalizer(client, path, obj.meta, ...);
//   if (obj.meta.deletion_timestamp) { cleanup...; co_await remove_finalizer(client, path, ...); }
//
// Both patches are guarded: adding tests the resourceVersion the caller read (a cache that is
// behind gets 422 Invalid or 409 Conflict and should look again shortly); removing tests that
// the entry at the index is still ours, so a finalizer another controller added or removed
// meanwhile is never touched.
//
// Threading: the patch builders are pure; the coroutines may be awaited from any executor the
// client allows.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <boost/json/array.hpp>

#include "base/result.h"
#include "http/asio.h"
#include "kube/api/meta.h"
#include "kube/client/client.h"

namespace nmo::runtime {

[[nodiscard]] bool has_finalizer(const kube::ObjectMeta& meta, std::string_view finalizer);

// The JSON patch adding `finalizer`; std::nullopt when `meta` carries it already.
[[nodiscard]] std::optional<boost::json::array> add_finalizer_patch(const kube::ObjectMeta& meta,
                                                                    std::string_view finalizer);

// The JSON patch removing `finalizer`; std::nullopt when `meta` does not carry it.
[[nodiscard]] std::optional<boost::json::array> remove_finalizer_patch(const kube::ObjectMeta& meta,
                                                                       std::string_view finalizer);

// Adds `finalizer` to the object at `path` (its main resource, not /status), as `meta` shows it.
asio::awaitable<Result<void>> add_finalizer(kube::Client& client, std::string path,
                                            kube::ObjectMeta meta, std::string finalizer);

// Removes it; an object already gone (404) counts as done.
asio::awaitable<Result<void>> remove_finalizer(kube::Client& client, std::string path,
                                               kube::ObjectMeta meta, std::string finalizer);

}  // namespace nmo::runtime
