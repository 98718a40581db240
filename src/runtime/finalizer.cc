#include "runtime/finalizer.h"

#include <algorithm>
#include <utility>

#include <boost/json/serialize.hpp>

namespace nmo::runtime {
namespace {

namespace json = boost::json;

asio::awaitable<Result<void>> send(kube::Client& client, std::string path, json::array patch) {
  const kube::WriteOptions options;
  const std::string body = json::serialize(patch);
  auto written = co_await client.patch(std::move(path), kube::PatchType::kJsonPatch, body, options);
  if (!written) co_return written.error();
  co_return Result<void>();
}

}  // namespace

bool has_finalizer(const kube::ObjectMeta& meta, std::string_view finalizer) {
  return std::find(meta.finalizers.begin(), meta.finalizers.end(), finalizer) !=
         meta.finalizers.end();
}

std::optional<json::array> add_finalizer_patch(const kube::ObjectMeta& meta,
                                               std::string_view finalizer) {
  if (has_finalizer(meta, finalizer)) return std::nullopt;
  json::array patch;
  patch.push_back(
      {{"op", "test"}, {"path", "/metadata/resourceVersion"}, {"value", meta.resource_version}});
  if (meta.finalizers.empty()) {
    patch.push_back({{"op", "add"},
                     {"path", "/metadata/finalizers"},
                     {"value", json::array{json::string(finalizer)}}});
  } else {
    patch.push_back(
        {{"op", "add"}, {"path", "/metadata/finalizers/-"}, {"value", json::string(finalizer)}});
  }
  return patch;
}

std::optional<json::array> remove_finalizer_patch(const kube::ObjectMeta& meta,
                                                  std::string_view finalizer) {
  const auto it = std::find(meta.finalizers.begin(), meta.finalizers.end(), finalizer);
  if (it == meta.finalizers.end()) return std::nullopt;
  const std::string at = "/metadata/finalizers/" + std::to_string(it - meta.finalizers.begin());
  json::array patch;
  patch.push_back({{"op", "test"}, {"path", at}, {"value", json::string(finalizer)}});
  patch.push_back({{"op", "remove"}, {"path", at}});
  return patch;
}

asio::awaitable<Result<void>> add_finalizer(kube::Client& client, std::string path,
                                            kube::ObjectMeta meta, std::string finalizer) {
  std::optional<json::array> patch = add_finalizer_patch(meta, finalizer);
  if (!patch) co_return Result<void>();
  co_return co_await send(client, std::move(path), std::move(*patch));
}

asio::awaitable<Result<void>> remove_finalizer(kube::Client& client, std::string path,
                                               kube::ObjectMeta meta, std::string finalizer) {
  std::optional<json::array> patch = remove_finalizer_patch(meta, finalizer);
  if (!patch) co_return Result<void>();
  Result<void> removed = co_await send(client, std::move(path), std::move(*patch));
  if (!removed && !is_not_found(removed.error())) co_return removed.error();
  co_return Result<void>();
}

}  // namespace nmo::runtime
