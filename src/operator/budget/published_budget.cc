#include "operator/budget/published_budget.h"

#include <charconv>
#include <utility>

#include <boost/json.hpp>

#include "kube/api/resource.h"

namespace nmo::op {
namespace {

namespace json = boost::json;

// Attempts at the read-modify-write when another replica updates the Lease at the same time.
constexpr int kConflictAttempts = 3;

}  // namespace

asio::awaitable<Result<void>> publish_budget(kube::Client& client, std::string namespace_,
                                             int max_parallel) {
  const std::string value = std::to_string(max_parallel);
  std::string path = kube::object_path<kube::Lease>(namespace_, kBudgetLeaseName);
  // Read first, so a restart with the same budget writes nothing and no write is refused (the
  // operator's requests are counted by answer code; a 409 there means a bug).
  for (int attempt = 1;; ++attempt) {
    auto current = co_await client.get_json(path);
    if (!current && !is_not_found(current.error())) co_return current.error();
    Result<boost::json::value> written = Error(ErrorCode::kUnknown, "");
    if (!current) {
      kube::Lease lease;
      lease.meta.name = std::string(kBudgetLeaseName);
      lease.meta.namespace_ = namespace_;
      lease.meta.labels.set("app.kubernetes.io/name", "node-maintenance-operator");
      lease.meta.annotations.set(std::string(kMaxParallelAnnotation), value);
      std::string collection = kube::collection_path<kube::Lease>(namespace_);
      kube::WriteOptions create_options;
      written = co_await client.create(collection, kube::encode_lease(lease), create_options);
    } else {
      json::object* object = current->if_object();
      if (object == nullptr) co_return Error(ErrorCode::kInvalid, "the Lease is not an object");
      json::value& metadata = (*object)["metadata"];
      if (!metadata.is_object()) metadata = json::object{};
      json::value& annotations = metadata.get_object()["annotations"];
      if (!annotations.is_object()) annotations = json::object{};
      const json::value* now = annotations.get_object().if_contains(kMaxParallelAnnotation);
      if (now != nullptr && now->is_string() && now->get_string() == value) {
        co_return Result<void>();
      }
      annotations.get_object()[kMaxParallelAnnotation] = value;
      kube::WriteOptions update_options;
      written = co_await client.update(path, std::move(*current), update_options);
    }
    if (written) co_return Result<void>();
    // Another replica wrote it meanwhile: read it again.
    const bool raced = written.error().code == ErrorCode::kAlreadyExists ||
                       written.error().code == ErrorCode::kConflict;
    if (!raced || attempt == kConflictAttempts) co_return written.error();
  }
}

std::optional<int> published_max_parallel(const kube::Lease& lease) {
  const std::string* found = lease.meta.annotations.find(kMaxParallelAnnotation);
  if (found == nullptr) return std::nullopt;
  const std::string& text = *found;
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 1) return std::nullopt;
  return value;
}

}  // namespace nmo::op
