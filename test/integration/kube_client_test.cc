// The Kubernetes client against the real local API server: typed reads, CRUD and patch
// semantics, paging, watches, evictions (201 / 429 PDB / 500 two PDBs), the status
// subresource, and a rotating bearer-token file.
#include <filesystem>
#include <fstream>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "kube/api/meta.h"
#include "kube/api/namespace.h"
#include "kube/api/node.h"
#include "kube/api/status.h"
#include "kube/client/client.h"
#include "kube/config/kubeconfig_loader.h"
#include "kube/config/token_source.h"
#include "test/e2e/support/cluster.h"
#include "test/integration/support/run.h"

namespace nmo::kube {

// A projection defined outside kube/api: any type with a ResourceInfo works with the client.
struct ConfigMap {
  ObjectMeta meta;
};

template <>
struct ResourceInfo<ConfigMap> {
  static constexpr std::string_view kGroup = "";
  static constexpr std::string_view kVersion = "v1";
  static constexpr std::string_view kPlural = "configmaps";
  static constexpr std::string_view kKind = "ConfigMap";
  static constexpr bool kNamespaced = true;
  static Result<ConfigMap> decode(const boost::json::value& object) {
    auto meta = decode_meta(object);
    if (!meta) return meta.error();
    return ConfigMap{std::move(*meta)};
  }
};

namespace {

namespace json = boost::json;
using e2e::ClusterTest;
using e2e::TestNamespace;
using testing::run;
using namespace std::chrono_literals;

class KubeClientTest : public ClusterTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    if (HasFatalFailure()) return;
    auto config = load_kubeconfig({});
    ASSERT_TRUE(config) << config.error().describe();
    auto client = Client::create(io_.get_executor(), std::move(*config));
    ASSERT_TRUE(client) << client.error().describe();
    client_ = std::move(*client);
  }

  static json::value config_map(const std::string& ns, const std::string& name,
                                const std::string& label = "itest") {
    return json::object{
        {"apiVersion", "v1"},
        {"kind", "ConfigMap"},
        {"metadata", {{"name", name}, {"namespace", ns}, {"labels", {{"suite", label}}}}},
        {"data", {{"k", "v"}}},
    };
  }

  asio::io_context io_;
  std::unique_ptr<Client> client_;
};

TEST_F(KubeClientTest, TypedGetOfNamespaceAndNode) {
  auto ns = run(io_, [&](auto) { return client_->get<Namespace>("", "default"); });
  ASSERT_TRUE(ns) << ns.error().describe();
  EXPECT_EQ(ns->meta.name, "default");
  EXPECT_EQ(ns->phase, "Active");

  auto node = run(io_, [&](auto) { return client_->get<Node>("", "node-master-01"); });
  ASSERT_TRUE(node) << node.error().describe();
  ASSERT_EQ(node->taints.size(), 1U);
  EXPECT_EQ(node->taints[0].key, "node-role.kubernetes.io/control-plane");
  EXPECT_EQ(node->taints[0].effect, "NoSchedule");

  auto missing = run(io_, [&](auto) { return client_->get<Node>("", "node-that-does-not-exist"); });
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(missing.error().http_status, 404);
  EXPECT_EQ(missing.error().message, R"(nodes "node-that-does-not-exist" not found)");
}

// Every HTTP attempt reaches ClientOptions::on_attempt with client-go's labels (the source of
// rest_client_requests_total), watches included.
TEST_F(KubeClientTest, EachAttemptIsReportedWithMethodAndCode) {
  std::vector<std::string> attempts;
  ClientOptions options;
  options.on_attempt = [&attempts](std::string_view method, std::string_view code) {
    attempts.push_back(std::string(method) + " " + std::string(code));
  };
  auto config = load_kubeconfig({});
  ASSERT_TRUE(config) << config.error().describe();
  auto observed = Client::create(io_.get_executor(), std::move(*config), options);
  ASSERT_TRUE(observed) << observed.error().describe();
  Client& client = **observed;

  (void)run(io_, [&](auto) { return client.get<Namespace>("", "default"); });
  (void)run(io_, [&](auto) { return client.get<Node>("", "node-that-does-not-exist"); });
  TestNamespace ns(kubectl_, "itest-attempts");
  const std::string collection = collection_path<ConfigMap>(ns.name());
  (void)run(io_, [&](auto) { return client.create(collection, config_map(ns.name(), "cm")); });
  auto watch = run(
      io_, [&](auto) { return client.watch(collection, WatchOptions{.resource_version = "0"}); });
  ASSERT_TRUE(watch) << watch.error().describe();
  (*watch)->cancel();
  EXPECT_EQ(attempts, (std::vector<std::string>{"GET 200", "GET 404", "POST 201", "GET 200"}));
}

TEST_F(KubeClientTest, CreateUpdatePatchDeleteSemantics) {
  TestNamespace ns(kubectl_, "itest-crud");
  const std::string path = object_path<ConfigMap>(ns.name(), "cm");
  const std::string collection = collection_path<ConfigMap>(ns.name());

  auto created =
      run(io_, [&](auto) { return client_->create(collection, config_map(ns.name(), "cm")); });
  ASSERT_TRUE(created) << created.error().describe();
  const std::string rv = e2e::string_at(*created, "/metadata/resourceVersion");
  const std::string uid = e2e::string_at(*created, "/metadata/uid");

  auto duplicate =
      run(io_, [&](auto) { return client_->create(collection, config_map(ns.name(), "cm")); });
  ASSERT_FALSE(duplicate);
  EXPECT_EQ(duplicate.error().code, ErrorCode::kAlreadyExists);

  // A merge patch changes the object and its version ...
  auto patched = run(io_, [&](auto) {
    return client_->patch(path, PatchType::kMergePatch, R"({"data":{"k2":"v2"}})");
  });
  ASSERT_TRUE(patched) << patched.error().describe();
  EXPECT_EQ(e2e::string_at(*patched, "/data/k2"), "v2");
  EXPECT_NE(e2e::string_at(*patched, "/metadata/resourceVersion"), rv);

  // ... so an update carrying the old version is refused with a conflict.
  json::value stale = *created;
  stale.as_object()["data"].as_object()["k"] = "stale";
  auto conflict = run(io_, [&](auto) { return client_->update(path, stale); });
  ASSERT_FALSE(conflict);
  EXPECT_EQ(conflict.error().code, ErrorCode::kConflict);
  EXPECT_EQ(conflict.error().http_status, 409);

  // A JSON patch whose `test` fails changes nothing.
  auto failed_test = run(io_, [&](auto) {
    return client_->patch(path, PatchType::kJsonPatch,
                          R"([{"op":"test","path":"/data/k","value":"other"},)"
                          R"({"op":"replace","path":"/data/k","value":"x"}])");
  });
  ASSERT_FALSE(failed_test);
  EXPECT_EQ(failed_test.error().code, ErrorCode::kInvalid);
  EXPECT_EQ(failed_test.error().http_status, 422);
  auto unchanged = run(io_, [&](auto) { return client_->get_json(path); });
  ASSERT_TRUE(unchanged);
  EXPECT_EQ(e2e::string_at(*unchanged, "/data/k"), "v");

  // Server-side apply needs a field manager and then owns the fields it sets.
  auto applied = run(io_, [&](auto) {
    return client_->patch(path, PatchType::kApply,
                          R"({"apiVersion":"v1","kind":"ConfigMap","data":{"k3":"v3"}})",
                          {.field_manager = "nmo-itest"});
  });
  ASSERT_TRUE(applied) << applied.error().describe();
  EXPECT_EQ(e2e::string_at(*applied, "/data/k3"), "v3");

  // A delete with the wrong uid precondition is refused; the right one deletes.
  auto wrong = run(io_, [&](auto) { return client_->remove(path, {.precondition_uid = "nope"}); });
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().code, ErrorCode::kConflict);
  auto removed = run(io_, [&](auto) { return client_->remove(path, {.precondition_uid = uid}); });
  ASSERT_TRUE(removed) << removed.error().describe();
  auto gone = run(io_, [&](auto) { return client_->get<ConfigMap>(ns.name(), "cm"); });
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, ErrorCode::kNotFound);
}

TEST_F(KubeClientTest, ListFollowsContinueAcrossPages) {
  TestNamespace ns(kubectl_, "itest-page");
  for (int i = 0; i < 7; ++i) {
    auto r = run(io_, [&](auto) {
      return client_->create(collection_path<ConfigMap>(ns.name()),
                             config_map(ns.name(), "cm-" + std::to_string(i), "paged"));
    });
    ASSERT_TRUE(r) << r.error().describe();
  }
  ListOptions options{.label_selector = "suite=paged", .limit = 3};
  auto first = run(io_, [&](auto) { return client_->list<ConfigMap>(ns.name(), options); });
  ASSERT_TRUE(first) << first.error().describe();
  EXPECT_EQ(first->items.size(), 3U);
  EXPECT_FALSE(first->continue_token.empty());

  auto all = run(io_, [&](auto) { return client_->list_all<ConfigMap>(ns.name(), options); });
  ASSERT_TRUE(all) << all.error().describe();
  ASSERT_EQ(all->items.size(), 7U);
  EXPECT_FALSE(all->resource_version.empty());
  std::set<std::string> names;
  for (const auto& cm : all->items) names.insert(cm.meta.name);
  EXPECT_EQ(names.size(), 7U);
}

TEST_F(KubeClientTest, WatchDeliversChangesAfterTheListedVersion) {
  TestNamespace ns(kubectl_, "itest-watch");
  auto listed = run(io_, [&](auto) { return client_->list_all<ConfigMap>(ns.name(), {}); });
  ASSERT_TRUE(listed) << listed.error().describe();

  std::vector<std::pair<WatchEventType, std::string>> seen;
  auto outcome = run(io_, [&](auto) -> asio::awaitable<Result<void>> {
    WatchOptions options{.resource_version = listed->resource_version};
    options.idle_timeout = std::chrono::seconds(30);
    const std::string watched = ns.name();
    auto stream = co_await client_->watch<ConfigMap>(watched, options);
    if (!stream) co_return stream.error();
    // Named arguments only: GCC 12 destroys temporaries passed to a co_await-ed call inside a
    // lambda coroutine twice (see docs/development.md).
    const std::string path = object_path<ConfigMap>(ns.name(), "w");
    const std::string collection = collection_path<ConfigMap>(ns.name());
    const json::value object = config_map(ns.name(), "w");
    const WriteOptions write_options;
    auto created = co_await client_->create(collection, object, write_options);
    if (!created) co_return created.error();
    const std::string merge = R"({"data":{"x":"y"}})";
    auto patched = co_await client_->patch(path, PatchType::kMergePatch, merge, write_options);
    if (!patched) co_return patched.error();
    const DeleteOptions delete_options;
    auto removed = co_await client_->remove(path, delete_options);
    if (!removed) co_return removed.error();
    while (seen.size() < 3) {
      auto event = co_await (*stream)->next();
      if (!event) co_return event.error();
      if (!event->has_value()) co_return Error(ErrorCode::kInternal, "watch ended early");
      if ((*event)->type == WatchEventType::kBookmark) continue;
      seen.emplace_back((*event)->type, e2e::string_at((*event)->object, "/metadata/name"));
    }
    (*stream)->cancel();
    co_return Result<void>();
  });
  ASSERT_TRUE(outcome) << outcome.error().describe();
  ASSERT_EQ(seen.size(), 3U);
  EXPECT_EQ(seen[0], std::make_pair(WatchEventType::kAdded, std::string("w")));
  EXPECT_EQ(seen[1], std::make_pair(WatchEventType::kModified, std::string("w")));
  EXPECT_EQ(seen[2], std::make_pair(WatchEventType::kDeleted, std::string("w")));
}

TEST_F(KubeClientTest, WatchFromAVersionTooOldIsExpired) {
  // A young cluster may still serve version 1 from etcd's uncompacted history, so compact
  // first: afterwards version 1 is gone whether the watch is served from the cache or etcd.
  ASSERT_TRUE(e2e::compact_etcd());
  auto error = run(io_, [&](auto) -> asio::awaitable<Error> {
    const std::string ns = "default";
    const WatchOptions options{.resource_version = "1"};
    auto stream = co_await client_->watch<ConfigMap>(ns, options);
    if (!stream) co_return stream.error();
    auto event = co_await (*stream)->next();
    if (!event) co_return event.error();
    co_return Error(ErrorCode::kInternal, "the watch started");
  });
  EXPECT_TRUE(error.code == ErrorCode::kExpired || error.code == ErrorCode::kGone)
      << error.describe();
  EXPECT_EQ(error.http_status, 410) << error.describe();
}

TEST_F(KubeClientTest, EvictionOutcomesAreTyped) {
  TestNamespace ns(kubectl_, "itest-evict");
  kubectl_.apply(e2e::deployment_manifest(ns.name(), "db", 2, "db"));
  kubectl_.apply(e2e::pod_manifest(ns.name(), "lonely", "node-worker-02"));
  std::vector<json::object> pods;
  ASSERT_TRUE(e2e::wait_until("2 db pods and the bare pod running", 90s, [&] {
    pods = e2e::list_pods(kubectl_, ns.name(), "app=db");
    auto lonely = e2e::list_pods(kubectl_, ns.name(), "app=lonely");
    return pods.size() == 2 && std::all_of(pods.begin(), pods.end(), e2e::pod_running_ready) &&
           lonely.size() == 1 && e2e::pod_running_ready(lonely[0]);
  }));
  const std::string db0 = e2e::string_at(json::value(pods[0]), "/metadata/name");

  // A fence that says no: nothing is sent, its error comes back, the pod is untouched.
  int fence_asked = 0;
  EvictOptions fenced;
  fenced.fence = [&]() -> Result<void> {
    ++fence_asked;
    return Error(ErrorCode::kUnavailable, "not the leader");
  };
  auto held = run(io_, [&](auto) { return client_->evict(ns.name(), "lonely", fenced); });
  ASSERT_FALSE(held);
  EXPECT_EQ(held.error(), Error(ErrorCode::kUnavailable, "not the leader"));
  EXPECT_EQ(fence_asked, 1);
  auto untouched = kubectl_.get_json({"pod", "lonely", "-n", ns.name()});
  ASSERT_TRUE(untouched);
  EXPECT_EQ(e2e::string_at(*untouched, "/metadata/deletionTimestamp"), "");

  // No PDB: evicted (201), with a fence that says yes.
  fenced.fence = [&]() -> Result<void> {
    ++fence_asked;
    return {};
  };
  auto evicted = run(io_, [&](auto) { return client_->evict(ns.name(), "lonely", fenced); });
  EXPECT_EQ(fence_asked, 2);
  ASSERT_TRUE(evicted) << evicted.error().describe();
  EXPECT_EQ(evicted->outcome, EvictionOutcome::kEvicted);

  // Already gone: NotFound.
  auto missing = run(io_, [&](auto) { return client_->evict(ns.name(), "no-such-pod"); });
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->outcome, EvictionOutcome::kNotFound);

  // A PDB with no disruption left: 429 with the API's words, never retried by the client.
  kubectl_.apply(e2e::pdb_manifest(ns.name(), "db-pdb", 2, "db"));
  ASSERT_TRUE(e2e::wait_until("db-pdb processed", 60s, [&] {
    auto pdb = kubectl_.get_json({"pdb", "db-pdb", "-n", ns.name()});
    return pdb &&
           e2e::int_at(*pdb, "/status/observedGeneration") ==
               e2e::int_at(*pdb, "/metadata/generation") &&
           e2e::int_at(*pdb, "/status/currentHealthy") == 2;
  }));
  auto blocked = run(io_, [&](auto) { return client_->evict(ns.name(), db0); });
  ASSERT_TRUE(blocked) << blocked.error().describe();
  EXPECT_EQ(blocked->outcome, EvictionOutcome::kBlockedByPdb);
  EXPECT_EQ(blocked->status.http_status, 429);
  EXPECT_EQ(blocked->status.message,
            "Cannot evict pod as it would violate the pod's disruption budget.");
  auto cause = find_cause(blocked->status, "DisruptionBudget");
  ASSERT_TRUE(cause);
  EXPECT_EQ(cause->message,
            "The disruption budget db-pdb needs 2 healthy pods and has 2 currently");

  // Two PDBs over one pod: 500, which the eviction API never resolves by itself.
  kubectl_.apply(e2e::pdb_manifest(ns.name(), "db-pdb-2", 1, "db"));
  ASSERT_TRUE(e2e::wait_until("db-pdb-2 processed", 60s, [&] {
    auto pdb = kubectl_.get_json({"pdb", "db-pdb-2", "-n", ns.name()});
    return pdb && e2e::int_at(*pdb, "/status/observedGeneration") ==
                      e2e::int_at(*pdb, "/metadata/generation");
  }));
  auto multiple = run(io_, [&](auto) { return client_->evict(ns.name(), db0); });
  ASSERT_TRUE(multiple) << multiple.error().describe();
  EXPECT_EQ(multiple->outcome, EvictionOutcome::kMultiplePdbs);
  EXPECT_EQ(multiple->status.http_status, 500);
  EXPECT_EQ(multiple->status.message,
            "This pod has more than one PodDisruptionBudget, which the eviction subresource does "
            "not support.");
}

TEST_F(KubeClientTest, StatusSubresourcePatch) {
  // A node kwok leaves alone (fault-hook label), so the condition we write stays.
  const std::string node = e2e::unique_name("node-itest");
  kubectl_.apply(e2e::node_manifest(node, {{e2e::kNotReadyLabel, "true"}}));
  auto patched = run(io_, [&](auto) {
    return client_->patch(object_path<Node>("", node) + "/status", PatchType::kStrategicMerge,
                          R"({"status":{"conditions":[{"type":"Ready","status":"False",)"
                          R"("reason":"ITest","message":"written through /status"}]}})");
  });
  ASSERT_TRUE(patched) << patched.error().describe();
  auto read = run(io_, [&](auto) { return client_->get<Node>("", node); });
  ASSERT_TRUE(read) << read.error().describe();
  EXPECT_EQ(read->ready_status(), "False");
  kubectl_.must({"delete", "node", node});
}

TEST_F(KubeClientTest, RotatedTokenFileIsPickedUp) {
  TestNamespace ns(kubectl_, "itest-token");
  kubectl_.must({"create", "serviceaccount", "first", "-n", ns.name()});
  kubectl_.must({"create", "serviceaccount", "second", "-n", ns.name()});
  auto token_for = [&](const std::string& sa) {
    std::string t = kubectl_.must({"create", "token", sa, "-n", ns.name()});
    while (!t.empty() && (t.back() == '\n' || t.back() == '\r')) t.pop_back();
    return t;
  };
  const auto dir = std::filesystem::temp_directory_path() / e2e::unique_name("nmo-token");
  std::filesystem::create_directories(dir);
  const auto file = dir / "token";
  auto write = [&](const std::string& token) {
    std::ofstream(file, std::ios::trunc) << token << "\n";
  };
  write(token_for("first"));

  auto admin = load_kubeconfig({});
  ASSERT_TRUE(admin);
  RestConfig config = *admin;
  config.client_cert_pem.clear();
  config.client_key_pem.clear();
  config.token = file_token(file.string(), std::chrono::milliseconds(0));
  auto client = Client::create(io_.get_executor(), config);
  ASSERT_TRUE(client) << client.error().describe();

  // SelfSubjectReview answers "who am I" for whatever credentials the request carried.
  const std::string review_path = e2e::self_subject_review_path(kubectl_);
  const json::object review{{"apiVersion", e2e::self_subject_review_api_version(kubectl_)},
                            {"kind", "SelfSubjectReview"}};
  auto who_am_i = [&]() {
    auto r = run(io_, [&](auto) { return (*client)->create(review_path, review); });
    return r ? e2e::string_at(*r, "/status/userInfo/username") : r.error().describe();
  };
  EXPECT_EQ(who_am_i(), "system:serviceaccount:" + ns.name() + ":first");
  write(token_for("second"));
  EXPECT_EQ(who_am_i(), "system:serviceaccount:" + ns.name() + ":second");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace nmo::kube
