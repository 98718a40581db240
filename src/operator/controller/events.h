// Every Event the controller sends (docs/design.md §5): its type, its reason and its message,
// in one place, so that what users read in `kubectl describe nm` is written once. When each is
// sent (after the write that makes it true) is the reconcile's business.
//
// Threading: pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kube/api/event.h"

namespace nmo::op::events {

// The reasons that are also read elsewhere (the metrics' "blocked by" label).
inline constexpr std::string_view kBlockedByNodeHealthCheck = "BlockedByNodeHealthCheck";
inline constexpr std::string_view kBlockedByEtcdQuorum = "BlockedByEtcdQuorum";
inline constexpr std::string_view kDrainError = "DrainError";

// One Event about to be recorded.
struct Event {
  kube::EventType type = kube::EventType::kNormal;
  std::string reason;
  std::string message;

  friend bool operator==(const Event&, const Event&) = default;
};

// Pending is on record; `reason` is spec.reason ("" when unset).
[[nodiscard]] Event begin_maintenance(std::string_view node, std::string_view reason);
// Waiting for a budget slot or the node lease (upstream's message).
[[nodiscard]] Event blocked_by_node_health_check();
// The etcd quorum gate is closed; `message` is etcd_quorum_blocked_message().
[[nodiscard]] Event blocked_by_etcd_quorum(std::string message);
// The node lease `lease` ("<namespace>/<name>") was taken, or given back.
[[nodiscard]] Event lease_acquired(std::string_view lease, std::string_view node);
[[nodiscard]] Event lease_released(std::string_view lease);
// The node patch cordoned and tainted the node.
[[nodiscard]] Event node_cordoned(std::string_view node);
// Someone undid the cordon or the taint, and the patch put it back.
[[nodiscard]] Event maintenance_reapplied(std::string_view node);
// The drain's start is on record, with the pods that must leave.
[[nodiscard]] Event begin_eviction(std::int64_t pods, std::string_view node);
// A pod that arrived after the drain succeeded is evicted.
[[nodiscard]] Event begin_newcomer_eviction(std::string_view pod, std::string_view node);
// An eviction was refused or failed; `api_message` is the API's text, verbatim.
[[nodiscard]] Event drain_error(std::string api_message);
// A KubeVirt VM's pod is held instead of evicted (docs/design.md §2.9): `reason` is
// "VMWouldShutDown" or "VMNotMigratable", `detail` names the VM and why.
[[nodiscard]] Event vm_held(std::string reason, std::string detail);
// The operator live-migrates VMI `vmi` ("<ns>/<name>") off `node` with migration `migration`.
[[nodiscard]] Event migrating_vm(std::string_view vmi, std::string_view node,
                                 std::string_view migration);
// A live migration of the operator's failed; `message` names it, says why and when it is tried
// again.
[[nodiscard]] Event migration_failed(std::string message);
// Succeeded is on record.
[[nodiscard]] Event succeed_maintenance(std::string_view node, std::int64_t pods);
// Failed is on record; `message` is lastError.
[[nodiscard]] Event failed_maintenance(std::string message);
// On the Node: the restore really uncordoned it.
[[nodiscard]] Event uncordon_node(std::string_view node, std::string_view maintenance);
// The finalizer is gone; `left_cordoned`: the node was cordoned before and stays so;
// `cancelled`: the unfinished live migrations deleted with it ("<ns>/<name>").
[[nodiscard]] Event removed_maintenance(std::string_view node, bool left_cordoned,
                                        const std::vector<std::string>& cancelled = {});

}  // namespace nmo::op::events
