// Scenario helpers shared by end-to-end tests: cluster shapes that several tests build the same
// way. Each is an RAII object that undoes what it made when it goes out of scope.
//
// Threading: a scenario belongs to the test's thread.
#pragma once

#include <string>
#include <vector>

#include "test/e2e/support/cluster.h"

namespace nmo::e2e {

/// A CustomResourceDefinition without a schema standing in for another product's API, so that
/// its API group is served (`kubectl get --raw <probe_path>` answers): `plural`.`group`, version
/// v1, with `kind`; `scope` "Cluster" or "Namespaced". The constructor returns once it is served;
/// the destructor deletes it and waits until it is gone.
class StandInCrd {
 public:
  StandInCrd(const Kubectl& kubectl, const std::string& group, const std::string& plural,
             const std::string& kind, const std::string& scope, std::string probe_path);
  ~StandInCrd();
  StandInCrd(const StandInCrd&) = delete;
  StandInCrd& operator=(const StandInCrd&) = delete;

  [[nodiscard]] bool served() const { return served_; }

 private:
  const Kubectl& kubectl_;
  std::string name_;
  std::string probe_path_;
  bool served_ = false;
};

/// An OpenShift control plane as the operator tells it apart (docs/design.md §2.2): the API
/// group config.openshift.io served (a CRD in it), and in namespace openshift-etcd one guard pod
/// per control-plane node (label app=guard, made Ready by kwok) with the guard
/// PodDisruptionBudget `etcd-guard-pdb` (minAvailable `min_available`) over them. The
/// constructor returns once the API group is served and the disruption controller has counted
/// the guards; the destructor removes everything and waits until the API group is gone, so
/// later operators do not take the cluster for OpenShift.
class OpenShiftEtcd {
 public:
  OpenShiftEtcd(const Kubectl& kubectl, const std::vector<std::string>& control_plane_nodes,
                int min_available);
  ~OpenShiftEtcd();
  OpenShiftEtcd(const OpenShiftEtcd&) = delete;
  OpenShiftEtcd& operator=(const OpenShiftEtcd&) = delete;

  /// Changes the guard PDB's minAvailable and waits until its disruptionsAllowed follows.
  void set_min_available(int min_available);

  /// Whether the constructor got everything in place (a failure was recorded otherwise).
  [[nodiscard]] bool ready() const { return ready_; }

  static constexpr const char* kNamespace = "openshift-etcd";
  static constexpr const char* kGuardPdb = "etcd-guard-pdb";

 private:
  bool wait_pdb(int allowed) const;

  const Kubectl& kubectl_;
  StandInCrd api_;
  int guards_ = 0;
  bool ready_ = false;
};

/// kubeadm's stacked etcd as the etcd-quorum gate reads it (docs/design.md §2.2): one mirror pod
/// `etcd-<node>` in kube-system (labels component=etcd, tier=control-plane) on each of `members`,
/// created here for the members that have none. The constructor returns once exactly
/// `members.size()` etcd pods are Running and Ready; the destructor deletes the pods it created,
/// waiting until they are gone (up to 60 s) only with `Deletion::kWait` (a pod on a node left
/// NotReady may never finish terminating). Without members the gate is open, so an
/// OperatorFixture test keeps it until TearDown has deleted its maintenances: it hands a
/// shared_ptr to defer().
class KubeadmEtcd {
 public:
  enum class Deletion { kNoWait, kWait };
  KubeadmEtcd(const Kubectl& kubectl, const std::vector<std::string>& members,
              Deletion deletion = Deletion::kNoWait);
  ~KubeadmEtcd();
  KubeadmEtcd(const KubeadmEtcd&) = delete;
  KubeadmEtcd& operator=(const KubeadmEtcd&) = delete;

  /// Whether the constructor got every member running (a failure was recorded otherwise).
  [[nodiscard]] bool ready() const { return ready_; }

  static constexpr const char* kNamespace = "kube-system";
  static constexpr const char* kSelector = "component=etcd";

 private:
  const Kubectl& kubectl_;
  Deletion deletion_;
  std::vector<std::string> created_;  // pod names
  bool ready_ = false;
};

}  // namespace nmo::e2e
