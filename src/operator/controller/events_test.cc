#include "operator/controller/events.h"

#include <gtest/gtest.h>

namespace nmo::op::events {
namespace {

using kube::EventType;

// The messages users read (docs/design.md §5); tests elsewhere and scripts match them.
TEST(EventsTest, ReasonsTypesAndMessages) {
  EXPECT_EQ(begin_maintenance("w1", ""), (Event{EventType::kNormal, "BeginMaintenance",
                                                "Begin a node maintenance for node w1"}));
  EXPECT_EQ(begin_maintenance("w1", "RAM upgrade").message,
            "Begin a node maintenance for node w1: RAM upgrade");
  EXPECT_EQ(blocked_by_node_health_check().message,
            "Waiting to acquire lease for node maintenance. Other maintenance or node health check "
            "is in progress.");
  EXPECT_EQ(blocked_by_etcd_quorum("m").type, EventType::kWarning);
  EXPECT_EQ(lease_acquired("medik8s-leases/node-w1", "w1").message,
            "Lease medik8s-leases/node-w1 acquired for node w1");
  EXPECT_EQ(lease_released("medik8s-leases/node-w1").message,
            "Lease medik8s-leases/node-w1 released");
  EXPECT_EQ(node_cordoned("w1").message,
            "Node w1 cordoned and tainted with node.kubernetes.io/unschedulable:NoSchedule and "
            "medik8s.io/drain=draining:NoSchedule");
  EXPECT_EQ(maintenance_reapplied("w1").type, EventType::kWarning);
  EXPECT_EQ(begin_eviction(8, "w1").message, "Evicting 8 pods from node w1");
  EXPECT_EQ(begin_newcomer_eviction("ns/p", "w1").message,
            "Evicting pod ns/p that arrived on node w1 after the drain");
  EXPECT_EQ(drain_error("refused"), (Event{EventType::kWarning, "DrainError", "refused"}));
  EXPECT_EQ(succeed_maintenance("w1", 8).message, "Node w1 is drained: 8 pods left it");
  EXPECT_EQ(failed_maintenance("x"), (Event{EventType::kWarning, "FailedMaintenance", "x"}));
  EXPECT_EQ(uncordon_node("w1", "nm").message, "Node w1 uncordoned: maintenance nm removed");
  EXPECT_EQ(removed_maintenance("w1", false).message, "Node maintenance removed for node w1");
  EXPECT_EQ(removed_maintenance("w1", true).message,
            "Node maintenance removed for node w1; the node stays cordoned because it was "
            "cordoned before the maintenance");
  EXPECT_EQ(removed_maintenance("w1", false, {"shop/m-1", "shop/m-2"}).message,
            "Node maintenance removed for node w1; cancelled the live migrations it had started: "
            "shop/m-1, shop/m-2");
  EXPECT_EQ(migrating_vm("shop/vm", "w1", "vm-maintenance-0123abcd-1"),
            (Event{EventType::kNormal, "MigratingVM",
                   "Live-migrating VMI shop/vm off node w1 (migration vm-maintenance-0123abcd-1) "
                   "instead of evicting its pod, which would shut it down"}));
  EXPECT_EQ(migration_failed("m failed"),
            (Event{EventType::kWarning, "MigrationFailed", "m failed"}));
}

}  // namespace
}  // namespace nmo::op::events
