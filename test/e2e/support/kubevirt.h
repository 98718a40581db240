// KubeVirt on the test cluster (docs/design.md §2.9). KubeVirt's controllers cannot run here, so
// the tests install KubeVirt's own CRDs and play its controllers in the clearly named helpers
// below, following KubeVirt's documented behaviour.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <boost/json/value.hpp>

#include "test/e2e/support/cluster.h"

namespace nmo::e2e {

/// KubeVirt's API (kubevirt.io/v1) served on the test cluster: KubeVirt's own CRDs from the
/// fixture named by $NMO_KUBEVIRT_CRDS, else by the build (shared/kubevirt/crds.yaml beside the
/// checkout); without the fixture, stand-in CRDs for VirtualMachineInstance and
/// VirtualMachineInstanceMigration (any fields; the migration with a status subresource, as
/// KubeVirt's). The destructor deletes them and waits until the API is no longer served, so
/// later operators do not find KubeVirt.
class KubeVirtApi {
 public:
  explicit KubeVirtApi(const Kubectl& kubectl);
  ~KubeVirtApi();
  KubeVirtApi(const KubeVirtApi&) = delete;
  KubeVirtApi& operator=(const KubeVirtApi&) = delete;

  [[nodiscard]] bool served() const { return served_; }
  /// Whether KubeVirt's own CRDs are installed (the fixture was found).
  [[nodiscard]] bool own_crds() const { return !crds_.empty(); }

 private:
  const Kubectl& kubectl_;
  std::string crds_;  // the fixture's path; "" for the stand-ins
  bool served_ = false;
};

/// A VirtualMachineInstance named `name` in `ns` running on `node`, as KubeVirt reports it:
/// `strategy` its spec.evictionStrategy ("" for none) and `migratable` its LiveMigratable
/// condition ("True" or "False", with a reason and message saying why not).
std::string vmi_manifest(const std::string& ns, const std::string& name, const std::string& node,
                         const std::string& strategy, const std::string& migratable);

/// The pod KubeVirt runs VMI `vmi` in on `node`: "virt-launcher-<vmi>-<suffix>", label
/// kubevirt.io=virt-launcher, annotation kubevirt.io/domain, restartPolicy Never.
std::string launcher_manifest(const std::string& ns, const std::string& vmi,
                              const std::string& node, const std::string& suffix = "x");

/// A running VM as KubeVirt has it: its VMI (vmi_manifest()) and its launcher pod
/// (launcher_manifest(), suffix "x") on `node`.
void place_vm(const Kubectl& kubectl, const std::string& ns, const std::string& name,
              const std::string& node, const std::string& strategy, const std::string& migratable);

/// Plays KubeVirt's virt-controller and virt-handler for one live migration, as KubeVirt
/// documents it (shared/kubevirt/README.md): phases up to Running, then Succeeded (the target
/// pod runs on the target node, the VMI's status.nodeName is the target, the source pod has
/// completed) or Failed (with status.migrationState.failureReason).
class VirtControllerStandIn {
 public:
  VirtControllerStandIn(const Kubectl& kubectl, std::string ns);

  /// The VirtualMachineInstanceMigrations of VMI `vmi`, as listed now.
  [[nodiscard]] std::vector<boost::json::value> migrations(const std::string& vmi) const;
  /// Waits (up to `timeout`) for the migration of `vmi` whose attempt label is `attempt`; its
  /// name, or std::nullopt.
  std::optional<std::string> wait_for_migration(const std::string& vmi, int attempt,
                                                std::chrono::milliseconds timeout) const;
  /// The migration's phase becomes Running.
  void run(const std::string& migration) const;
  /// It fails: phase Failed, `reason` as its failureReason.
  void fail(const std::string& migration, const std::string& reason) const;
  /// It succeeds: the target pod of `vmi` on `target`, the VMI moved there, the source pod
  /// `source` completed, the migration Succeeded.
  void succeed(const std::string& migration, const std::string& vmi, const std::string& source,
               const std::string& target) const;

 private:
  void set_status(const std::string& migration, const boost::json::object& status) const;

  const Kubectl& kubectl_;
  std::string ns_;
};

}  // namespace nmo::e2e
