#include "kube/client/testing/fake_api_server.h"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/json.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"
#include "http/testing/run.h"
#include "kube/api/node.h"
#include "kube/api/pod.h"

namespace nmo::kube::testing {
namespace {

namespace json = boost::json;
using ::testing::ElementsAre;
using namespace std::chrono_literals;

constexpr const char* kNodes = "/api/v1/nodes";
constexpr const char* kPods = "/api/v1/namespaces/shop/pods";
constexpr const char* kLeases = "/apis/coordination.k8s.io/v1/namespaces/nmo/leases";
constexpr const char* kMaintenances = "/apis/nodemaintenance.medik8s.io/v1beta1/nodemaintenances";

json::value parse(const std::string& text) { return json::parse(text); }

json::value node(const std::string& name, const std::string& extra = "") {
  return parse(R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")" + name + R"("})" +
               (extra.empty() ? "" : "," + extra) + "}");
}

json::value pod(const std::string& name, const std::string& labels = "{}",
                const std::string& node_name = "") {
  return parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name +
               R"(","namespace":"shop","labels":)" + labels + R"(},"spec":{"nodeName":")" +
               node_name + R"("},"status":{"phase":"Running"}})");
}

std::string version_of(const json::value& object) {
  return std::string(object.at("metadata").at("resourceVersion").as_string());
}

std::vector<std::string> names(const json::value& list) {
  std::vector<std::string> out;
  for (const json::value& item : list.at("items").as_array()) {
    out.emplace_back(item.at("metadata").at("name").as_string());
  }
  return out;
}

// "ADDED n1@2" for an event; "BOOKMARK @7" for a bookmark.
std::string describe(const WatchEvent& event) {
  const json::value* name = event.object.at("metadata").as_object().if_contains("name");
  return std::string(to_string(event.type)) + " " +
         (name != nullptr ? std::string(name->as_string()) : std::string()) + "@" +
         version_of(event.object);
}

class FakeApiServerTest : public ::testing::Test {
 protected:
  template <typename T>
  T run(asio::awaitable<T> task) {
    return http::test::run(io_, std::move(task), 20s);
  }

  // The next event of `watch` as describe() spells it, or the error's describe().
  std::string next(WatchStream& watch) {
    Result<std::optional<WatchEvent>> event = run(watch.next());
    if (!event) return event.error().describe();
    if (!event->has_value()) return "end";
    return describe(**event);
  }

  // Runs what is ready; true when `watch` has nothing to hand out now.
  bool quiet(WatchStream& watch) {
    auto got = std::make_shared<std::optional<Result<std::optional<WatchEvent>>>>();
    asio::co_spawn(
        io_, [&watch, got]() -> asio::awaitable<void> { got->emplace(co_await watch.next()); },
        asio::detached);
    io_.restart();
    io_.poll();
    const bool nothing = !got->has_value();
    watch.cancel();
    io_.restart();
    io_.poll();
    return nothing;
  }

  json::value list(const std::string& path, ListOptions options = {}) {
    Result<std::string> body = run(server_.list_raw(path, std::move(options)));
    EXPECT_TRUE(body.has_value()) << body.error().describe();
    return body ? json::parse(*body) : json::value();
  }

  std::unique_ptr<WatchStream> watch(const std::string& path, WatchOptions options = {}) {
    Result<std::unique_ptr<WatchStream>> opened = run(server_.watch(path, std::move(options)));
    EXPECT_TRUE(opened.has_value()) << opened.error().describe();
    return opened ? std::move(*opened) : nullptr;
  }

  asio::io_context io_;
  FakeApiServer server_{io_.get_executor()};
};

// ---- objects ----

TEST_F(FakeApiServerTest, CreateFillsTheSystemFieldsAndGetReturnsTheObject) {
  ASSERT_OK_AND_ASSIGN(const json::value created,
                       run(server_.create(kNodes, node("n1"), WriteOptions{})));
  EXPECT_EQ(created.at("kind"), "Node");
  EXPECT_EQ(version_of(created), "2");
  EXPECT_EQ(server_.resource_version(), "2");
  EXPECT_FALSE(created.at("metadata").at("uid").as_string().empty());
  EXPECT_EQ(created.at("metadata").at("generation"), 1);
  EXPECT_TRUE(created.at("metadata").as_object().contains("creationTimestamp"));
  ASSERT_OK_AND_ASSIGN(const json::value got, run(server_.get_json("/api/v1/nodes/n1")));
  EXPECT_EQ(got, created);
  EXPECT_EQ(server_.object("/api/v1/nodes/n1"), created);
  // Typed calls go through the same paths.
  ASSERT_OK_AND_ASSIGN(const Node typed, run(server_.get<Node>("", "n1")));
  EXPECT_EQ(typed.meta.resource_version, "2");

  // Namespace and kind come from the path when the body lacks them.
  ASSERT_OK_AND_ASSIGN(
      const json::value lease,
      run(server_.create(kLeases, parse(R"({"metadata":{"name":"l"}})"), WriteOptions{})));
  EXPECT_EQ(lease.at("apiVersion"), "coordination.k8s.io/v1");
  EXPECT_EQ(lease.at("kind"), "Lease");
  EXPECT_EQ(lease.at("metadata").at("namespace"), "nmo");
}

TEST_F(FakeApiServerTest, ErrorsSayWhatTheApiServerSays) {
  ASSERT_OK(run(server_.create(kNodes, node("n1"), WriteOptions{})));
  const Result<json::value> again = run(server_.create(kNodes, node("n1"), WriteOptions{}));
  EXPECT_EQ(again.error(), Error(ErrorCode::kAlreadyExists, R"(nodes "n1" already exists)", 409));
  EXPECT_EQ(run(server_.get_json("/api/v1/nodes/n2")).error(),
            Error(ErrorCode::kNotFound, R"(nodes "n2" not found)", 404));
  EXPECT_EQ(run(server_.get_json(std::string(kLeases) + "/x")).error(),
            Error(ErrorCode::kNotFound, R"(leases.coordination.k8s.io "x" not found)", 404));
  EXPECT_EQ(run(server_.get_json("/healthz")).error(),
            Error(ErrorCode::kNotFound, "the server could not find the requested resource", 404));
  EXPECT_EQ(run(server_.remove("/api/v1/nodes/n2", DeleteOptions{})).error().code,
            ErrorCode::kNotFound);
}

TEST_F(FakeApiServerTest, AGroupVersionIsServedOnlyWhenToldSo) {
  const Error not_served(ErrorCode::kNotFound, "the server could not find the requested resource",
                         404);
  EXPECT_EQ(run(server_.get_json("/apis/kubevirt.io/v1")).error(), not_served);
  server_.serve_group_version("kubevirt.io/v1");
  ASSERT_OK_AND_ASSIGN(const json::value discovery, run(server_.get_json("/apis/kubevirt.io/v1")));
  EXPECT_EQ(discovery.at("kind"), "APIResourceList");
  EXPECT_EQ(discovery.at("groupVersion"), "kubevirt.io/v1");
  EXPECT_EQ(run(server_.get_json("/apis/kubevirt.io/v2")).error(), not_served);
  EXPECT_EQ(server_.count("get", "/apis/kubevirt.io/v1"), 2U);
}

TEST_F(FakeApiServerTest, CreateChecksNameNamespaceAndVersion) {
  const Result<json::value> nameless =
      run(server_.create(kPods, parse(R"({"metadata":{}})"), WriteOptions{}));
  EXPECT_EQ(nameless.error().code, ErrorCode::kInvalid);
  EXPECT_EQ(nameless.error().http_status, 422);
  EXPECT_THAT(nameless.error().message, ::testing::HasSubstr("name or generateName is required"));

  const Result<json::value> elsewhere = run(server_.create(
      kPods, parse(R"({"metadata":{"name":"p","namespace":"other"}})"), WriteOptions{}));
  EXPECT_EQ(elsewhere.error().code, ErrorCode::kBadRequest);
  EXPECT_EQ(elsewhere.error().http_status, 400);

  const Result<json::value> versioned = run(server_.create(
      kPods, parse(R"({"metadata":{"name":"p","resourceVersion":"3"}})"), WriteOptions{}));
  EXPECT_EQ(versioned.error().http_status, 500);

  ASSERT_OK_AND_ASSIGN(
      const json::value generated,
      run(server_.create(kPods, parse(R"({"metadata":{"generateName":"web-"}})"), WriteOptions{})));
  const std::string name(generated.at("metadata").at("name").as_string());
  EXPECT_THAT(name, ::testing::MatchesRegex("web-[a-z0-9]{5}"));
  EXPECT_TRUE(server_.object(std::string(kPods) + "/" + name).has_value());

  ASSERT_OK_AND_ASSIGN(const json::value dry,
                       run(server_.create(kPods, pod("d"), WriteOptions{.dry_run = true})));
  EXPECT_EQ(dry.at("metadata").at("name"), "d");
  EXPECT_FALSE(server_.object(std::string(kPods) + "/d").has_value());
}

TEST_F(FakeApiServerTest, UpdateIsGuardedByTheResourceVersion) {
  ASSERT_OK_AND_ASSIGN(json::value stored, run(server_.create(kLeases, parse(R"({
    "metadata":{"name":"l"},"spec":{"holderIdentity":"a"}})"),
                                                              WriteOptions{})));
  json::value mine = stored;
  mine.as_object()["spec"].as_object()["holderIdentity"] = "me";
  json::value theirs = stored;
  theirs.as_object()["spec"].as_object()["holderIdentity"] = "them";
  const std::string path = std::string(kLeases) + "/l";
  ASSERT_OK_AND_ASSIGN(const json::value updated, run(server_.update(path, theirs, {})));
  EXPECT_EQ(version_of(updated), "3");
  EXPECT_EQ(updated.at("metadata").at("generation"), 2);
  EXPECT_EQ(updated.at("metadata").at("uid"), stored.at("metadata").at("uid"));
  const Result<json::value> stale = run(server_.update(path, mine, {}));
  EXPECT_EQ(stale.error(),
            Error(ErrorCode::kConflict,
                  R"(Operation cannot be fulfilled on leases.coordination.k8s.io "l": the object )"
                  "has been modified; please apply your changes to the latest version and try "
                  "again",
                  409));
  // Without a resourceVersion the update is unconditional.
  json::object& meta = mine.as_object()["metadata"].as_object();
  meta.erase("resourceVersion");
  ASSERT_OK_AND_ASSIGN(const json::value forced, run(server_.update(path, mine, {})));
  EXPECT_EQ(forced.at("spec").at("holderIdentity"), "me");
  // Another incarnation's uid is a conflict; a missing object is NotFound.
  meta["uid"] = "another";
  EXPECT_EQ(run(server_.update(path, mine, {})).error().code, ErrorCode::kConflict);
  EXPECT_EQ(run(server_.update(std::string(kLeases) + "/gone", mine, {})).error().code,
            ErrorCode::kNotFound);
}

TEST_F(FakeApiServerTest, AWriteThatChangesNothingIsNoWrite) {
  ASSERT_OK(run(server_.create(kNodes, node("n1", R"("spec":{"unschedulable":true})"), {})));
  const std::string before = server_.resource_version();
  ASSERT_OK_AND_ASSIGN(const json::value same,
                       run(server_.patch("/api/v1/nodes/n1", PatchType::kMergePatch,
                                         R"({"spec":{"unschedulable":true}})", {})));
  EXPECT_EQ(version_of(same), before);
  EXPECT_EQ(server_.resource_version(), before);
}

TEST_F(FakeApiServerTest, StatusSubresourceSeparatesStatusFromTheRest) {
  ASSERT_OK(run(server_.create(kNodes, node("n1", R"("status":{"phase":"Running"})"), {})));
  const std::string path = "/api/v1/nodes/n1";
  // The main path ignores .status ...
  ASSERT_OK_AND_ASSIGN(
      const json::value main,
      run(server_.patch(path, PatchType::kMergePatch,
                        R"({"metadata":{"labels":{"a":"b"}},"status":{"phase":"Gone"}})", {})));
  EXPECT_EQ(main.at("status").at("phase"), "Running");
  EXPECT_EQ(main.at("metadata").at("labels").at("a"), "b");
  // ... and /status changes nothing else.
  ASSERT_OK_AND_ASSIGN(
      const json::value status,
      run(server_.patch(path + "/status", PatchType::kMergePatch,
                        R"({"metadata":{"labels":{"a":"c"}},"status":{"phase":"Gone"}})", {})));
  EXPECT_EQ(status.at("status").at("phase"), "Gone");
  EXPECT_EQ(status.at("metadata").at("labels").at("a"), "b");
  json::value put_status = status;
  put_status.as_object()["status"] = {{"phase", "Back"}};
  put_status.as_object()["spec"] = {{"unschedulable", true}};
  ASSERT_OK_AND_ASSIGN(const json::value updated,
                       run(server_.update(path + "/status", put_status, {})));
  EXPECT_EQ(updated.at("status").at("phase"), "Back");
  EXPECT_FALSE(updated.as_object().contains("spec"));
  ASSERT_OK_AND_ASSIGN(const json::value read, run(server_.get_json(path + "/status")));
  EXPECT_EQ(read, updated);

  // A kind without a status subresource writes .status with the object and has no /status.
  ASSERT_OK(
      run(server_.create(kLeases, parse(R"({"metadata":{"name":"l"},"status":{"x":1}})"), {})));
  const std::string lease = std::string(kLeases) + "/l";
  EXPECT_EQ(server_.object(lease)->at("status").at("x"), 1);
  ASSERT_OK(run(server_.patch(lease, PatchType::kMergePatch, R"({"status":{"x":2}})", {})));
  EXPECT_EQ(server_.object(lease)->at("status").at("x"), 2);
  EXPECT_EQ(run(server_.patch(lease + "/status", PatchType::kMergePatch, "{}", {})).error().code,
            ErrorCode::kNotFound);
  server_.set_status_subresource("leases", true);
  ASSERT_OK(run(server_.patch(lease, PatchType::kMergePatch, R"({"status":{"x":3}})", {})));
  EXPECT_EQ(server_.object(lease)->at("status").at("x"), 2);
}

TEST_F(FakeApiServerTest, CreateDropsTheStatusOfKindsWithASubresourceButNodes) {
  ASSERT_OK_AND_ASSIGN(const json::value created, run(server_.create(kPods, pod("p"), {})));
  EXPECT_FALSE(created.as_object().contains("status"));
  ASSERT_OK_AND_ASSIGN(const json::value node_created,
                       run(server_.create(kNodes, node("n", R"("status":{"x":1})"), {})));
  EXPECT_EQ(node_created.at("status").at("x"), 1);
}

// ---- patches ----

TEST_F(FakeApiServerTest, PatchCarryingAResourceVersionIsGuardedByIt) {
  ASSERT_OK_AND_ASSIGN(const json::value created, run(server_.create(kNodes, node("n1"), {})));
  const std::string path = "/api/v1/nodes/n1";
  const std::string guarded =
      R"({"metadata":{"resourceVersion":")" + version_of(created) + R"(","labels":{"a":"1"}}})";
  ASSERT_OK(run(server_.patch(path, PatchType::kMergePatch, guarded, {})));
  const Result<json::value> stale = run(server_.patch(path, PatchType::kMergePatch, guarded, {}));
  EXPECT_EQ(stale.error().code, ErrorCode::kConflict);
  EXPECT_EQ(stale.error().http_status, 409);
  // A JSON patch guards with a test; its failure is Invalid, as the client documents.
  const Result<json::value> tested = run(server_.patch(
      path, PatchType::kJsonPatch,
      R"([{"op":"test","path":"/metadata/resourceVersion","value":")" + version_of(created) +
          R"("},{"op":"add","path":"/spec","value":{"unschedulable":true}}])",
      {}));
  ASSERT_FALSE(tested.has_value());
  EXPECT_EQ(tested.error().code, ErrorCode::kInvalid);
  EXPECT_EQ(tested.error().http_status, 422);
  EXPECT_EQ(tested.error().message,
            "the server rejected our request due to an error in our request");
  ASSERT_EQ(tested.error().causes.size(), 1U);
  EXPECT_EQ(tested.error().causes[0].message,
            "testing value /metadata/resourceVersion failed: test failed");
  EXPECT_FALSE(server_.object(path)->as_object().contains("spec"));
  // Malformed patches are bad requests; patching a missing object is NotFound.
  EXPECT_EQ(run(server_.patch(path, PatchType::kMergePatch, "{", {})).error().code,
            ErrorCode::kBadRequest);
  EXPECT_EQ(run(server_.patch(path, PatchType::kJsonPatch, "{}", {})).error().code,
            ErrorCode::kBadRequest);
  EXPECT_EQ(run(server_.patch("/api/v1/nodes/n9", PatchType::kMergePatch, "{}", {})).error().code,
            ErrorCode::kNotFound);
}

TEST_F(FakeApiServerTest, StrategicMergePatchMergesNodeConditionsAndIsRefusedForCustomResources) {
  ASSERT_OK(run(server_.create(kNodes, node("n1", R"("status":{"conditions":[
    {"type":"Ready","status":"True"},{"type":"Maintenance","status":"True"}]})"),
                               {})));
  ASSERT_OK_AND_ASSIGN(
      const json::value patched,
      run(server_.patch("/api/v1/nodes/n1/status", PatchType::kStrategicMerge, R"({"status":{
        "conditions":[{"type":"Maintenance","$patch":"delete"},{"type":"Planned","status":"True"}]}})",
                        {})));
  EXPECT_EQ(patched.at("status").at("conditions"),
            parse(R"([{"type":"Ready","status":"True"},{"type":"Planned","status":"True"}])"));

  server_.put(parse(R"({"apiVersion":"nodemaintenance.medik8s.io/v1beta1",
                        "kind":"NodeMaintenance","metadata":{"name":"nm"}})"));
  const Result<json::value> refused =
      run(server_.patch(std::string(kMaintenances) + "/nm", PatchType::kStrategicMerge, "{}", {}));
  EXPECT_EQ(refused.error().code, ErrorCode::kBadRequest);
  EXPECT_EQ(refused.error().http_status, 415);
  EXPECT_EQ(run(server_.patch(std::string(kMaintenances) + "/nm", PatchType::kApply, "{}", {}))
                .error()
                .code,
            ErrorCode::kInternal);
}

// ---- finalizers and deletion ----

TEST_F(FakeApiServerTest, DeleteOfAnObjectWithFinalizersMarksItUntilTheyAreGone) {
  ASSERT_OK(run(server_.create(kMaintenances,
                               parse(R"({"metadata":{"name":"nm","finalizers":["a","b"]}})"), {})));
  const std::string path = std::string(kMaintenances) + "/nm";
  ASSERT_OK(run(server_.remove(path, DeleteOptions{})));
  ASSERT_TRUE(server_.object(path).has_value());
  EXPECT_TRUE(server_.object(path)->at("metadata").as_object().contains("deletionTimestamp"));
  const std::string marked = server_.resource_version();
  EXPECT_EQ(marked, "3");
  ASSERT_OK(run(server_.remove(path, DeleteOptions{})));  // already being deleted: nothing
  EXPECT_EQ(server_.resource_version(), marked);

  const Result<json::value> more =
      run(server_.patch(path, PatchType::kJsonPatch,
                        R"([{"op":"add","path":"/metadata/finalizers/-","value":"c"}])", {}));
  EXPECT_EQ(more.error().code, ErrorCode::kInvalid);
  EXPECT_THAT(more.error().message, ::testing::HasSubstr("no new finalizers can be added"));

  ASSERT_OK(run(server_.patch(path, PatchType::kJsonPatch,
                              R"([{"op":"test","path":"/metadata/finalizers/0","value":"a"},
                                  {"op":"remove","path":"/metadata/finalizers/0"}])",
                              {})));
  ASSERT_TRUE(server_.object(path).has_value());
  ASSERT_OK_AND_ASSIGN(
      const json::value last,
      run(server_.patch(path, PatchType::kMergePatch, R"({"metadata":{"finalizers":null}})", {})));
  EXPECT_FALSE(server_.object(path).has_value());
  EXPECT_EQ(version_of(last), server_.resource_version());
}

TEST_F(FakeApiServerTest, DeletePreconditionsMustHold) {
  ASSERT_OK_AND_ASSIGN(const json::value created, run(server_.create(kPods, pod("p"), {})));
  const std::string path = std::string(kPods) + "/p";
  const std::string uid(created.at("metadata").at("uid").as_string());
  const Result<void> other_uid =
      run(server_.remove(path, DeleteOptions{.precondition_uid = "other"}));
  EXPECT_EQ(other_uid.error(), Error(ErrorCode::kConflict,
                                     R"(Operation cannot be fulfilled on pods "p": Precondition )"
                                     "failed: UID in precondition: other, UID in object meta: " +
                                         uid,
                                     409));
  EXPECT_EQ(
      run(server_.remove(path, DeleteOptions{.precondition_resource_version = "1"})).error().code,
      ErrorCode::kConflict);
  ASSERT_OK(run(server_.remove(path, DeleteOptions{.precondition_uid = uid})));
  EXPECT_FALSE(server_.object(path).has_value());
}

// ---- lists ----

class FakeApiServerListTest : public FakeApiServerTest {
 protected:
  void SetUp() override {
    server_.put(pod("a", R"({"app":"web","tier":"front"})", "n1"));
    server_.put(pod("b", R"({"app":"web","tier":"back"})", "n2"));
    server_.put(pod("c", R"({"app":"db"})", "n1"));
    server_.put(pod("d", "{}"));
    json::value elsewhere = pod("e", R"({"app":"web"})", "n1");
    elsewhere.as_object()["metadata"].as_object()["namespace"] = "other";
    server_.put(elsewhere);
  }

  std::vector<std::string> selected(const std::string& labels, const std::string& fields = "") {
    return names(list(kPods, {.label_selector = labels, .field_selector = fields}));
  }
};

TEST_F(FakeApiServerListTest, LabelSelectors) {
  EXPECT_THAT(selected(""), ElementsAre("a", "b", "c", "d"));
  EXPECT_THAT(selected("app=web"), ElementsAre("a", "b"));
  EXPECT_THAT(selected("app!=web"), ElementsAre("c", "d"));
  EXPECT_THAT(selected("app in (db,web),tier notin (back)"), ElementsAre("a", "c"));
  EXPECT_THAT(selected("tier"), ElementsAre("a", "b"));
  EXPECT_THAT(selected("!app"), ElementsAre("d"));
  const Result<std::string> bad =
      run(server_.list_raw(kPods, ListOptions{.label_selector = "app in (web"}));
  EXPECT_EQ(bad.error().code, ErrorCode::kBadRequest);
  EXPECT_EQ(bad.error().http_status, 400);
}

TEST_F(FakeApiServerListTest, FieldSelectors) {
  EXPECT_THAT(selected("", "spec.nodeName=n1"), ElementsAre("a", "c"));
  EXPECT_THAT(selected("", "spec.nodeName=="), ElementsAre("d"));
  EXPECT_THAT(selected("app=web", "spec.nodeName!=n1"), ElementsAre("b"));
  EXPECT_THAT(selected("", "metadata.name=b,metadata.namespace=shop"), ElementsAre("b"));
  EXPECT_THAT(names(list("/api/v1/pods", {.field_selector = "spec.nodeName=n1"})),
              ElementsAre("e", "a", "c"));  // namespace "other" sorts before "shop"

  server_.put(parse(R"({"apiVersion":"v1","kind":"Event","metadata":{"name":"ev",
    "namespace":"default"},"involvedObject":{"name":"n1"},"type":"Warning",
    "source":{"component":"nmo"}})"));
  const std::string events = "/api/v1/namespaces/default/events";
  EXPECT_THAT(names(list(events, {.field_selector = "involvedObject.name=n1,type=Warning"})),
              ElementsAre("ev"));
  EXPECT_THAT(names(list(events, {.field_selector = "source=nmo"})), ElementsAre("ev"));
  EXPECT_TRUE(names(list(events, {.field_selector = "source=kubelet"})).empty());
  EXPECT_EQ(run(server_.list_raw(events, {.field_selector = "=x"})).error().code,
            ErrorCode::kBadRequest);
}

TEST_F(FakeApiServerListTest, ListBodyAndQueryStrings) {
  const json::value body = list(kPods, {.label_selector = "app=db"});
  EXPECT_EQ(body.at("kind"), "PodList");
  EXPECT_EQ(body.at("apiVersion"), "v1");
  EXPECT_EQ(body.at("metadata").at("resourceVersion"), json::value(server_.resource_version()));
  EXPECT_FALSE(body.at("metadata").as_object().contains("continue"));
  // A get_json of a collection is a list, its query read as ListOptions.
  ASSERT_OK_AND_ASSIGN(
      const json::value got,
      run(server_.get_json(std::string(kPods) + "?labelSelector=app%3Dweb&fieldSelector=spec."
                                                "nodeName%3Dn2")));
  EXPECT_THAT(names(got), ElementsAre("b"));
  EXPECT_EQ(server_.requests().back().verb, "list");
  EXPECT_EQ(server_.requests().back().list_options->label_selector, "app=web");
  // Typed lists decode the body.
  ASSERT_OK_AND_ASSIGN(const ListPage<Pod> page,
                       run(server_.list<Pod>("shop", ListOptions{.label_selector = "app=web"})));
  ASSERT_EQ(page.items.size(), 2U);
  EXPECT_EQ(page.items[0].node_name, "n1");
  EXPECT_EQ(server_.objects("/api/v1/pods").size(), 5U);
}

TEST_F(FakeApiServerListTest, PagesFromOneSnapshotUntilCompacted) {
  const json::value first = list(kPods, {.limit = 3});
  EXPECT_THAT(names(first), ElementsAre("a", "b", "c"));
  const std::string token(first.at("metadata").at("continue").as_string());
  EXPECT_EQ(first.at("metadata").at("remainingItemCount"), 1);
  server_.put(pod("aa"));  // after the first page: not in this list
  const json::value second = list(kPods, {.limit = 3, .continue_token = token});
  EXPECT_THAT(names(second), ElementsAre("d"));
  EXPECT_EQ(second.at("metadata").at("resourceVersion"),
            first.at("metadata").at("resourceVersion"));
  EXPECT_FALSE(second.at("metadata").as_object().contains("continue"));

  // list_all follows the tokens.
  ASSERT_OK_AND_ASSIGN(const ListPage<Pod> all,
                       run(server_.list_all<Pod>("shop", ListOptions{.limit = 2})));
  EXPECT_EQ(all.items.size(), 5U);
  EXPECT_EQ(all.resource_version, server_.resource_version());
  EXPECT_EQ(server_.count("list", kPods), 2U + 3U);

  const json::value paged = list(kPods, {.limit = 1});
  server_.compact();
  const Result<std::string> old = run(server_.list_raw(
      kPods, {.limit = 1,
              .continue_token = std::string(paged.at("metadata").at("continue").as_string())}));
  EXPECT_EQ(old.error().code, ErrorCode::kExpired);
  EXPECT_EQ(old.error().http_status, 410);
}

// ---- watches ----

TEST_F(FakeApiServerTest, WatchDeliversTheChangesAfterItsVersion) {
  server_.put(pod("a"));
  const std::string listed = server_.resource_version();  // "2"
  server_.put(pod("b"));                                  // 3: replayed from the history
  std::unique_ptr<WatchStream> pods = watch(kPods, {.resource_version = listed});
  ASSERT_OK(run(server_.patch(std::string(kPods) + "/a", PatchType::kMergePatch,
                              R"({"metadata":{"labels":{"x":"y"}}})", {})));
  ASSERT_OK(run(server_.remove(std::string(kPods) + "/b", {})));
  ASSERT_OK(run(
      server_.create("/api/v1/namespaces/other/pods", parse(R"({"metadata":{"name":"c"}})"), {})));
  EXPECT_EQ(next(*pods), "ADDED b@3");
  EXPECT_EQ(next(*pods), "MODIFIED a@4");
  EXPECT_EQ(next(*pods), "DELETED b@5");
  EXPECT_TRUE(quiet(*pods)) << "the pod of namespace other is not in this watch";
  EXPECT_EQ(server_.count("watch", kPods), 1U);
}

TEST_F(FakeApiServerTest, WatchFromNowStartsWithTheObjectsAsAdded) {
  server_.put(node("n2"));
  server_.put(node("n1"));
  std::unique_ptr<WatchStream> nodes = watch(kNodes, {.resource_version = ""});
  EXPECT_EQ(next(*nodes), "ADDED n1@3");
  EXPECT_EQ(next(*nodes), "ADDED n2@2");
  EXPECT_TRUE(quiet(*nodes));
}

TEST_F(FakeApiServerTest, WatchSeesObjectsEnterAndLeaveItsSelector) {
  server_.put(pod("p", R"({"app":"web"})"));
  std::unique_ptr<WatchStream> web =
      watch(kPods, {.label_selector = "app=web", .resource_version = server_.resource_version()});
  const std::string path = std::string(kPods) + "/p";
  ASSERT_OK(run(
      server_.patch(path, PatchType::kMergePatch, R"({"metadata":{"labels":{"app":"db"}}})", {})));
  ASSERT_OK(run(
      server_.patch(path, PatchType::kMergePatch, R"({"metadata":{"labels":{"tier":"x"}}})", {})));
  ASSERT_OK(run(
      server_.patch(path, PatchType::kMergePatch, R"({"metadata":{"labels":{"app":"web"}}})", {})));
  EXPECT_EQ(next(*web), "DELETED p@3");
  EXPECT_EQ(next(*web), "ADDED p@5");
}

TEST_F(FakeApiServerTest, WatchFromAVersionOlderThanTheHistoryIsExpired) {
  FakeApiServer small(io_.get_executor(), {.history_limit = 2});
  small.put(node("a"));  // 2
  small.put(node("b"));  // 3
  small.put(node("c"));  // 4: the history keeps 3 and 4
  Result<std::unique_ptr<WatchStream>> old =
      run(small.watch(kNodes, WatchOptions{.resource_version = "1"}));
  ASSERT_TRUE(old.has_value());
  const Result<std::optional<WatchEvent>> event = run((*old)->next());
  ASSERT_FALSE(event.has_value());
  EXPECT_EQ(event.error(), Error(ErrorCode::kExpired, "too old resource version: 1 (3)", 410));
  EXPECT_EQ(small.open_watches(), 0U);
  Result<std::unique_ptr<WatchStream>> recent =
      run(small.watch(kNodes, WatchOptions{.resource_version = "2"}));
  EXPECT_EQ(next(**recent), "ADDED b@3");
  small.compact();
  Result<std::unique_ptr<WatchStream>> compacted =
      run(small.watch(kNodes, WatchOptions{.resource_version = "3"}));
  EXPECT_EQ(run((*compacted)->next()).error().code, ErrorCode::kExpired);
}

TEST_F(FakeApiServerTest, ScriptedWatchEndingsAndBookmarks) {
  std::unique_ptr<WatchStream> a = watch(kNodes, {.resource_version = "1"});
  std::unique_ptr<WatchStream> b =
      watch(kNodes, {.resource_version = "1", .allow_bookmarks = false});
  std::unique_ptr<WatchStream> c = watch(kPods, {.resource_version = "1"});
  EXPECT_EQ(server_.open_watches(), 3U);
  EXPECT_EQ(server_.open_watches(kNodes), 2U);
  EXPECT_EQ(server_.open_watches("/api/v1/namespaces"), 1U);

  server_.put(node("n1"));
  server_.send_bookmarks();
  server_.end_watches();
  EXPECT_EQ(server_.open_watches(), 0U);
  EXPECT_EQ(next(*a), "ADDED n1@2");
  EXPECT_EQ(next(*a), "BOOKMARK @2");
  EXPECT_EQ(next(*a), "end");
  EXPECT_EQ(next(*b), "ADDED n1@2");
  EXPECT_EQ(next(*b), "end");
  EXPECT_EQ(next(*c), "BOOKMARK @2");
  EXPECT_EQ(next(*c), "end");

  std::unique_ptr<WatchStream> expiring = watch(kNodes, {.resource_version = "2"});
  server_.expire_watches();
  EXPECT_EQ(run(expiring->next()).error().code, ErrorCode::kExpired);
  std::unique_ptr<WatchStream> breaking = watch(kNodes, {.resource_version = "2"});
  server_.break_watches(Error(ErrorCode::kUnavailable, "connection reset"));
  EXPECT_EQ(run(breaking->next()).error(), Error(ErrorCode::kUnavailable, "connection reset"));
}

TEST_F(FakeApiServerTest, WatchEndsAtItsTimeoutAndFailsWhenSilentPastItsIdleTimeout) {
  std::unique_ptr<WatchStream> timed = watch(kNodes, {.resource_version = "1", .timeout = 1s});
  EXPECT_EQ(next(*timed), "end");
  std::unique_ptr<WatchStream> idle =
      watch(kNodes, {.resource_version = "1", .timeout = 60s, .idle_timeout = 20ms});
  EXPECT_EQ(run(idle->next()).error().code, ErrorCode::kTimeout);
  EXPECT_EQ(server_.open_watches(), 0U);
}

TEST_F(FakeApiServerTest, CancelEndsAPendingNext) {
  std::unique_ptr<WatchStream> nodes = watch(kNodes, {.resource_version = "1"});
  std::optional<Result<std::optional<WatchEvent>>> got;
  asio::co_spawn(
      io_, [&]() -> asio::awaitable<void> { got.emplace(co_await nodes->next()); }, asio::detached);
  io_.restart();
  io_.poll();
  EXPECT_FALSE(got.has_value());
  EXPECT_EQ(server_.open_watches(), 1U);
  nodes->cancel();
  io_.restart();
  io_.poll();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->error().code, ErrorCode::kCancelled);
  EXPECT_EQ(server_.open_watches(), 0U);
  nodes.reset();
}

TEST_F(FakeApiServerTest, ShutdownCancelsWatchesAndEveryLaterCall) {
  std::unique_ptr<WatchStream> nodes = watch(kNodes, {.resource_version = "1"});
  server_.shutdown();
  EXPECT_EQ(run(nodes->next()).error().code, ErrorCode::kCancelled);
  const std::size_t recorded = server_.requests().size();
  EXPECT_EQ(run(server_.get_json("/api/v1/nodes/n1")).error().code, ErrorCode::kCancelled);
  EXPECT_EQ(run(server_.create(kNodes, node("n"), {})).error().code, ErrorCode::kCancelled);
  EXPECT_EQ(run(server_.watch(kNodes, WatchOptions{})).error().code, ErrorCode::kCancelled);
  EXPECT_EQ(server_.requests().size(), recorded);
}

// ---- evictions ----

TEST_F(FakeApiServerTest, EvictionDeletesThePodOrReportsTheRefusal) {
  server_.put(pod("a"));
  server_.put(pod("b"));
  ASSERT_OK_AND_ASSIGN(const EvictionResult evicted, run(server_.evict("shop", "a", {})));
  EXPECT_EQ(evicted.outcome, EvictionOutcome::kEvicted);
  EXPECT_FALSE(server_.object(std::string(kPods) + "/a").has_value());
  ASSERT_OK_AND_ASSIGN(const EvictionResult gone, run(server_.evict("shop", "a", {})));
  EXPECT_EQ(gone.outcome, EvictionOutcome::kNotFound);
  EXPECT_EQ(gone.status.message, R"(pods "a" not found)");

  server_.fail_next("evict", std::string(kPods) + "/b", FakeApiServer::pdb_refusal("db-pdb"));
  ASSERT_OK_AND_ASSIGN(const EvictionResult blocked, run(server_.evict("shop", "b", {})));
  EXPECT_EQ(blocked.outcome, EvictionOutcome::kBlockedByPdb);
  EXPECT_TRUE(server_.object(std::string(kPods) + "/b").has_value());
  ASSERT_OK_AND_ASSIGN(const EvictionResult wrong_uid,
                       run(server_.evict("shop", "b", {.precondition_uid = "x"})));
  EXPECT_EQ(wrong_uid.outcome, EvictionOutcome::kRefused);
  EXPECT_EQ(wrong_uid.status.http_status, 409);
  ASSERT_OK_AND_ASSIGN(const EvictionResult dry,
                       run(server_.evict("shop", "b", {.dry_run = true})));
  EXPECT_EQ(dry.outcome, EvictionOutcome::kEvicted);
  EXPECT_TRUE(server_.object(std::string(kPods) + "/b").has_value());

  // Without an answer (a connection failure) it is an Error; a fence keeps it unsent.
  server_.fail_next("evict", "", Error(ErrorCode::kUnavailable, "connection refused"));
  EXPECT_EQ(run(server_.evict("shop", "b", {})).error().code, ErrorCode::kUnavailable);
  const std::size_t sent = server_.count("evict");
  const Result<EvictionResult> fenced = run(server_.evict(
      "shop", "b",
      {.fence = [] { return Result<void>(Error(ErrorCode::kUnavailable, "not the leader")); }}));
  EXPECT_EQ(fenced.error().message, "not the leader");
  EXPECT_EQ(server_.count("evict"), sent);

  json::value guarded = pod("c");
  guarded.as_object()["metadata"].as_object()["finalizers"] = json::array{"x"};
  server_.put(guarded);
  ASSERT_OK_AND_ASSIGN(const EvictionResult marked, run(server_.evict("shop", "c", {})));
  EXPECT_EQ(marked.outcome, EvictionOutcome::kEvicted);
  EXPECT_TRUE(server_.object(std::string(kPods) + "/c")
                  ->at("metadata")
                  .as_object()
                  .contains("deletionTimestamp"));
  EXPECT_EQ(server_.requests().back().path, "/api/v1/namespaces/shop/pods/c/eviction");
}

// ---- faults, latency, hooks ----

TEST_F(FakeApiServerTest, FailNextForbidAndAllow) {
  server_.put(node("n1"));
  server_.put(node("n10"));
  server_.fail_next("get", "/api/v1/nodes/n1", Error(ErrorCode::kUnavailable, "down"), 2);
  EXPECT_OK(run(server_.get_json("/api/v1/nodes/n10")));  // whole segments only
  EXPECT_EQ(run(server_.get_json("/api/v1/nodes/n1")).error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(run(server_.get_json("/api/v1/nodes/n1")).error().code, ErrorCode::kUnavailable);
  EXPECT_OK(run(server_.get_json("/api/v1/nodes/n1")));

  server_.fail_next("*", kNodes, Error(ErrorCode::kInternal, "boom", 500),
                    FakeApiServer::kEveryCall);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(run(server_.get_json("/api/v1/nodes/n1")).error().code, ErrorCode::kInternal);
  }
  server_.clear_faults();
  EXPECT_OK(run(server_.get_json("/api/v1/nodes/n1")));

  server_.forbid("patch", "/api/v1/nodes");
  const Result<json::value> forbidden =
      run(server_.patch("/api/v1/nodes/n1/status", PatchType::kMergePatch, "{}", {}));
  EXPECT_EQ(forbidden.error(),
            Error(ErrorCode::kForbidden,
                  R"(nodes "n1" is forbidden: User "system:serviceaccount:default:fake" cannot )"
                  R"(patch resource "nodes/status" in API group "" at the cluster scope)",
                  403));
  server_.forbid("list", "");
  EXPECT_EQ(run(server_.list_raw(kPods, {})).error().message,
            R"(pods is forbidden: User "system:serviceaccount:default:fake" cannot list )"
            R"(resource "pods" in API group "" in the namespace "shop")");
  server_.allow("patch", "/api/v1/nodes");
  EXPECT_OK(run(server_.patch("/api/v1/nodes/n1/status", PatchType::kMergePatch, "{}", {})));
}

TEST_F(FakeApiServerTest, LatencyAndHoldsDelayCalls) {
  server_.put(node("n1"));
  server_.set_latency("get", kNodes, 50ms);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_OK(run(server_.get_json("/api/v1/nodes/n1")));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 50ms);
  server_.set_latency("get", kNodes, 0ms);

  server_.hold("create", "");
  int done = 0;
  for (const char* name : {"a", "b"}) {
    asio::co_spawn(
        io_,
        [this, name, &done]() -> asio::awaitable<void> {
          // Named arguments: GCC 12 and temporaries in co_await (docs/development.md).
          std::string path = kNodes;
          json::value object = node(name);
          const WriteOptions options;
          const Result<json::value> created = co_await server_.create(path, object, options);
          EXPECT_TRUE(created.has_value());
          ++done;
        },
        asio::detached);
  }
  io_.restart();
  io_.poll();
  EXPECT_EQ(server_.waiting(), 2U);
  EXPECT_EQ(done, 0);
  server_.release();
  io_.restart();
  io_.poll();
  EXPECT_EQ(done, 2);
  EXPECT_EQ(server_.waiting(), 0U);
}

TEST_F(FakeApiServerTest, BeforeNextRunsOnceBetweenTheReadAndTheWrite) {
  server_.put(node("n1"));
  ASSERT_OK_AND_ASSIGN(json::value read, run(server_.get_json("/api/v1/nodes/n1")));
  server_.before_next("update", "/api/v1/nodes/n1", [this] {
    json::value theirs = *server_.object("/api/v1/nodes/n1");
    theirs.as_object()["spec"] = {{"unschedulable", true}};
    server_.put(std::move(theirs));
  });
  read.as_object()["spec"] = {{"podCIDR", "10.0.0.0/24"}};
  EXPECT_EQ(run(server_.update("/api/v1/nodes/n1", read, {})).error().code, ErrorCode::kConflict);
  ASSERT_OK_AND_ASSIGN(read, run(server_.get_json("/api/v1/nodes/n1")));
  EXPECT_OK(run(server_.update("/api/v1/nodes/n1", read, {})));
}

TEST_F(FakeApiServerTest, OnCreateAnswersInsteadOfStoring) {
  const std::string reviews = "/apis/authentication.k8s.io/v1/tokenreviews";
  server_.on_create(reviews, [](const json::value& review) -> Result<json::value> {
    const bool known = review.at("spec").at("token") == "good";
    return json::value{{"status", {{"authenticated", known}}}};
  });
  ASSERT_OK_AND_ASSIGN(const json::value answer,
                       run(server_.create(reviews, parse(R"({"spec":{"token":"good"}})"), {})));
  EXPECT_EQ(answer.at("status").at("authenticated"), true);
  EXPECT_TRUE(server_.objects(reviews).empty());
}

// ---- seeding and inspection ----

TEST_F(FakeApiServerTest, RequestsAreRecordedInOrder) {
  server_.put(node("n1"));
  ASSERT_OK(run(server_.get_json("/api/v1/nodes/n1")));
  ASSERT_OK(run(server_.patch("/api/v1/nodes/n1", PatchType::kMergePatch, R"({"a":1})", {})));
  ASSERT_OK(run(server_.list_raw(kNodes, {.label_selector = "x"})));
  EXPECT_EQ(run(server_.remove("/api/v1/nodes/n1", {.precondition_uid = "u"})).error().code,
            ErrorCode::kConflict);
  ASSERT_EQ(server_.requests().size(), 4U);
  EXPECT_EQ(server_.requests()[0].verb, "get");
  EXPECT_EQ(server_.requests()[1].verb, "patch");
  EXPECT_EQ(server_.requests()[1].patch_type, PatchType::kMergePatch);
  EXPECT_EQ(server_.requests()[1].body, parse(R"({"a":1})"));
  EXPECT_EQ(server_.requests()[2].list_options->label_selector, "x");
  EXPECT_EQ(server_.requests()[3].verb, "delete");
  EXPECT_EQ(server_.requests()[3].body.at("preconditions").at("uid"), "u");
  EXPECT_EQ(server_.count("*", "/api/v1/nodes/n1"), 3U);
  EXPECT_EQ(server_.count("list"), 1U);
  server_.clear_requests();
  EXPECT_TRUE(server_.requests().empty());
}

TEST_F(FakeApiServerTest, PutDerivesThePathAndKeepsTheIdentityOfAReplacedObject) {
  const json::value first = server_.put(parse(R"({"apiVersion":"nodemaintenance.medik8s.io/v1beta1",
    "kind":"NodeMaintenance","metadata":{"name":"nm"},"spec":{"nodeName":"n1"}})"));
  const std::string path = std::string(kMaintenances) + "/nm";
  ASSERT_TRUE(server_.object(path).has_value());
  json::value changed = first;
  changed.as_object()["spec"] = {{"nodeName", "n2"}};
  changed.as_object()["metadata"].as_object().erase("uid");
  const json::value second = server_.put(changed);
  EXPECT_EQ(second.at("metadata").at("uid"), first.at("metadata").at("uid"));
  EXPECT_EQ(second.at("metadata").at("generation"), 2);
  EXPECT_EQ(version_of(second), "3");
  EXPECT_EQ(server_.put(second), second) << "the same object again is no write";

  server_.put("/apis/example.com/v1/namespaces/x/widgets", parse(R"({"metadata":{"name":"w"}})"));
  EXPECT_EQ(server_.object("/apis/example.com/v1/namespaces/x/widgets/w")->at("kind"), "Widget");
  EXPECT_TRUE(server_.erase(path));
  EXPECT_FALSE(server_.erase(path));
  EXPECT_FALSE(server_.object(path).has_value());
}

}  // namespace
}  // namespace nmo::kube::testing
