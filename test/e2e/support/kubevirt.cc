#include "test/e2e/support/kubevirt.h"

#include <cstdlib>
#include <filesystem>
#include <utility>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#if !defined(NMO_KUBEVIRT_CRDS) || !defined(NMO_SOURCE_DIR)
#error "NMO_KUBEVIRT_CRDS and NMO_SOURCE_DIR must be defined by the build (test/CMakeLists.txt)"
#endif

namespace nmo::e2e {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

constexpr const char* kApi = "/apis/kubevirt.io/v1";

std::string fixture() {
  if (const char* path = std::getenv("NMO_KUBEVIRT_CRDS"); path != nullptr && *path != '\0') {
    return path;
  }
  return NMO_KUBEVIRT_CRDS;
}

// Stand-ins for the two kinds the operator uses, when KubeVirt's own CRDs are not at hand.
const std::string kStandIns =
    std::string(NMO_SOURCE_DIR) + "/test/e2e/support/kubevirt_stand_in_crds.yaml";

}  // namespace

KubeVirtApi::KubeVirtApi(const Kubectl& kubectl) : kubectl_(kubectl) {
  if (std::filesystem::exists(fixture())) {
    crds_ = fixture();
    kubectl_.must({"apply", "--server-side", "-f", crds_});
  } else {
    kubectl_.must({"apply", "-f", kStandIns});
  }
  served_ = wait_until("kubevirt.io/v1 migrations served", 60s, [&] {
    return kubectl_.run({"get", "--raw", std::string(kApi) + "/virtualmachineinstancemigrations"})
        .ok();
  });
}

KubeVirtApi::~KubeVirtApi() {
  if (own_crds()) {
    (void)kubectl_.run({"delete", "-f", crds_, "--wait=true", "--timeout=60s"});
  } else {
    (void)kubectl_.run({"delete", "-f", kStandIns, "--wait=true", "--timeout=60s"});
  }
  EXPECT_TRUE(wait_until("kubevirt.io/v1 no longer served", 60s, [&] {
    return !kubectl_.run({"get", "--raw", kApi}).ok();
  }));
}

std::string vmi_manifest(const std::string& ns, const std::string& name, const std::string& node,
                         const std::string& strategy, const std::string& migratable) {
  json::object spec{{"domain", {{"devices", json::object{}}}}};
  if (!strategy.empty()) spec["evictionStrategy"] = strategy;
  json::object condition{{"type", "LiveMigratable"}, {"status", migratable}};
  if (migratable != "True") {
    condition["reason"] = "DisksNotLiveMigratable";
    condition["message"] = "cannot migrate VMI: PVC " + name + "-disk is not shared";
  }
  return json::serialize(json::object{
      {"apiVersion", "kubevirt.io/v1"},
      {"kind", "VirtualMachineInstance"},
      {"metadata", {{"name", name}, {"namespace", ns}}},
      {"spec", std::move(spec)},
      {"status",
       {{"nodeName", node}, {"phase", "Running"}, {"conditions", json::array{condition}}}}});
}

std::string launcher_manifest(const std::string& ns, const std::string& vmi,
                              const std::string& node, const std::string& suffix) {
  json::value pod = json::parse(
      pod_manifest(ns, "virt-launcher-" + vmi + "-" + suffix, node, {{"kubevirt.io/domain", vmi}}));
  pod.at("metadata").as_object()["labels"].as_object()["kubevirt.io"] = "virt-launcher";
  pod.at("spec").as_object()["restartPolicy"] = "Never";
  return json::serialize(pod);
}

void place_vm(const Kubectl& kubectl, const std::string& ns, const std::string& name,
              const std::string& node, const std::string& strategy, const std::string& migratable) {
  kubectl.apply(vmi_manifest(ns, name, node, strategy, migratable));
  kubectl.apply(launcher_manifest(ns, name, node));
}

VirtControllerStandIn::VirtControllerStandIn(const Kubectl& kubectl, std::string ns)
    : kubectl_(kubectl), ns_(std::move(ns)) {}

std::vector<json::value> VirtControllerStandIn::migrations(const std::string& vmi) const {
  std::vector<json::value> found;
  auto list = kubectl_.get_json({"virtualmachineinstancemigrations.kubevirt.io", "-n", ns_});
  if (!list) return found;
  for (const json::value& item : list->at("items").as_array()) {
    if (string_at(item, "/spec/vmiName") == vmi) found.push_back(item);
  }
  return found;
}

std::optional<std::string> VirtControllerStandIn::wait_for_migration(
    const std::string& vmi, int attempt, std::chrono::milliseconds timeout) const {
  std::optional<std::string> name;
  (void)wait_until("migration " + std::to_string(attempt) + " of VMI " + vmi, timeout, [&] {
    for (const json::value& m : migrations(vmi)) {
      if (string_at(m, "/metadata/labels/nodemaintenance.medik8s.io~1attempt") ==
          std::to_string(attempt)) {
        name = string_at(m, "/metadata/name");
        return true;
      }
    }
    return false;
  });
  return name;
}

void VirtControllerStandIn::set_status(const std::string& migration,
                                       const json::object& status) const {
  kubectl_.must({"patch", "virtualmachineinstancemigrations.kubevirt.io", migration, "-n", ns_,
                 "--subresource=status", "--type=merge", "-p",
                 json::serialize(json::object{{"status", status}})});
}

void VirtControllerStandIn::run(const std::string& migration) const {
  set_status(migration, {{"phase", "Running"}});
}

void VirtControllerStandIn::fail(const std::string& migration, const std::string& reason) const {
  set_status(migration, {{"phase", "Failed"},
                         {"migrationState",
                          {{"failed", true}, {"completed", true}, {"failureReason", reason}}}});
}

void VirtControllerStandIn::succeed(const std::string& migration, const std::string& vmi,
                                    const std::string& source, const std::string& target) const {
  kubectl_.apply(launcher_manifest(ns_, vmi, target, "y"));
  kubectl_.must({"patch", "virtualmachineinstances.kubevirt.io", vmi, "-n", ns_, "--type=merge",
                 "-p", json::serialize(json::object{{"status", {{"nodeName", target}}}})});
  kubectl_.must({"patch", "pod", source, "-n", ns_, "--subresource=status", "--type=merge", "-p",
                 R"({"status":{"phase":"Succeeded"}})"});
  set_status(migration, {{"phase", "Succeeded"},
                         {"migrationState", {{"completed", true}, {"targetNode", target}}}});
}

}  // namespace nmo::e2e
