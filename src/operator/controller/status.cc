// The status of each maintenance (docs/design.md §1.2, §2.7): the status this operator
// believes each maintenance has, the coalesced status writes, and the Events announced once the
// status they announce is on record.
#include <algorithm>
#include <utility>

#include <boost/json.hpp>

#include "kube/api/resource.h"
#include "kube/api/watch.h"
#include "operator/controller/internal/controller_impl.h"

namespace nmo::op::internal {

namespace json = boost::json;

log::Logger ControllerImpl::log_for(const NodeMaintenance& nm) const {
  return logger_.with({{"nodemaintenance", nm.meta.name}, {"node", nm.spec.node_name}});
}

void ControllerImpl::event(const NodeMaintenance& nm, events::Event what,
                           std::optional<runtime::ObjectRef> related) {
  event(runtime::ObjectRef{.api_version = std::string(kApiVersion),
                           .kind = std::string(kKind),
                           .namespace_ = "",
                           .name = nm.meta.name,
                           .uid = nm.meta.uid},
        std::move(what), std::move(related));
}

void ControllerImpl::event(runtime::ObjectRef regarding, events::Event what,
                           std::optional<runtime::ObjectRef> related) {
  recorder_.record(regarding, runtime::EventOptions{.type = what.type,
                                                    .reason = std::move(what.reason),
                                                    .message = std::move(what.message),
                                                    .related = std::move(related)});
}

void ControllerImpl::announce(const NodeMaintenance& nm, events::Event what) {
  registry_.memory(nm).announcements.push_back(std::move(what));
}

void ControllerImpl::flush_announcements(const NodeMaintenance& nm) {
  MaintenanceMemory& m = registry_.memory(nm);
  for (events::Event& what : m.announcements) event(nm, std::move(what));
  m.announcements.clear();
}

const NodeMaintenanceStatus& ControllerImpl::believed_status(const NodeMaintenance& nm) const {
  if (const MaintenanceMemory* known = registry_.find(nm); known != nullptr && known->status) {
    return *known->status;
  }
  return nm.status;
}

NodeMaintenanceStatus ControllerImpl::current_status(const NodeMaintenance& nm) {
  MaintenanceMemory& m = registry_.memory(nm);
  if (!m.status) m.status = nm.status;
  const std::string& seen = nm.meta.resource_version;
  if (!m.own_versions.empty() && seen == m.own_versions.back()) {
    m.own_versions = {seen};  // the cache shows our last write
  } else if (m.written && std::find(m.own_versions.begin(), m.own_versions.end(), seen) ==
                              m.own_versions.end()) {
    // The cache has caught up with our writes and moved on. Its status is what is on record
    // now: when another writer changed it, the next write_status() puts ours back whole.
    NodeMaintenanceStatus on_record = nm.status;
    on_record.last_update = m.written->last_update;
    if (!(on_record == *m.written)) {
      log_for(nm).warn("the status was written by someone else; writing it again",
                       {{"phase", nm.status.phase ? to_string(*nm.status.phase) : ""},
                        {"resource_version", seen}});
      m.written = nm.status;
    }
    m.own_versions = {seen};
  }
  return *m.status;
}

asio::awaitable<Result<std::optional<Clock::time_point>>> ControllerImpl::write_status(
    NodeMaintenance nm, NodeMaintenanceStatus status) {
  MaintenanceMemory& m = registry_.memory(nm);
  if (!m.written) {
    m.written = nm.status;
    m.own_versions = {nm.meta.resource_version};
  }
  m.status = status;
  NodeMaintenanceStatus compare = status;
  compare.last_update = m.written->last_update;
  const bool changed = !(compare == *m.written);
  const bool phase_changed = status.phase != m.written->phase;
  const StatusWriteDecision decision =
      registry_.status_writes().decide(nm.meta.name, changed, phase_changed, clock_.now());
  if (decision.kind == StatusWriteDecision::Kind::kSkip) {
    flush_announcements(nm);
    co_return std::optional<Clock::time_point>();
  }
  if (decision.kind == StatusWriteDecision::Kind::kLater) {
    co_return std::optional<Clock::time_point>(decision.at);
  }
  status.last_update = std::chrono::floor<std::chrono::seconds>(wall_now());
  // On the newest version we know of (ours, when the cache lags behind our last write): a writer
  // that has missed a newer write, such as a leader paused past its lease, gets 409 Conflict
  // instead of overwriting it.
  json::object patch = status_merge_patch(status);
  patch["metadata"] = json::object{{"resourceVersion", m.own_versions.back()}};
  const std::string path = kube::object_path<NodeMaintenance>("", nm.meta.name) + "/status";
  const kube::WriteOptions options;
  NMO_CO_TRY_ASSIGN(
      const json::value written,
      co_await client_.patch(path, kube::PatchType::kMergePatch, json::serialize(patch), options));
  m.status = status;
  m.written = status;
  m.own_versions.push_back(kube::resource_version_of(written));
  registry_.status_writes().record_write(nm.meta.name, clock_.now());
  flush_announcements(nm);
  co_return std::optional<Clock::time_point>();
}

}  // namespace nmo::op::internal
