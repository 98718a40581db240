// List responses: decoding one page of a `GET .../<plural>?limit=N` answer (a PodList, NodeList,
// ...) straight into projections, with the paging metadata a reflector needs to continue.
//
// The page is parsed into an arena (Boost.JSON monotonic_resource) that is freed before
// decode_list returns: only the projections survive. Request pages (limit=500, as kube-rs and
// client-go do), not whole lists, so the transient DOM stays small.
//
// Threading: pure functions; safe to call from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json/fwd.hpp>

#include "base/result.h"
#include "kube/api/resource.h"

namespace nmo::kube {

// One page of a list of T.
template <typename T>
struct ListPage {
  std::vector<T> items;
  std::string resource_version;  // metadata.resourceVersion: watch from here after the last page
  std::string continue_token;    // metadata.continue: "" on the last page
  std::optional<std::int64_t> remaining_item_count;  // metadata.remainingItemCount, when sent
};

namespace internal {

// The paging metadata of a list.
struct ListMetadata {
  std::string resource_version;
  std::string continue_token;
  std::optional<std::int64_t> remaining_item_count;
};

// Receives the items of a list as visit_list() walks them.
class ListItemSink {
 public:
  virtual ~ListItemSink() = default;
  // Called once, before the first item, with the number of items.
  virtual void reserve(std::size_t count) = 0;
  // Decodes and keeps one item; an error stops the walk.
  virtual Result<void> add(const boost::json::value& item) = 0;
};

// Parses a list body, checks its kind (`<item_kind>List`, when present) and hands each entry of
// `items` to `sink`. An item error comes back as "items[3] (default/web-1): <error>", keeping
// the item error's code. Other errors are ErrorCode::kInvalid: "malformed list (syntax error at
// byte 12)", `expected kind "PodList", got "Status"`, "items: expected an array, got object".
[[nodiscard]] Result<ListMetadata> visit_list(std::string_view body, std::string_view item_kind,
                                              ListItemSink& sink);

}  // namespace internal

// Decodes one list page into projections through ResourceInfo<T>::decode. A null or absent
// `items` is an empty page. A bad item fails the whole page with an error naming its index and
// namespace/name, e.g.
//   items[3] (default/web-1): spec.nodeName: expected a string, got number
template <Resource T>
[[nodiscard]] Result<ListPage<T>> decode_list(std::string_view body) {
  class Sink final : public internal::ListItemSink {
   public:
    explicit Sink(std::vector<T>& items) : items_(items) {}
    void reserve(std::size_t count) override { items_.reserve(count); }
    Result<void> add(const boost::json::value& item) override {
      NMO_TRY_ASSIGN(T decoded, ResourceInfo<T>::decode(item));
      items_.push_back(std::move(decoded));
      return {};
    }

   private:
    std::vector<T>& items_;
  };

  ListPage<T> page;
  Sink sink(page.items);
  NMO_TRY_ASSIGN(internal::ListMetadata metadata,
                 internal::visit_list(body, ResourceInfo<T>::kKind, sink));
  page.resource_version = std::move(metadata.resource_version);
  page.continue_token = std::move(metadata.continue_token);
  page.remaining_item_count = metadata.remaining_item_count;
  return page;
}

}  // namespace nmo::kube
