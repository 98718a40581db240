#include "operator/controller/events.h"

#include <utility>

namespace nmo::op::events {
namespace {

using kube::EventType;

Event normal(std::string reason, std::string message) {
  return Event{
      .type = EventType::kNormal, .reason = std::move(reason), .message = std::move(message)};
}

Event warning(std::string reason, std::string message) {
  return Event{
      .type = EventType::kWarning, .reason = std::move(reason), .message = std::move(message)};
}

std::string str(std::string_view text) { return std::string(text); }

}  // namespace

Event begin_maintenance(std::string_view node, std::string_view reason) {
  std::string message = "Begin a node maintenance for node " + str(node);
  if (!reason.empty()) message += ": " + str(reason);
  return normal("BeginMaintenance", std::move(message));
}

Event blocked_by_node_health_check() {
  return normal(std::string(kBlockedByNodeHealthCheck),
                "Waiting to acquire lease for node maintenance. Other maintenance or node health "
                "check is in progress.");
}

Event blocked_by_etcd_quorum(std::string message) {
  return warning(std::string(kBlockedByEtcdQuorum), std::move(message));
}

Event lease_acquired(std::string_view lease, std::string_view node) {
  return normal("LeaseAcquired", "Lease " + str(lease) + " acquired for node " + str(node));
}

Event lease_released(std::string_view lease) {
  return normal("LeaseReleased", "Lease " + str(lease) + " released");
}

Event node_cordoned(std::string_view node) {
  return normal("NodeCordoned", "Node " + str(node) +
                                    " cordoned and tainted with "
                                    "node.kubernetes.io/unschedulable:NoSchedule and "
                                    "medik8s.io/drain=draining:NoSchedule");
}

Event maintenance_reapplied(std::string_view node) {
  return warning("MaintenanceReapplied",
                 "Node " + str(node) +
                     " was uncordoned or lost its maintenance taint while under maintenance; "
                     "applied again");
}

Event begin_eviction(std::int64_t pods, std::string_view node) {
  return normal("BeginEviction",
                "Evicting " + std::to_string(pods) + " pods from node " + str(node));
}

Event begin_newcomer_eviction(std::string_view pod, std::string_view node) {
  return normal("BeginEviction", "Evicting pod " + str(pod) + " that arrived on node " + str(node) +
                                     " after the drain");
}

Event drain_error(std::string api_message) {
  return warning(std::string(kDrainError), std::move(api_message));
}

Event vm_held(std::string reason, std::string detail) {
  return warning(std::move(reason), std::move(detail));
}

Event migrating_vm(std::string_view vmi, std::string_view node, std::string_view migration) {
  return normal("MigratingVM", "Live-migrating VMI " + str(vmi) + " off node " + str(node) +
                                   " (migration " + str(migration) +
                                   ") instead of evicting its pod, which would shut it down");
}

Event migration_failed(std::string message) {
  return warning("MigrationFailed", std::move(message));
}

Event succeed_maintenance(std::string_view node, std::int64_t pods) {
  return normal("SucceedMaintenance",
                "Node " + str(node) + " is drained: " + std::to_string(pods) + " pods left it");
}

Event failed_maintenance(std::string message) {
  return warning("FailedMaintenance", std::move(message));
}

Event uncordon_node(std::string_view node, std::string_view maintenance) {
  return normal("UncordonNode",
                "Node " + str(node) + " uncordoned: maintenance " + str(maintenance) + " removed");
}

Event removed_maintenance(std::string_view node, bool left_cordoned,
                          const std::vector<std::string>& cancelled) {
  std::string message = "Node maintenance removed for node " + str(node);
  if (left_cordoned) {
    message += "; the node stays cordoned because it was cordoned before the maintenance";
  }
  if (!cancelled.empty()) {
    message += "; cancelled the live migrations it had started:";
    for (std::size_t i = 0; i < cancelled.size(); ++i) {
      message += (i == 0 ? " " : ", ") + cancelled[i];
    }
  }
  return normal("RemovedMaintenance", std::move(message));
}

}  // namespace nmo::op::events
