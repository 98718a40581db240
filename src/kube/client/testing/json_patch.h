// The three patch formats of the API server, applied to raw JSON, for FakeApiServer
// (fake_api_server.h): JSON merge patch (RFC 7386), JSON patch (RFC 6902) and the part of
// Kubernetes' strategic merge patch that controllers use.
//
// Errors say what the API server's patch libraries say, without the HTTP wrapping (the fake
// server adds it): ErrorCode::kBadRequest when the patch document itself is malformed (not an
// array of operations, an operation without "op" or "path", a list item without its merge key),
// ErrorCode::kInvalid when a well-formed patch cannot be applied to this object (a path that does
// not exist, a failed `test`), with evanphx/json-patch's wording, e.g.
//   testing value /metadata/resourceVersion failed: test failed
//
// Threading: pure functions; safe to call from any thread.
#pragma once

#include <string_view>

#include <boost/json/value.hpp>

#include "base/result.h"

namespace nmo::kube::testing {

/// RFC 7386 JSON merge patch: an object patch merges into the target member by member (a null
/// member deletes, an object member merges recursively); anything else, arrays included,
/// replaces the target. Never fails.
[[nodiscard]] boost::json::value apply_merge_patch(const boost::json::value& target,
                                                   const boost::json::value& patch);

/// RFC 6902 JSON patch: `patch` is an array of operations (`add`, `remove`, `replace`, `move`,
/// `copy`, `test`) applied in order, all or nothing. Paths are RFC 6901 JSON pointers; `-` is
/// the end of an array for `add`.
[[nodiscard]] Result<boost::json::value> apply_json_patch(const boost::json::value& target,
                                                          const boost::json::value& patch);

/// Strategic merge patch, the subset that built-in kinds' controllers rely on: a JSON merge
/// patch, except for the lists that the Go types tag `patchStrategy:"merge"`, which merge item by
/// item instead of being replaced:
///   status.conditions, status.addresses               by "type"
///   metadata.ownerReferences                          by "uid"
///   spec.containers, spec.initContainers, spec.volumes by "name"
///   metadata.finalizers                               as a set of strings (union)
/// A patch item whose merge key matches a target item merges into it (recursively, as a
/// strategic merge patch); one that matches none is appended; `{"<key>": ..., "$patch":
/// "delete"}` removes the matching item. `{"$patch": "replace"}` in an object replaces the
/// target object with the rest of the patch object. `$deleteFromPrimitiveList/<list>` removes
/// values from a set-like list. `$setElementOrder/<list>` and `$retainKeys` are accepted and
/// ignored (the order of the result is the target's, new items last).
[[nodiscard]] Result<boost::json::value> apply_strategic_merge_patch(
    const boost::json::value& target, const boost::json::value& patch);

}  // namespace nmo::kube::testing
