#include "operator/node/node_patch.h"

#include <string>
#include <vector>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"
#include "operator/node/steering_taint.h"

namespace nmo::op {
namespace {

namespace json = boost::json;

// A tiny RFC 6902 implementation (add, remove, replace, test) to apply our patches to node
// documents the way the API server would. Returns an error text, or "" on success.
std::vector<std::string> parse_pointer(std::string_view pointer) {
  std::vector<std::string> tokens;
  if (pointer.empty()) return tokens;
  EXPECT_EQ(pointer.front(), '/') << pointer;
  std::string token;
  for (std::size_t i = 1; i <= pointer.size(); ++i) {
    if (i == pointer.size() || pointer[i] == '/') {
      tokens.push_back(token);
      token.clear();
    } else if (pointer[i] == '~') {
      ++i;
      token += (i < pointer.size() && pointer[i] == '1') ? '/' : '~';
    } else {
      token += pointer[i];
    }
  }
  return tokens;
}

json::value* resolve(json::value& root, const std::vector<std::string>& tokens, std::size_t count) {
  json::value* at = &root;
  for (std::size_t i = 0; i < count; ++i) {
    if (json::object* object = at->if_object()) {
      at = object->if_contains(tokens[i]);
    } else if (json::array* array = at->if_array()) {
      if (tokens[i].empty() || tokens[i].find_first_not_of("0123456789") != std::string::npos) {
        return nullptr;  // "-" (past the end) or not an index
      }
      const std::size_t index = std::stoul(tokens[i]);
      at = index < array->size() ? &(*array)[index] : nullptr;
    } else {
      at = nullptr;
    }
    if (at == nullptr) return nullptr;
  }
  return at;
}

std::string apply_patch(json::value& document, const json::array& patch) {
  for (const json::value& entry : patch) {
    const json::object& op = entry.as_object();
    const std::string name(op.at("op").as_string());
    const std::string path(op.at("path").as_string());
    const std::vector<std::string> tokens = parse_pointer(path);
    if (tokens.empty()) return "root paths are not used";
    json::value* parent = resolve(document, tokens, tokens.size() - 1);
    if (parent == nullptr) return name + " " + path + ": parent missing";
    const std::string& last = tokens.back();
    json::value* target = resolve(*parent, {last}, 1);
    if (name == "test") {
      if (target == nullptr) return "test " + path + ": missing";
      if (*target != op.at("value")) return "test " + path + ": not equal";
    } else if (name == "remove") {
      if (target == nullptr) return "remove " + path + ": missing";
      if (json::object* object = parent->if_object()) {
        object->erase(last);
      } else {
        json::array& array = parent->as_array();
        array.erase(array.begin() + static_cast<std::ptrdiff_t>(std::stoul(last)));
      }
    } else if (name == "replace") {
      if (target == nullptr) return "replace " + path + ": missing";
      *target = op.at("value");
    } else if (name == "add") {
      if (json::object* object = parent->if_object()) {
        (*object)[last] = op.at("value");
      } else {
        json::array& array = parent->as_array();
        if (last == "-") {
          array.push_back(op.at("value"));
        } else {
          array.insert(array.begin() + static_cast<std::ptrdiff_t>(std::stoul(last)),
                       op.at("value"));
        }
      }
    } else {
      return "unsupported op " + name;
    }
  }
  return "";
}

TEST(JsonPatchApplyHelperTest, Basics) {
  json::value doc = json::parse(R"({"a": {"b/c": 1}, "l": [1, 2]})");
  EXPECT_EQ(apply_patch(doc, json::parse(R"([
      {"op": "test", "path": "/a/b~1c", "value": 1},
      {"op": "add", "path": "/a/d", "value": 2},
      {"op": "replace", "path": "/a/b~1c", "value": 3},
      {"op": "add", "path": "/l/-", "value": 4},
      {"op": "remove", "path": "/l/0"}])")
                                 .as_array()),
            "");
  EXPECT_EQ(doc, json::parse(R"({"a": {"b/c": 3, "d": 2}, "l": [2, 4]})"));
  EXPECT_EQ(
      apply_patch(doc, json::parse(R"([{"op": "test", "path": "/a/d", "value": 5}])").as_array()),
      "test /a/d: not equal");
  EXPECT_EQ(
      apply_patch(doc, json::parse(R"([{"op": "add", "path": "/x/y", "value": 5}])").as_array()),
      "add /x/y: parent missing");
}

// node-worker-01 as the API server returns it: a NoExecute taint someone else owns, a label and
// annotations of the kubelet and controllers.
constexpr const char* kWorker = R"json({
  "apiVersion": "v1", "kind": "Node",
  "metadata": {
    "name": "node-worker-01", "uid": "node-uid-1", "resourceVersion": "4242",
    "labels": {"kubernetes.io/hostname": "node-worker-01"},
    "annotations": {"node.alpha.kubernetes.io/ttl": "0"}
  },
  "spec": {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoExecute",
                       "timeAdded": "2026-11-30T08:00:00Z"}]},
  "status": {"conditions": [{"type": "Ready", "status": "True"}]}
})json";

constexpr std::string_view kCrName = "maintenance-worker-01";
constexpr std::string_view kCrUid = "cr-uid-1";

kube::Node project(const json::value& document) {
  Result<kube::Node> node = kube::decode_node(document);
  EXPECT_TRUE(node.has_value()) << node.error().describe();
  return node.has_value() ? std::move(node).value() : kube::Node{};
}

// Applies `patch` to `document` and returns the projection of the result.
kube::Node patch_node(json::value& document, const std::optional<json::array>& patch) {
  EXPECT_TRUE(patch.has_value());
  if (patch) {
    const std::string error = apply_patch(document, *patch);
    EXPECT_EQ(error, "") << json::serialize(*patch);
  }
  return project(document);
}

std::vector<std::string> taint_texts(const kube::Node& node) {
  std::vector<std::string> texts;
  for (const kube::Taint& taint : node.taints) {
    texts.push_back(taint.key + (taint.value.empty() ? "" : "=" + taint.value) + ":" +
                    taint.effect);
  }
  return texts;
}

TEST(PriorStateTest, EncodeDecode) {
  const PriorState state{.was_unschedulable = true,
                         .exclude_label = "false",
                         .cr_name = "maintenance-worker-01",
                         .cr_uid = "u"};
  EXPECT_EQ(encode_prior_state(state),
            R"({"wasUnschedulable":true,"excludeLabel":"false","name":"maintenance-worker-01",)"
            R"("uid":"u"})");
  ASSERT_OK_AND_ASSIGN(const PriorState decoded, decode_prior_state(encode_prior_state(state)));
  EXPECT_EQ(decoded, state);
  ASSERT_OK_AND_ASSIGN(const PriorState minimal, decode_prior_state(R"({"name":"n","uid":"u"})"));
  EXPECT_FALSE(minimal.was_unschedulable);
  EXPECT_EQ(minimal.exclude_label, std::nullopt);
  EXPECT_EQ(encode_prior_state(minimal),
            R"({"wasUnschedulable":false,"excludeLabel":null,"name":"n","uid":"u"})");
}

TEST(PriorStateTest, DecodeErrors) {
  for (const char* bad : {"", "[]", "{", R"({"name":"n"})", R"({"name":1,"uid":"u"})",
                          R"({"name":"n","uid":"u","wasUnschedulable":"yes"})",
                          R"({"name":"n","uid":"u","excludeLabel":true})"}) {
    const Result<PriorState> result = decode_prior_state(bad);
    ASSERT_FALSE(result.has_value()) << bad;
    EXPECT_EQ(result.error().code, ErrorCode::kInvalid);
    EXPECT_TRUE(result.error().message.starts_with("prior-state annotation: ")) << bad;
  }
}

TEST(JsonPointerEscapeTest, SlashAndTilde) {
  EXPECT_EQ(json_pointer_escape("remediation.medik8s.io/exclude-from-remediation"),
            "remediation.medik8s.io~1exclude-from-remediation");
  EXPECT_EQ(json_pointer_escape("a~b/c"), "a~0b~1c");
}

TEST(MaintenancePatchTest, CordonsTaintsLabelsAndRecordsThePriorState) {
  json::value document = json::parse(kWorker);
  const std::optional<json::array> patch = maintenance_patch(project(document), kCrName, kCrUid);
  ASSERT_TRUE(patch.has_value());
  // The first operation guards against concurrent taint changes.
  EXPECT_EQ((*patch)[0], json::parse(R"({"op": "test", "path": "/spec/taints", "value":
      [{"key": "dedicated", "value": "gpu", "effect": "NoExecute",
        "timeAdded": "2026-11-30T08:00:00Z"}]})"));
  EXPECT_EQ((*patch)[2].as_object().at("path"),
            "/metadata/labels/remediation.medik8s.io~1exclude-from-remediation");

  const kube::Node node = patch_node(document, patch);
  EXPECT_TRUE(node.unschedulable);
  EXPECT_EQ(taint_texts(node),
            (std::vector<std::string>{"dedicated=gpu:NoExecute",
                                      "node.kubernetes.io/unschedulable:NoSchedule",
                                      "medik8s.io/drain=draining:NoSchedule"}));
  ASSERT_NE(node.meta.labels.find(kExcludeFromRemediationLabel), nullptr);
  EXPECT_EQ(*node.meta.labels.find(kExcludeFromRemediationLabel), "true");
  EXPECT_EQ(*node.meta.labels.find("kubernetes.io/hostname"), "node-worker-01");
  EXPECT_EQ(*node.meta.annotations.find("node.alpha.kubernetes.io/ttl"), "0");
  EXPECT_EQ(prior_state_of(node), (PriorState{.was_unschedulable = false,
                                              .exclude_label = std::nullopt,
                                              .cr_name = std::string(kCrName),
                                              .cr_uid = std::string(kCrUid)}));
  EXPECT_FALSE(check_maintenance(node, kCrUid).needs_patch());
  // Applying again changes nothing.
  EXPECT_FALSE(maintenance_patch(node, kCrName, kCrUid).has_value());
}

TEST(MaintenancePatchTest, NodeWithoutTaintsTestsTheResourceVersion) {
  json::value document = json::parse(R"({"kind": "Node",
      "metadata": {"name": "n", "resourceVersion": "7", "labels": {"a": "b"},
                   "annotations": {"x": "y"}},
      "spec": {}})");
  const std::optional<json::array> patch = maintenance_patch(project(document), kCrName, kCrUid);
  ASSERT_TRUE(patch.has_value());
  EXPECT_EQ((*patch)[0], json::parse(R"({"op": "test", "path": "/metadata/resourceVersion",
                                         "value": "7"})"));
  const kube::Node node = patch_node(document, patch);
  EXPECT_EQ(taint_texts(node),
            (std::vector<std::string>{"node.kubernetes.io/unschedulable:NoSchedule",
                                      "medik8s.io/drain=draining:NoSchedule"}));
  // A concurrent change of the node makes the same patch fail.
  json::value changed = json::parse(R"({"kind": "Node",
      "metadata": {"name": "n", "resourceVersion": "8", "labels": {"a": "b"},
                   "annotations": {"x": "y"}}, "spec": {}})");
  EXPECT_EQ(apply_patch(changed, *patch), "test /metadata/resourceVersion: not equal");
}

TEST(MaintenancePatchTest, NodeWithoutLabelsOrAnnotationsGetsWholeMaps) {
  json::value document =
      json::parse(R"({"kind": "Node", "metadata": {"name": "n", "resourceVersion": "1"}})");
  json::object& spec = document.as_object()["spec"].emplace_object();
  (void)spec;
  const kube::Node node =
      patch_node(document, maintenance_patch(project(document), kCrName, kCrUid));
  EXPECT_EQ(*node.meta.labels.find(kExcludeFromRemediationLabel), "true");
  ASSERT_TRUE(prior_state_of(node).has_value());
  EXPECT_TRUE(node.unschedulable);
}

TEST(MaintenancePatchTest, ConcurrentTaintChangeFailsTheTest) {
  json::value document = json::parse(kWorker);
  const std::optional<json::array> patch = maintenance_patch(project(document), kCrName, kCrUid);
  ASSERT_TRUE(patch.has_value());
  document.as_object()["spec"].as_object()["taints"].as_array().push_back(
      json::parse(R"({"key": "other", "effect": "NoSchedule"})"));
  EXPECT_EQ(apply_patch(document, *patch), "test /spec/taints: not equal");
}

TEST(MaintenancePatchTest, KeepsExistingTaintsAndDoesNotDuplicate) {
  // Already cordoned by an admin: kube-controller-manager added the unschedulable taint.
  json::value document = json::parse(R"({"kind": "Node",
      "metadata": {"name": "n", "resourceVersion": "1", "labels": {"a": "b"},
                   "annotations": {"x": "y"}},
      "spec": {"unschedulable": true,
               "taints": [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule",
                           "timeAdded": "2026-11-30T08:00:00Z"}]}})");
  const kube::Node node =
      patch_node(document, maintenance_patch(project(document), kCrName, kCrUid));
  EXPECT_EQ(taint_texts(node),
            (std::vector<std::string>{"node.kubernetes.io/unschedulable:NoSchedule",
                                      "medik8s.io/drain=draining:NoSchedule"}));
  ASSERT_TRUE(node.taints[0].time_added.has_value());  // untouched
  EXPECT_TRUE(prior_state_of(node)->was_unschedulable);
}

TEST(MaintenancePatchTest, RecordsAnEarlierLabelValue) {
  json::value document = json::parse(R"({"kind": "Node",
      "metadata": {"name": "n", "resourceVersion": "1",
                   "labels": {"remediation.medik8s.io/exclude-from-remediation": "false"},
                   "annotations": {"x": "y"}}, "spec": {}})");
  const kube::Node node =
      patch_node(document, maintenance_patch(project(document), kCrName, kCrUid));
  EXPECT_EQ(*node.meta.labels.find(kExcludeFromRemediationLabel), "true");
  EXPECT_EQ(prior_state_of(node)->exclude_label, "false");
}

TEST(MaintenancePatchTest, AdoptsAnUpstreamMaintenanceWithUpstreamRestoreSemantics) {
  // Upstream NMO left: cordoned, both taints (no value), label; no prior-state annotation.
  json::value document = json::parse(R"({"kind": "Node",
      "metadata": {"name": "n", "resourceVersion": "1",
                   "labels": {"remediation.medik8s.io/exclude-from-remediation": "true"},
                   "annotations": {"x": "y"}},
      "spec": {"unschedulable": true,
               "taints": [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
                          {"key": "medik8s.io/drain", "effect": "NoSchedule"}]}})");
  const kube::Node before = project(document);
  const MaintenanceDrift drift = check_maintenance(before, kCrUid);
  EXPECT_FALSE(drift.tampered());  // adoption is not tampering
  EXPECT_TRUE(drift.prior_state_missing);
  const kube::Node node = patch_node(document, maintenance_patch(before, kCrName, kCrUid));
  EXPECT_EQ(taint_texts(node), taint_texts(before));  // upstream's taint kept, no duplicate
  EXPECT_EQ(prior_state_of(node), (PriorState{.was_unschedulable = false,
                                              .exclude_label = std::nullopt,
                                              .cr_name = std::string(kCrName),
                                              .cr_uid = std::string(kCrUid)}));
  // Deleting it uncordons, like upstream.
  const RestorePlan plan = restore_patch(node, kCrUid);
  EXPECT_EQ(plan.kind, RestoreKind::kOurs);
  EXPECT_TRUE(plan.uncordons);
  const kube::Node restored = patch_node(document, plan.patch);
  EXPECT_FALSE(restored.unschedulable);
  EXPECT_TRUE(restored.taints.empty());
  EXPECT_FALSE(restored.meta.labels.contains(kExcludeFromRemediationLabel));
}

TEST(MaintenancePatchTest, TakesOverAStaleAnnotationKeepingItsPriorValues) {
  json::value document = json::parse(kWorker);
  document.as_object()["metadata"].as_object()["annotations"].as_object()[kPriorStateAnnotation] =
      encode_prior_state({.was_unschedulable = true,
                          .exclude_label = std::nullopt,
                          .cr_name = "old",
                          .cr_uid = "old-uid"});
  const kube::Node node =
      patch_node(document, maintenance_patch(project(document), kCrName, kCrUid));
  EXPECT_EQ(prior_state_of(node), (PriorState{.was_unschedulable = true,
                                              .exclude_label = std::nullopt,
                                              .cr_name = std::string(kCrName),
                                              .cr_uid = std::string(kCrUid)}));
}

TEST(CheckMaintenanceTest, TamperingAndKubeControllerManager) {
  json::value document = json::parse(kWorker);
  const kube::Node applied =
      patch_node(document, maintenance_patch(project(document), kCrName, kCrUid));
  EXPECT_EQ(check_maintenance(applied, kCrUid), MaintenanceDrift{});

  // kube-controller-manager briefly without its taint: not tampering, nothing to patch.
  kube::Node no_kcm_taint = applied;
  std::erase_if(no_kcm_taint.taints,
                [](const kube::Taint& taint) { return taint.key == kUnschedulableTaintKey; });
  EXPECT_FALSE(check_maintenance(no_kcm_taint, kCrUid).tampered());
  EXPECT_FALSE(check_maintenance(no_kcm_taint, kCrUid).needs_patch());

  // Someone ran kubectl uncordon.
  kube::Node uncordoned = applied;
  uncordoned.unschedulable = false;
  MaintenanceDrift drift = check_maintenance(uncordoned, kCrUid);
  EXPECT_TRUE(drift.uncordoned);
  EXPECT_TRUE(drift.tampered());
  // Someone removed the drain taint.
  kube::Node untainted = applied;
  std::erase_if(untainted.taints,
                [](const kube::Taint& taint) { return taint.key == kDrainTaintKey; });
  drift = check_maintenance(untainted, kCrUid);
  EXPECT_TRUE(drift.drain_taint_missing);
  EXPECT_TRUE(drift.tampered());
  // Another CR's annotation.
  EXPECT_TRUE(check_maintenance(applied, "other-uid").prior_state_missing);
}

TEST(CheckMaintenanceTest, ReapplyAfterUncordonAndTaintRemoval) {
  json::value document = json::parse(kWorker);
  kube::Node node = patch_node(document, maintenance_patch(project(document), kCrName, kCrUid));
  // kubectl uncordon: spec.unschedulable false, and KCM drops its taint; someone removes ours.
  json::object& spec = document.as_object()["spec"].as_object();
  spec["unschedulable"] = false;
  spec["taints"] = json::parse(R"([{"key": "dedicated", "value": "gpu", "effect": "NoExecute",
                                    "timeAdded": "2026-11-30T08:00:00Z"}])");
  const kube::Node tampered = project(document);
  ASSERT_TRUE(check_maintenance(tampered, kCrUid).tampered());
  node = patch_node(document, maintenance_patch(tampered, kCrName, kCrUid));
  EXPECT_TRUE(node.unschedulable);
  EXPECT_EQ(taint_texts(node),
            (std::vector<std::string>{"dedicated=gpu:NoExecute",
                                      "node.kubernetes.io/unschedulable:NoSchedule",
                                      "medik8s.io/drain=draining:NoSchedule"}));
  // The prior state was not rewritten: deleting still uncordons.
  EXPECT_FALSE(prior_state_of(node)->was_unschedulable);
}

TEST(RestorePatchTest, UndoesEverythingOnAnUncordonedNode) {
  json::value document = json::parse(kWorker);
  const json::value original = document;
  const kube::Node applied =
      patch_node(document, maintenance_patch(project(document), kCrName, kCrUid));
  const RestorePlan plan = restore_patch(applied, kCrUid);
  EXPECT_EQ(plan.kind, RestoreKind::kOurs);
  EXPECT_TRUE(plan.uncordons);
  EXPECT_FALSE(plan.left_cordoned);
  const kube::Node restored = patch_node(document, plan.patch);
  EXPECT_FALSE(restored.unschedulable);
  EXPECT_EQ(taint_texts(restored), (std::vector<std::string>{"dedicated=gpu:NoExecute"}));
  EXPECT_FALSE(restored.meta.labels.contains(kExcludeFromRemediationLabel));
  EXPECT_FALSE(restored.meta.annotations.contains(kPriorStateAnnotation));
  // Only spec.unschedulable: false remains of the maintenance (the API server drops it).
  json::value expected = original;
  expected.as_object()["spec"].as_object()["unschedulable"] = false;
  EXPECT_EQ(document, expected);
  // Nothing left to restore.
  EXPECT_EQ(restore_patch(restored, kCrUid).kind, RestoreKind::kNotOurs);
}

TEST(RestorePatchTest, AdminCordonSurvives) {
  // docs/design.md §8 (S8), §2.6: the admin had cordoned the node before the maintenance.
  json::value document = json::parse(R"({"kind": "Node",
      "metadata": {"name": "n", "resourceVersion": "1", "labels": {"a": "b"},
                   "annotations": {"x": "y"}},
      "spec": {"unschedulable": true,
               "taints": [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule",
                           "timeAdded": "2026-11-30T08:00:00Z"}]}})");
  const json::value original = document;
  const kube::Node applied =
      patch_node(document, maintenance_patch(project(document), kCrName, kCrUid));
  const RestorePlan plan = restore_patch(applied, kCrUid);
  EXPECT_FALSE(plan.uncordons);
  EXPECT_TRUE(plan.left_cordoned);
  const kube::Node restored = patch_node(document, plan.patch);
  EXPECT_TRUE(restored.unschedulable);
  EXPECT_EQ(taint_texts(restored),
            (std::vector<std::string>{"node.kubernetes.io/unschedulable:NoSchedule"}));
  EXPECT_EQ(document, original);
}

TEST(RestorePatchTest, EarlierLabelValueComesBack) {
  json::value document = json::parse(R"({"kind": "Node",
      "metadata": {"name": "n", "resourceVersion": "1",
                   "labels": {"remediation.medik8s.io/exclude-from-remediation": "true"},
                   "annotations": {"x": "y"}}, "spec": {}})");
  const json::value original = document;
  const kube::Node applied =
      patch_node(document, maintenance_patch(project(document), kCrName, kCrUid));
  (void)patch_node(document, restore_patch(applied, kCrUid).patch);
  json::value expected = original;
  expected.as_object()["spec"].as_object()["unschedulable"] = false;
  expected.as_object()["spec"].as_object()["taints"] = json::array{};
  EXPECT_EQ(document, expected);
}

TEST(RestorePatchTest, OnlyTheCrRecordedInTheAnnotationRestores) {
  json::value document = json::parse(kWorker);
  const kube::Node applied =
      patch_node(document, maintenance_patch(project(document), kCrName, kCrUid));
  const RestorePlan plan = restore_patch(applied, "another-cr");
  EXPECT_EQ(plan.kind, RestoreKind::kNotOurs);
  EXPECT_FALSE(plan.patch.has_value());
  EXPECT_FALSE(plan.uncordons);
  // A node never touched (CR deleted while Pending): nothing.
  EXPECT_EQ(restore_patch(project(json::parse(kWorker)), kCrUid).kind, RestoreKind::kNotOurs);
}

TEST(RestorePatchTest, UpstreamNodeWithoutAnnotationIsUncordoned) {
  json::value document = json::parse(R"({"kind": "Node",
      "metadata": {"name": "n", "resourceVersion": "1",
                   "labels": {"remediation.medik8s.io/exclude-from-remediation": "true"},
                   "annotations": {"x": "y"}},
      "spec": {"unschedulable": true,
               "taints": [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
                          {"key": "medik8s.io/drain", "effect": "NoSchedule"},
                          {"key": "keep", "value": "me", "effect": "NoSchedule"}]}})");
  const RestorePlan plan = restore_patch(project(document), kCrUid);
  EXPECT_EQ(plan.kind, RestoreKind::kAdoptedUpstream);
  EXPECT_TRUE(plan.uncordons);
  const kube::Node restored = patch_node(document, plan.patch);
  EXPECT_FALSE(restored.unschedulable);
  EXPECT_EQ(taint_texts(restored), (std::vector<std::string>{"keep=me:NoSchedule"}));
  EXPECT_FALSE(restored.meta.labels.contains(kExcludeFromRemediationLabel));
  // Our own drain taint (with a value) without an annotation is not upstream's: hands off.
  json::value ours = json::parse(R"({"kind": "Node", "metadata": {"name": "n"},
      "spec": {"taints": [{"key": "medik8s.io/drain", "value": "draining",
                           "effect": "NoSchedule"}]}})");
  EXPECT_EQ(restore_patch(project(ours), kCrUid).kind, RestoreKind::kNotOurs);
}

// A MaintenancePlan's steering taint (steering_taint.h) is a foreign taint to the maintenance: it
// survives the cordon and the restore, is never recorded as prior state, and is no tampering.
TEST(SteeringTaintTest, TheMaintenanceKeepsItAndItsRestoreLeavesIt) {
  json::value document = json::parse(kWorker);
  const kube::Node steered = patch_node(document, steering_patch(project(document), true));
  const kube::Node applied = patch_node(document, maintenance_patch(steered, kCrName, kCrUid));
  EXPECT_EQ(
      taint_texts(applied),
      (std::vector<std::string>{
          "dedicated=gpu:NoExecute", "nodemaintenance.medik8s.io/planned:PreferNoSchedule",
          "node.kubernetes.io/unschedulable:NoSchedule", "medik8s.io/drain=draining:NoSchedule"}));
  EXPECT_EQ(check_maintenance(applied, kCrUid), MaintenanceDrift{});
  EXPECT_EQ(maintenance_patch(applied, kCrName, kCrUid), std::nullopt);

  const RestorePlan plan = restore_patch(applied, kCrUid);
  ASSERT_EQ(plan.kind, RestoreKind::kOurs);
  const kube::Node restored = patch_node(document, plan.patch);
  EXPECT_EQ(taint_texts(restored),
            (std::vector<std::string>{"dedicated=gpu:NoExecute",
                                      "nodemaintenance.medik8s.io/planned:PreferNoSchedule"}));

  // Taken off while the node is under maintenance: still no tampering, nothing to re-apply.
  json::value maintained = json::parse(kWorker);
  const kube::Node under =
      patch_node(maintained, maintenance_patch(project(maintained), kCrName, kCrUid));
  const kube::Node tainted_under = patch_node(maintained, steering_patch(under, true));
  const kube::Node untainted_under = patch_node(maintained, steering_patch(tainted_under, false));
  EXPECT_EQ(check_maintenance(tainted_under, kCrUid), MaintenanceDrift{});
  EXPECT_EQ(check_maintenance(untainted_under, kCrUid), MaintenanceDrift{});
  EXPECT_EQ(taint_texts(untainted_under), taint_texts(under));
}

}  // namespace
}  // namespace nmo::op
