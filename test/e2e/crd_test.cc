// The NodeMaintenance CRD (deploy/crd/) against the real API server: it installs and becomes
// Established, accepts upstream objects, prints the columns of `kubectl get nm` (docs/design.md
// §1), serves the field selector on spec.nodeName, documents every field for `kubectl explain`,
// rejects what the schema forbids naming the field, and stores what
// encode_status()/status_merge_patch() write so that decode_node_maintenance() reads it back
// unchanged.
//
// The CRD is left installed at the end: other tests use it, and applying it again is harmless.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "operator/api/node_maintenance.h"
#include "test/e2e/support/cluster.h"
#include "test/e2e/support/operator_process.h"

namespace nmo::e2e {
namespace {

namespace json = boost::json;
using op::NodeMaintenance;
using op::NodeMaintenanceStatus;

std::string nm_manifest(const std::string& name, const json::object& spec) {
  return json::serialize(json::object{{"apiVersion", op::kApiVersion},
                                      {"kind", op::kKind},
                                      {"metadata", {{"name", name}}},
                                      {"spec", spec}});
}

// The lines of `text` without the trailing empty one.
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Every property of `schema` (an OpenAPI v3 schema object) without a description, as paths;
// metadata is exempt (the API server allows nothing but name rules there).
void find_undocumented(const json::object& schema, const std::string& path,
                       std::vector<std::string>& out) {
  if (const auto* props = schema.if_contains("properties"); props && props->is_object()) {
    for (const auto& [key, value] : props->as_object()) {
      const std::string child = path.empty() ? std::string(key) : path + "." + std::string(key);
      if (child == "metadata") continue;
      const json::object& sub = value.as_object();
      if (!sub.contains("description")) out.push_back(child);
      find_undocumented(sub, child, out);
    }
  }
  if (const auto* items = schema.if_contains("items"); items && items->is_object()) {
    if (!items->as_object().contains("description")) out.push_back(path + "[]");
    find_undocumented(items->as_object(), path + "[]", out);
  }
}

class CrdTest : public ClusterTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    if (HasFatalFailure()) return;
    // A test run just before may have restarted the API server (hack/cluster-restart.sh).
    ASSERT_TRUE(wait_until("the API server to be ready", 60s, [&] {
      return kubectl_.run({"get", "--raw", "/readyz"}).ok();
    }));
    // From the checkout's root as the build names it (not __FILE__, which ccache's base_dir
    // makes relative to the build directory); the variant without selectableFields before 1.31.
    kubectl_.must({"apply", "-k", (source_dir() / crd_kustomization(kubectl_)).string()});
    kubectl_.must({"wait", "--for=condition=Established", "--timeout=60s",
                   "crd/" + std::string(op::kCrdName)});
  }

  void TearDown() override {
    for (const std::string& name : created_) {
      (void)kubectl_.run(
          {"delete", "nodemaintenance", name, "--ignore-not-found", "--timeout=60s"});
    }
  }

  // Creates a NodeMaintenance (deleted when the test ends); returns whether it was accepted.
  bool create(const std::string& name, const json::object& spec) {
    created_.push_back(name);
    return kubectl_.run({"create", "-f", "-"}, nm_manifest(name, spec)).ok();
  }

  // Creates one that the API server must reject; returns kubectl's error output.
  std::string create_rejected(const std::string& name, const json::object& spec) {
    created_.push_back(name);
    ProcessResult r = kubectl_.run({"create", "-f", "-"}, nm_manifest(name, spec));
    EXPECT_FALSE(r.ok()) << "accepted: " << json::serialize(spec);
    return r.err;
  }

  // Reads the object back through kubectl and decodes it with the operator's projection.
  std::optional<NodeMaintenance> read(const std::string& name) {
    std::optional<json::value> object = kubectl_.get_json({"nodemaintenance", name});
    if (!object) {
      ADD_FAILURE() << "NodeMaintenance " << name << " not found";
      return std::nullopt;
    }
    Result<NodeMaintenance> decoded = op::decode_node_maintenance(*object);
    if (!decoded.has_value()) {
      ADD_FAILURE() << "decode_node_maintenance: " << decoded.error().describe() << " in "
                    << json::serialize(*object);
      return std::nullopt;
    }
    return *std::move(decoded);
  }

  // kubectl patch of the /status subresource with status_merge_patch(status).
  ProcessResult patch_status(const std::string& name, const NodeMaintenanceStatus& status) {
    return kubectl_.run({"patch", "nodemaintenance", name, "--subresource=status", "--type=merge",
                         "-p", json::serialize(op::status_merge_patch(status))});
  }

  std::vector<std::string> created_;
};

TEST_F(CrdTest, InstalledWithTheUpstreamNames) {
  auto crd = kubectl_.get_json({"crd", std::string(op::kCrdName)});
  ASSERT_TRUE(crd);
  EXPECT_EQ(string_at(*crd, "/spec/group"), op::kGroup);
  EXPECT_EQ(string_at(*crd, "/spec/scope"), "Cluster");
  EXPECT_EQ(string_at(*crd, "/spec/names/kind"), op::kKind);
  EXPECT_EQ(string_at(*crd, "/spec/names/listKind"), "NodeMaintenanceList");
  EXPECT_EQ(string_at(*crd, "/spec/names/plural"), op::kPlural);
  EXPECT_EQ(string_at(*crd, "/spec/names/singular"), "nodemaintenance");
  EXPECT_EQ(string_at(*crd, "/spec/names/shortNames/0"), "nm");
  EXPECT_EQ(string_at(*crd, "/spec/versions/0/name"), op::kVersion);
  // Servers before 1.31 take the variant without selectableFields (deploy/before-1.31).
  EXPECT_EQ(string_at(*crd, "/spec/versions/0/selectableFields/0/jsonPath"),
            server_minor(kubectl_) < 31 ? "" : ".spec.nodeName");
  EXPECT_EQ(string_at(*crd, "/status/acceptedNames/shortNames/0"), "nm");
  const std::string resources =
      kubectl_.must({"api-resources", "--api-group=" + std::string(op::kGroup), "--no-headers"});
  EXPECT_NE(resources.find("nodemaintenances"), std::string::npos) << resources;
  EXPECT_NE(resources.find("false"), std::string::npos) << "not cluster-scoped: " << resources;
}

TEST_F(CrdTest, EveryFieldHasADescription) {
  auto crd = kubectl_.get_json({"crd", std::string(op::kCrdName)});
  ASSERT_TRUE(crd);
  boost::system::error_code ec;
  const json::value* schema = crd->find_pointer("/spec/versions/0/schema/openAPIV3Schema", ec);
  ASSERT_TRUE(schema != nullptr && schema->is_object());
  std::vector<std::string> undocumented;
  find_undocumented(schema->as_object(), "", undocumented);
  std::string list;
  for (const auto& path : undocumented) list += " " + path;
  EXPECT_TRUE(undocumented.empty()) << "without description:" << list;

  const std::string node_name = kubectl_.must({"explain", "nodemaintenance.spec.nodeName"});
  EXPECT_NE(node_name.find("DESCRIPTION:"), std::string::npos) << node_name;
  EXPECT_NE(node_name.find("Name of the Node to put into maintenance"), std::string::npos)
      << node_name;
  const std::string spec = kubectl_.must({"explain", "nodemaintenance.spec"});
  for (const char* field : {"nodeName", "reason", "drainTimeout", "gracePeriodSeconds"}) {
    EXPECT_NE(spec.find(field), std::string::npos) << field << " missing from\n" << spec;
  }
  EXPECT_NE(spec.find("-required-"), std::string::npos) << spec;
  const std::string status = kubectl_.must({"explain", "nodemaintenance.status"});
  for (const char* field :
       {"phase", "totalPods", "evictionPods", "pendingPods", "pendingPodsRefs", "drainProgress",
        "totalpods", "lastError", "lastUpdate", "errorOnLeaseCount", "conditions"}) {
    EXPECT_NE(status.find(field), std::string::npos) << field << " missing from\n" << status;
  }
}

TEST_F(CrdTest, UpstreamStyleObjectIsAccepted) {
  const std::string name = unique_name("crd-upstream");
  ASSERT_TRUE(create(name, {{"nodeName", "node-worker-01"},
                            {"reason", "Hardware memory upgrade - scheduled maintenance window"}}));
  const std::optional<NodeMaintenance> nm = read(name);
  ASSERT_TRUE(nm);
  EXPECT_EQ(nm->meta.name, name);
  EXPECT_EQ(nm->meta.namespace_, "");
  EXPECT_FALSE(nm->meta.uid.empty());
  EXPECT_EQ(nm->spec.node_name, "node-worker-01");
  EXPECT_EQ(nm->spec.reason, "Hardware memory upgrade - scheduled maintenance window");
  EXPECT_EQ(nm->spec.validation_error(), "");
  EXPECT_EQ(nm->status, NodeMaintenanceStatus{});

  // The extensions are accepted too.
  const std::string extended = unique_name("crd-extended");
  ASSERT_TRUE(create(
      extended,
      {{"nodeName", "node-worker-02"}, {"drainTimeout", "1h30m"}, {"gracePeriodSeconds", 30}}));
  const std::optional<NodeMaintenance> ext = read(extended);
  ASSERT_TRUE(ext);
  EXPECT_EQ(ext->spec.drain_timeout, std::chrono::minutes{90});
  EXPECT_EQ(ext->spec.grace_period_seconds, 30);
}

TEST_F(CrdTest, GetPrintsTheStoryColumns) {
  const std::string name = unique_name("crd-columns");
  ASSERT_TRUE(create(name, {{"nodeName", "node-worker-03"}, {"reason", "memory upgrade"}}));
  NodeMaintenanceStatus status;
  status.phase = op::Phase::kRunning;
  status.total_pods = 8;
  status.eviction_pods = 6;
  status.drain_progress = 75;
  status.last_error = "Cannot evict pod as it would violate the pod's disruption budget.";
  const ProcessResult patched = patch_status(name, status);
  ASSERT_TRUE(patched.ok()) << patched.err;

  const std::vector<std::string> table = lines_of(kubectl_.must({"get", "nm", name}));
  ASSERT_EQ(table.size(), 2U);
  std::istringstream header(table[0]);
  std::vector<std::string> columns;
  for (std::string word; header >> word;) columns.push_back(word);
  EXPECT_EQ(columns, (std::vector<std::string>{"NAME", "NODE", "PHASE", "PROGRESS", "AGE"}))
      << table[0];
  std::istringstream row(table[1]);
  std::vector<std::string> cells;
  for (std::string word; row >> word;) cells.push_back(word);
  ASSERT_EQ(cells.size(), 5U) << table[1];
  EXPECT_EQ(cells[0], name);
  EXPECT_EQ(cells[1], "node-worker-03");
  EXPECT_EQ(cells[2], "Running");
  EXPECT_EQ(cells[3], "75");

  const std::vector<std::string> wide = lines_of(kubectl_.must({"get", "nm", name, "-o", "wide"}));
  ASSERT_EQ(wide.size(), 2U);
  const std::string& head = wide[0];
  const auto age = head.find("AGE");
  const auto reason = head.find("REASON");
  const auto last_error = head.find("LAST ERROR");
  ASSERT_NE(age, std::string::npos) << head;
  ASSERT_NE(reason, std::string::npos) << head;
  ASSERT_NE(last_error, std::string::npos) << head;
  EXPECT_LT(age, reason);
  EXPECT_LT(reason, last_error);
  EXPECT_NE(wide[1].find("memory upgrade"), std::string::npos) << wide[1];
  EXPECT_NE(wide[1].find(status.last_error), std::string::npos) << wide[1];
}

TEST_F(CrdTest, FieldSelectorOnNodeName) {
  const std::string on_04 = unique_name("crd-select");
  const std::string on_05 = unique_name("crd-select");
  ASSERT_TRUE(create(on_04, {{"nodeName", "node-worker-04"}}));
  ASSERT_TRUE(create(on_05, {{"nodeName", "node-worker-05"}}));
  if (server_minor(kubectl_) < 31) {
    // No field selectors on custom resources before 1.31: the difference the webhook works around
    // (deploy/before-1.31).
    const ProcessResult refused =
        kubectl_.run({"get", "nm", "--field-selector", "spec.nodeName=node-worker-04"});
    EXPECT_FALSE(refused.ok());
    EXPECT_NE(refused.err.find("field label not supported: spec.nodeName"), std::string::npos)
        << refused.err;
    return;
  }

  auto list = kubectl_.get_json({"nm", "--field-selector", "spec.nodeName=node-worker-04"});
  ASSERT_TRUE(list);
  std::vector<std::string> names;
  for (const auto& item : list->at("items").as_array()) {
    EXPECT_EQ(string_at(item, "/spec/nodeName"), "node-worker-04");
    names.push_back(string_at(item, "/metadata/name"));
  }
  EXPECT_NE(std::find(names.begin(), names.end(), on_04), names.end());
  EXPECT_EQ(std::find(names.begin(), names.end(), on_05), names.end());

  const std::string none =
      kubectl_.must({"get", "nm", "--field-selector", "spec.nodeName=no-such-node", "-o", "name"});
  EXPECT_EQ(none, "");
}

TEST_F(CrdTest, SchemaRejectsInvalidSpecsNamingTheField) {
  const std::string zero_grace = create_rejected(
      unique_name("crd-bad"), {{"nodeName", "node-worker-01"}, {"gracePeriodSeconds", 0}});
  EXPECT_NE(zero_grace.find("spec.gracePeriodSeconds"), std::string::npos) << zero_grace;

  const std::string long_name =
      create_rejected(unique_name("crd-bad"), {{"nodeName", std::string(254, 'n')}});
  EXPECT_NE(long_name.find("spec.nodeName"), std::string::npos) << long_name;
  EXPECT_NE(long_name.find("253"), std::string::npos) << long_name;

  const std::string empty_name = create_rejected(unique_name("crd-bad"), {{"nodeName", ""}});
  EXPECT_NE(empty_name.find("spec.nodeName"), std::string::npos) << empty_name;

  const std::string missing_name = create_rejected(unique_name("crd-bad"), {{"reason", "x"}});
  EXPECT_NE(missing_name.find("spec.nodeName: Required value"), std::string::npos) << missing_name;

  const std::string long_reason = create_rejected(
      unique_name("crd-bad"), {{"nodeName", "node-worker-01"}, {"reason", std::string(1025, 'r')}});
  EXPECT_NE(long_reason.find("spec.reason"), std::string::npos) << long_reason;

  for (const char* timeout : {"1d", "90", "-1m", "1.5 h"}) {
    const std::string bad_timeout = create_rejected(
        unique_name("crd-bad"), {{"nodeName", "node-worker-01"}, {"drainTimeout", timeout}});
    EXPECT_NE(bad_timeout.find("spec.drainTimeout"), std::string::npos) << bad_timeout;
  }
}

TEST_F(CrdTest, EncodedStatusRoundTripsThroughTheApiServer) {
  const std::string name = unique_name("crd-status");
  ASSERT_TRUE(create(name, {{"nodeName", "node-worker-02"}, {"reason", "status round trip"}}));
  const kube::Time base = std::chrono::floor<std::chrono::seconds>(
      kube::Time(std::chrono::floor<std::chrono::microseconds>(std::chrono::system_clock::now())));

  NodeMaintenanceStatus running;
  running.phase = op::Phase::kRunning;
  running.total_pods = 8;
  running.eviction_pods = 6;
  running.pending_pods = {"vm-launcher-order-processing", "db-0"};
  running.pending_pods_refs = {
      {"kubevirt-system", "vm-launcher-order-processing", op::PendingPodReason::kBlockedByPdb,
       "PDB kubevirt-system/vm-order-processing-pdb: 0 disruptions allowed (1 healthy, 1 desired)"},
      {"db", "db-0", op::PendingPodReason::kWaitingForTermination, "terminating for 40s"},
  };
  running.drain_progress = 75;
  running.totalpods = 11;
  running.last_error = "Cannot evict pod as it would violate the pod's disruption budget.";
  running.last_update = base;
  running.error_on_lease_count = 1;
  ASSERT_TRUE(op::set_condition(running.conditions,
                                {std::string(op::kConditionCordoned),
                                 op::ConditionStatus::kTrue,
                                 1,
                                 {},
                                 "NodeCordoned",
                                 "node-worker-02 cordoned and tainted"},
                                base));
  ASSERT_TRUE(op::set_condition(
      running.conditions,
      {std::string(op::kConditionBlocked), op::ConditionStatus::kTrue, 1, {}, "BlockedByPDB", ""},
      base));
  ProcessResult patched = patch_status(name, running);
  ASSERT_TRUE(patched.ok()) << patched.err;
  std::optional<NodeMaintenance> stored = read(name);
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->status, running);
  EXPECT_EQ(stored->spec.node_name, "node-worker-02");

  // The next write clears what is gone: the merge patch's nulls remove lastError, the pending
  // lists and a condition, which plain omission would have left behind.
  NodeMaintenanceStatus succeeded = running;
  succeeded.phase = op::Phase::kSucceeded;
  succeeded.eviction_pods = 8;
  succeeded.drain_progress = 100;
  succeeded.pending_pods.clear();
  succeeded.pending_pods_refs.clear();
  succeeded.last_error.clear();
  succeeded.last_update = base + std::chrono::seconds{42};
  succeeded.conditions.pop_back();
  ASSERT_TRUE(op::set_condition(succeeded.conditions,
                                {std::string(op::kConditionReady),
                                 op::ConditionStatus::kTrue,
                                 1,
                                 {},
                                 "Drained",
                                 "all pods left"},
                                base + std::chrono::seconds{42}));
  patched = patch_status(name, succeeded);
  ASSERT_TRUE(patched.ok()) << patched.err;
  stored = read(name);
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->status, succeeded);
  auto raw = kubectl_.get_json({"nodemaintenance", name});
  ASSERT_TRUE(raw);
  const json::object& raw_status = raw->at("status").as_object();
  for (const char* gone : {"lastError", "pendingPods", "pendingPodsRefs"}) {
    EXPECT_FALSE(raw_status.contains(gone)) << gone << " in " << json::serialize(raw_status);
  }

  // The schema guards the status too.
  const ProcessResult bad = kubectl_.run({"patch", "nodemaintenance", name, "--subresource=status",
                                          "--type=merge", "-p", R"({"status":{"phase":"Done"}})"});
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.err.find("status.phase"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace nmo::e2e
