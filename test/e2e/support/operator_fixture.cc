#include "test/e2e/support/operator_fixture.h"

#include <algorithm>
#include <ctime>
#include <iostream>
#include <sstream>
#include <utility>

#include <gtest/gtest.h>

namespace nmo::e2e {
namespace json = boost::json;

namespace {

std::vector<std::string> names_of_node_maintenances(const Kubectl& kubectl) {
  std::vector<std::string> names;
  std::istringstream out(kubectl.must({"get", "nodemaintenances", "-o", "name"}));
  for (std::string line; std::getline(out, line);) {
    if (!line.empty()) names.push_back(line);
  }
  return names;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out.empty() ? "none" : out;
}

std::string current_test_name() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  if (info == nullptr) return "e2e";
  std::string name = std::string(info->test_suite_name()) + "." + info->name();
  std::replace(name.begin(), name.end(), '/', '_');
  return name;
}

int failures_so_far() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return info == nullptr ? 0 : info->result()->total_part_count();
}

}  // namespace

void install_operator_prerequisites(const Kubectl& kubectl) {
  static bool installed = false;
  if (installed) return;
  // A test run just before may have restarted the API server (hack/cluster-restart.sh).
  if (!wait_until("the API server to be ready", 60s, [&] {
        return kubectl.run({"get", "--raw", "/readyz"}).ok();
      })) {
    return;
  }
  const auto crd = source_dir() / crd_kustomization(kubectl);
  kubectl.must({"apply", "-k", crd.string()});
  for (const char* ns : {kOperatorNamespace, kLeaseNamespace}) {
    kubectl.apply(json::serialize(
        json::object{{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}}));
  }
  const ProcessResult established =
      kubectl.run({"wait", "--for=condition=Established", "--timeout=60s",
                   "crd/nodemaintenances.nodemaintenance.medik8s.io"});
  if (!established.ok()) {
    ADD_FAILURE() << "the NodeMaintenance CRD is not Established: " << established.err;
    return;
  }
  installed = true;
}

bool delete_node_maintenances(const Kubectl& kubectl, const std::vector<std::string>& names,
                              std::chrono::seconds timeout) {
  // `kubectl get -o name` prints kind.group/name.
  const auto wanted = [&](const std::string& qualified) {
    if (names.empty()) return true;
    const std::string name = qualified.substr(qualified.find('/') + 1);
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  const auto present = [&] {
    std::vector<std::string> out;
    for (auto& n : names_of_node_maintenances(kubectl)) {
      if (wanted(n)) out.push_back(std::move(n));
    }
    return out;
  };
  std::vector<std::string> left = present();
  if (left.empty()) return true;
  std::vector<std::string> args{"delete", "--wait=false", "--ignore-not-found"};
  args.insert(args.end(), left.begin(), left.end());
  (void)kubectl.must(args);
  const bool gone = wait_until(
      "NodeMaintenances to be gone (finalizers processed by the operator)", timeout,
      [&] {
        left = present();
        return left.empty();
      },
      [&] { return join(left); });
  if (!gone) {
    for (const auto& name : left) {
      (void)kubectl.run(
          {"patch", name, "--type=merge", "-p", R"({"metadata":{"finalizers":null})"});
    }
  }
  return gone;
}

std::vector<Event> events_matching(const Kubectl& kubectl, const std::string& field_selector) {
  std::vector<Event> events;
  auto list = kubectl.get_json({"events", "-n", "default", "--field-selector", field_selector});
  if (!list) return events;
  for (const auto& item : list->at("items").as_array()) {
    events.push_back(Event{.name = string_at(item, "/metadata/name"),
                           .type = string_at(item, "/type"),
                           .reason = string_at(item, "/reason"),
                           .message = string_at(item, "/message"),
                           .count = int_at(item, "/count").value_or(1),
                           .first_timestamp = string_at(item, "/firstTimestamp")});
  }
  return events;
}

std::vector<json::object> leases_in(const Kubectl& kubectl, const std::string& ns) {
  std::vector<json::object> leases;
  auto list = kubectl.get_json({"leases", "-n", ns});
  if (!list) return leases;
  for (const auto& item : list->at("items").as_array()) leases.push_back(item.as_object());
  return leases;
}

void OperatorFixture::SetUp() {
  ClusterTest::SetUp();
  if (HasFatalFailure()) return;
  install_operator_prerequisites(kubectl_);
  if (HasFailure()) GTEST_FAIL() << "the operator's prerequisites could not be installed";
  if (!names_of_node_maintenances(kubectl_).empty()) {
    // Left by an earlier run that crashed: an operator must process their finalizers.
    OperatorProcess cleaner(current_test_name() + ".setup-cleanup", {});
    (void)delete_node_maintenances(kubectl_, {}, 60s);
    (void)cleaner.stop();
  }
}

void OperatorFixture::TearDown() {
  if (HasFailure()) print_operator_logs("when the test failed");
  const int failures_before_cleanup = failures_so_far();

  // Finalizers need a running operator; the test may have killed its own.
  const bool any_running = std::any_of(operators_.begin(), operators_.end(),
                                       [](const auto& op) { return op->running(); });
  std::vector<std::string> names;
  for (const auto& [name, node] : created_) names.push_back(name);
  if (!any_running && !names.empty()) (void)start_operator({});
  if (!names.empty()) (void)delete_node_maintenances(kubectl_, names, 60s);
  for (auto it = cleanups_.rbegin(); it != cleanups_.rend(); ++it) (*it)();

  // The test's NodeMaintenances are gone, so none of their Leases may be left (docs/design.md
  // §2.6).
  std::vector<std::string> leftover;
  if (!wait_until(
          "no node lease or budget slot of the test's NodeMaintenances once they are gone", 15s,
          [&] {
            leftover = leftover_leases();
            return leftover.empty();
          },
          [&] { return join(leftover); })) {
    for (const auto& lease : leftover) {
      const auto slash = lease.find('/');
      (void)kubectl_.run({"delete", "lease", "-n", lease.substr(0, slash), lease.substr(slash + 1),
                          "--ignore-not-found"});
    }
  }

  for (auto& op : operators_) {
    if (!op->running()) continue;
    EXPECT_EQ(op->stop(), 0) << "the operator did not exit cleanly on SIGTERM; log: "
                             << op->log_path();
  }

  for (const auto& node : nodes_to_restore_) {
    (void)kubectl_.run({"uncordon", node});
    (void)kubectl_.run({"taint", "node", node, std::string(kDrainTaintKey) + "-"});
    (void)kubectl_.run({"label", "node", node, std::string(kExcludeFromRemediationLabel) + "-",
                        std::string(kNotReadyLabel) + "-"});
    (void)kubectl_.run({"annotate", "node", node, std::string(kPriorStateAnnotation) + "-"});
  }
  for (const auto& node : nodes_to_restore_) {
    wait_until("node " + node + " Ready again", 90s, [&] {
      auto n = kubectl_.get_json({"node", node});
      return n && node_ready_status(n->as_object()) == "True";
    });
  }
  if (failures_so_far() != failures_before_cleanup) print_operator_logs("after the cleanup");
}

OperatorProcess& OperatorFixture::start_operator(const std::vector<std::string>& flags) {
  std::string name = current_test_name();
  if (!operators_.empty()) name += "." + std::to_string(operators_.size() + 1);
  operators_.push_back(std::make_unique<OperatorProcess>(name, flags));
  return *operators_.back();
}

void OperatorFixture::restore_node_at_end(const std::string& node) {
  if (std::find(nodes_to_restore_.begin(), nodes_to_restore_.end(), node) ==
      nodes_to_restore_.end()) {
    nodes_to_restore_.push_back(node);
  }
}

void OperatorFixture::defer(std::function<void()> cleanup) {
  cleanups_.push_back(std::move(cleanup));
}

bool OperatorFixture::create_node_maintenance(const std::string& name, const std::string& node,
                                              const std::string& reason) {
  json::object spec;
  if (!reason.empty()) spec["reason"] = reason;
  return !create_with_spec(name, node, std::move(spec)).empty();
}

std::string OperatorFixture::create_with_spec(const std::string& name, const std::string& node,
                                              json::object spec) {
  spec["nodeName"] = node;
  const json::object nm{{"apiVersion", "nodemaintenance.medik8s.io/v1beta1"},
                        {"kind", "NodeMaintenance"},
                        {"metadata", {{"name", name}}},
                        {"spec", std::move(spec)}};
  created_.emplace_back(name, node);
  const ProcessResult r = kubectl_.run({"create", "-f", "-"}, json::serialize(nm));
  EXPECT_TRUE(r.ok()) << "creating NodeMaintenance " << name << ": " << r.err;
  if (!r.ok()) return "";
  auto created = get_node_maintenance(name);
  return created ? uid_of(*created) : "";
}

std::optional<json::value> OperatorFixture::get_node_maintenance(const std::string& name) {
  return kubectl_.get_json({"nodemaintenance", name});
}

std::optional<json::value> OperatorFixture::wait_phase(const std::string& name,
                                                       const std::vector<std::string>& phases,
                                                       std::chrono::milliseconds timeout) {
  std::optional<json::value> nm;
  std::string wanted;
  for (const auto& p : phases) wanted += (wanted.empty() ? "" : "|") + p;
  const bool reached = wait_until(
      "NodeMaintenance " + name + " in phase " + wanted, timeout,
      [&] {
        nm = get_node_maintenance(name);
        return nm && std::find(phases.begin(), phases.end(), phase_of(*nm)) != phases.end();
      },
      [&] { return nm ? json::serialize(nm->as_object()["status"]) : std::string("not found"); });
  if (!reached) return std::nullopt;
  return nm;
}

bool OperatorFixture::wait_gone(const std::string& name, std::chrono::milliseconds timeout) {
  std::optional<json::value> nm;
  return wait_until(
      "NodeMaintenance " + name + " to be gone", timeout,
      [&] {
        nm = get_node_maintenance(name);
        return !nm;
      },
      [&] { return nm ? json::serialize(*nm) : std::string(); });
}

std::vector<Event> OperatorFixture::events_of(const std::string& uid) {
  return events_matching(kubectl_, "involvedObject.uid=" + uid);
}

std::optional<Event> OperatorFixture::wait_event(const std::string& uid, const std::string& reason,
                                                 const std::optional<std::string>& message,
                                                 std::chrono::milliseconds timeout) {
  std::vector<Event> events;
  std::optional<Event> found;
  wait_until(
      "Event " + reason + (message ? " \"" + *message + "\"" : std::string()) + " of " + uid,
      timeout,
      [&] {
        events = events_of(uid);
        for (const auto& e : events) {
          if (e.reason == reason && (!message || e.message == *message)) {
            found = e;
            return true;
          }
        }
        return false;
      },
      [&] {
        std::string seen;
        for (const auto& e : events) seen += "\n  " + e.type + " " + e.reason + ": " + e.message;
        return seen.empty() ? std::string("no events") : seen;
      });
  return found;
}

std::optional<json::value> OperatorFixture::get_node(const std::string& node) {
  auto n = kubectl_.get_json({"node", node});
  if (!n) ADD_FAILURE() << "node " << node << " not found";
  return n;
}

std::string OperatorFixture::create(const std::string& name, const std::string& node,
                                    const std::string& reason) {
  if (!create_node_maintenance(name, node, reason)) return "";
  auto nm = get_node_maintenance(name);
  return nm ? uid_of(*nm) : "";
}

std::vector<std::string> OperatorFixture::fresh_nodes(const std::string& prefix,
                                                      std::size_t count) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < count; ++i) names.push_back(unique_name("edge-" + prefix));
  EXPECT_TRUE(create_nodes(names));
  return names;
}

bool OperatorFixture::create_nodes(const std::vector<std::string>& names) {
  json::array items;
  for (const std::string& name : names) items.push_back(json::parse(node_manifest(name)));
  defer([this, names] {
    std::vector<std::string> args{"delete", "node", "--ignore-not-found", "--timeout=60s"};
    args.insert(args.end(), names.begin(), names.end());
    (void)kubectl_.run(args);
  });
  kubectl_.apply(json::serialize(
      json::object{{"apiVersion", "v1"}, {"kind", "List"}, {"items", std::move(items)}}));
  bool ready = true;
  for (const auto& n : names) ready = wait_node_ready(n) && ready;
  return ready;
}

bool OperatorFixture::wait_node_ready(const std::string& node) {
  return wait_until("node " + node + " Ready", 60s, [&] {
    auto n = kubectl_.get_json({"node", node});
    return n && node_ready_status(n->as_object()) == "True";
  });
}

bool OperatorFixture::wait_pdb(const std::string& ns, const std::string& name, std::int64_t healthy,
                               std::int64_t allowed) {
  std::optional<json::value> pdb;
  return wait_until(
      "PDB " + name + " processed with " + std::to_string(allowed) + " disruptions allowed", 60s,
      [&] {
        pdb = kubectl_.get_json({"pdb", name, "-n", ns});
        return pdb &&
               int_at(*pdb, "/status/observedGeneration") == int_at(*pdb, "/metadata/generation") &&
               int_at(*pdb, "/status/currentHealthy") == healthy &&
               int_at(*pdb, "/status/disruptionsAllowed") == allowed;
      },
      [&] { return pdb ? json::serialize(pdb->at("status")) : std::string("no PDB"); });
}

bool OperatorFixture::wait_node_restored(const std::string& node, bool stays_cordoned,
                                         std::chrono::milliseconds timeout) {
  std::optional<json::value> n;
  return wait_until(
      "node " + node + " restored after the maintenance", timeout,
      [&] {
        n = kubectl_.get_json({"node", node});
        if (!n) return false;
        return !has_taint_key(*n, kDrainTaintKey) && unschedulable(*n) == stays_cordoned &&
               label(*n, kExcludeFromRemediationLabel).empty() &&
               annotation(*n, kPriorStateAnnotation).empty();
      },
      [&] { return n ? describe_node(*n) : std::string("no node"); });
}

bool OperatorFixture::node_lease_held(const std::string& node) {
  auto l = lease(kLeaseNamespace, "node-" + node);
  return l && string_at(*l, "/spec/holderIdentity") == kNodeLeaseHolder;
}

std::vector<std::string> OperatorFixture::leftover_leases() {
  std::vector<std::string> out;
  for (const auto& lease : leases_in(kubectl_, kLeaseNamespace)) {
    const json::value v = lease;
    const std::string name = string_at(v, "/metadata/name");
    const bool ours = std::any_of(created_.begin(), created_.end(),
                                  [&](const auto& c) { return name == "node-" + c.second; });
    if (ours && string_at(v, "/spec/holderIdentity") == kNodeLeaseHolder) {
      out.push_back(std::string(kLeaseNamespace) + "/" + name);
    }
  }
  for (const auto& lease : leases_in(kubectl_, kOperatorNamespace)) {
    const json::value v = lease;
    const std::string holder = string_at(v, "/spec/holderIdentity");
    const bool ours = std::any_of(created_.begin(), created_.end(), [&](const auto& c) {
      return holder == c.first + " (node " + c.second + ")";
    });
    if (ours) out.push_back(std::string(kOperatorNamespace) + "/" + string_at(v, "/metadata/name"));
  }
  return out;
}

void OperatorFixture::print_operator_logs(const std::string& when) const {
  for (const auto& op : operators_) {
    std::cerr << "---- operator log " << op->log_path() << " (last 60 lines " << when << ")\n"
              << op->log_tail(60) << "---- end of " << op->log_path().filename() << '\n';
  }
}

std::vector<std::string> taints_of(const json::value& node) {
  std::vector<std::string> taints;
  boost::system::error_code ec;
  const json::value* list = node.find_pointer("/spec/taints", ec);
  if (list == nullptr || !list->is_array()) return taints;
  for (const auto& t : list->as_array()) {
    const std::string value = string_at(t, "/value");
    taints.push_back(string_at(t, "/key") + (value.empty() ? "" : "=" + value) + ":" +
                     string_at(t, "/effect"));
  }
  return taints;
}

namespace {

// How many of the node's taints have `key`, with or without a value, whatever their effect.
std::size_t taints_with_key(const json::value& node, const std::string& key) {
  const auto taints = taints_of(node);
  return static_cast<std::size_t>(std::count_if(taints.begin(), taints.end(), [&](const auto& t) {
    return t.starts_with(key + "=") || t.starts_with(key + ":");
  }));
}

}  // namespace

bool has_taint_key(const json::value& node, const std::string& key) {
  return taints_with_key(node, key) > 0;
}

std::size_t drain_taint_count(const json::value& node) {
  return taints_with_key(node, std::string(kDrainTaintKey));
}

std::string phase_of(const json::value& nm) {
  const std::optional<op::Phase> phase = maintenance_of(nm).status.phase;
  return phase ? std::string(op::to_string(*phase)) : std::string();
}

op::NodeMaintenance maintenance_of(const json::value& nm) {
  Result<op::NodeMaintenance> decoded = op::decode_node_maintenance(nm);
  if (decoded) return *std::move(decoded);
  ADD_FAILURE() << "the NodeMaintenance does not decode: " << decoded.error().describe() << "\n"
                << json::serialize(nm);
  return op::NodeMaintenance{};
}

std::string name_of(const json::value& object) { return string_at(object, "/metadata/name"); }

std::string uid_of(const json::value& object) { return string_at(object, "/metadata/uid"); }

bool is_terminating(const json::value& pod) {
  return !string_at(pod, "/metadata/deletionTimestamp").empty();
}

std::string etcd_mirror_pod_manifest(const std::string& node) {
  json::value p =
      json::parse(pod_manifest("kube-system", "etcd-" + node, node, {{kMirrorAnnotation, "etcd"}}));
  p.at("metadata").as_object()["labels"] =
      json::object{{"component", "etcd"}, {"tier", "control-plane"}};
  return json::serialize(p);
}

std::string foreign_node_lease_manifest(const std::string& node, const std::string& holder) {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char renew[40];
  std::strftime(renew, sizeof(renew), "%Y-%m-%dT%H:%M:%S.000000Z", &utc);
  return json::serialize(json::object{
      {"apiVersion", "coordination.k8s.io/v1"},
      {"kind", "Lease"},
      {"metadata", {{"name", "node-" + node}, {"namespace", kLeaseNamespace}}},
      {"spec",
       {{"holderIdentity", holder},
        {"leaseDurationSeconds", 3600},
        {"acquireTime", renew},
        {"renewTime", renew}}},
  });
}

bool unschedulable(const json::value& node) {
  boost::system::error_code ec;
  const json::value* u = node.find_pointer("/spec/unschedulable", ec);
  return u != nullptr && u->is_bool() && u->as_bool();
}

std::string label(const json::value& object, const std::string& key) {
  boost::system::error_code ec;
  const json::value* labels = object.find_pointer("/metadata/labels", ec);
  if (labels == nullptr || !labels->is_object() || !labels->as_object().contains(key)) return "";
  const auto& v = labels->as_object().at(key);
  return v.is_string() ? std::string(v.as_string()) : "";
}

std::string annotation(const json::value& object, const std::string& key) {
  boost::system::error_code ec;
  const json::value* annotations = object.find_pointer("/metadata/annotations", ec);
  if (annotations == nullptr || !annotations->is_object() ||
      !annotations->as_object().contains(key)) {
    return "";
  }
  const auto& v = annotations->as_object().at(key);
  return v.is_string() ? std::string(v.as_string()) : "";
}

std::string describe_node(const json::value& node) {
  std::string out =
      "unschedulable=" + std::string(unschedulable(node) ? "true" : "false") + " taints=[";
  for (const auto& t : taints_of(node)) out += t + " ";
  out += "] exclude-label=" + label(node, kExcludeFromRemediationLabel) +
         " prior-state=" + annotation(node, kPriorStateAnnotation);
  return out;
}

bool has_taint(const json::value& node, const std::string& taint) {
  const auto taints = taints_of(node);
  return std::find(taints.begin(), taints.end(), taint) != taints.end();
}

bool drain_tainted(const json::value& node) {
  return has_taint(node, std::string(kDrainTaintKey) + "=draining:NoSchedule");
}

std::optional<json::value> OperatorFixture::lease(const std::string& ns, const std::string& name) {
  return kubectl_.get_json({"lease", "-n", ns, name});
}

std::set<std::string> OperatorFixture::slot_holders() {
  std::set<std::string> out;
  for (const auto& l : leases_in(kubectl_, kOperatorNamespace)) {
    const json::value v = l;
    if (name_of(v) != kLeaderLease && name_of(v) != kBudgetLease) {
      out.insert(string_at(v, "/spec/holderIdentity"));
    }
  }
  return out;
}

void OperatorFixture::remove(const std::string& name) {
  kubectl_.must({"delete", "nodemaintenance", name, "--wait=false"});
}

bool OperatorFixture::wait_running(const std::string& ns, const std::string& selector,
                                   std::size_t count) {
  return wait_running_pods(kubectl_, ns, selector, count);
}

std::int64_t OperatorFixture::event_count(const std::string& uid, const std::string& reason) {
  std::int64_t n = 0;
  for (const auto& e : events_of(uid)) {
    if (e.reason == reason) n += e.count;
  }
  return n;
}

}  // namespace nmo::e2e
