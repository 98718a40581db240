#include "operator/controller/internal/maintenance_registry.h"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "base/clock.h"

namespace nmo::op::internal {
namespace {

using std::chrono::seconds;

constexpr seconds kStableFor{30};

NodeMaintenance maintenance(std::string name, std::string uid) {
  NodeMaintenance nm;
  nm.meta.name = std::move(name);
  nm.meta.uid = std::move(uid);
  nm.spec.node_name = "worker-1";
  return nm;
}

// Remembers something in every part the registry owns about `nm`.
void remember_everything(MaintenanceRegistry& registry, const NodeMaintenance& nm,
                         Clock::time_point now) {
  MaintenanceMemory& memory = registry.memory(nm);
  memory.status = NodeMaintenanceStatus{.phase = Phase::kRunning};
  memory.drain.in_flight = 1;
  memory.admitting = true;
  memory.waits_for_eviction_slot = true;
  memory.announcements.push_back(events::failed_maintenance("x"));
  registry.status_writes().record_write(nm.meta.name, now);
  ASSERT_FALSE(registry.quorum().observe(nm.meta.name, true, now).open);
}

// The quorum window of `name` starts afresh at `now` (nothing of an earlier one is left).
bool quorum_window_starts_afresh(MaintenanceRegistry& registry, const std::string& name,
                                 Clock::time_point now) {
  return registry.quorum().observe(name, true, now).recheck_at == now + kStableFor;
}

TEST(MaintenanceRegistryTest, ForgetLeavesNothingOfTheMaintenance) {
  MaintenanceRegistry registry(kStableFor);
  const NodeMaintenance nm = maintenance("nm-a", "uid-a");
  const Clock::time_point start{};
  remember_everything(registry, nm, start);
  const std::shared_ptr<bool> alive = registry.memory(nm).alive;
  registry.finalize("nm-other", "uid-other");
  ASSERT_TRUE(registry.remembers("nm-a"));

  registry.forget("nm-a");

  EXPECT_FALSE(registry.remembers("nm-a"));
  EXPECT_EQ(registry.find("nm-a", "uid-a"), nullptr);
  EXPECT_EQ(registry.find(nm), nullptr);
  EXPECT_FALSE(registry.memories().contains("nm-a"));
  EXPECT_FALSE(registry.admitting("nm-a"));
  EXPECT_TRUE(registry.take_eviction_slot_waiters().empty());
  EXPECT_FALSE(registry.finalized(nm));
  EXPECT_EQ(registry.status_writes().last_write("nm-a"), std::nullopt);
  EXPECT_TRUE(quorum_window_starts_afresh(registry, "nm-a", start + seconds(10)));
  // Its evictions in flight drop their answers.
  EXPECT_FALSE(*alive);
  // Another maintenance's marks stay.
  EXPECT_TRUE(registry.finalized(maintenance("nm-other", "uid-other")));
}

TEST(MaintenanceRegistryTest, FinalizeKeepsOnlyTheFinalizedMarkUntilForget) {
  MaintenanceRegistry registry(kStableFor);
  const NodeMaintenance nm = maintenance("nm-a", "uid-a");
  const Clock::time_point start{};
  remember_everything(registry, nm, start);

  registry.finalize("nm-a", "uid-a");

  EXPECT_TRUE(registry.finalized(nm));
  EXPECT_FALSE(registry.finalized(maintenance("nm-a", "uid-b")));
  EXPECT_EQ(registry.find(nm), nullptr);
  EXPECT_FALSE(registry.admitting("nm-a"));
  EXPECT_TRUE(registry.take_eviction_slot_waiters().empty());
  EXPECT_EQ(registry.status_writes().last_write("nm-a"), std::nullopt);
  EXPECT_TRUE(quorum_window_starts_afresh(registry, "nm-a", start + seconds(10)));

  registry.forget("nm-a");
  EXPECT_FALSE(registry.finalized(nm));
  EXPECT_FALSE(registry.remembers("nm-a"));
}

TEST(MaintenanceRegistryTest, ANewObjectUnderAnOldNameStartsAfresh) {
  MaintenanceRegistry registry(kStableFor);
  const NodeMaintenance old_object = maintenance("nm-a", "uid-a");
  const Clock::time_point start{};
  remember_everything(registry, old_object, start);
  const std::shared_ptr<bool> old_alive = registry.memory(old_object).alive;

  MaintenanceMemory& fresh = registry.memory(maintenance("nm-a", "uid-b"));

  EXPECT_EQ(fresh.uid, "uid-b");
  EXPECT_FALSE(fresh.status.has_value());
  EXPECT_EQ(fresh.drain.in_flight, 0);
  EXPECT_TRUE(fresh.announcements.empty());
  EXPECT_FALSE(*old_alive);
  EXPECT_EQ(registry.find("nm-a", "uid-a"), nullptr);
  EXPECT_FALSE(registry.admitting("nm-a"));
  EXPECT_EQ(registry.status_writes().last_write("nm-a"), std::nullopt);
  EXPECT_TRUE(quorum_window_starts_afresh(registry, "nm-a", start + seconds(10)));
}

TEST(MaintenanceRegistryTest, EvictionSlotWaitersAreTakenOnce) {
  MaintenanceRegistry registry(kStableFor);
  registry.memory(maintenance("nm-a", "uid-a")).waits_for_eviction_slot = true;
  registry.memory(maintenance("nm-b", "uid-b"));
  registry.memory(maintenance("nm-c", "uid-c")).waits_for_eviction_slot = true;

  EXPECT_EQ(registry.take_eviction_slot_waiters(), (std::vector<std::string>{"nm-a", "nm-c"}));
  EXPECT_TRUE(registry.take_eviction_slot_waiters().empty());
}

}  // namespace
}  // namespace nmo::op::internal
