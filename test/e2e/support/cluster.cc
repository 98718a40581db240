#include "test/e2e/support/cluster.h"

#include <algorithm>
#include <cstdlib>
#include <random>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

namespace nmo::e2e {
namespace json = boost::json;

void ClusterTest::SetUp() {
  const char* kubeconfig = std::getenv("KUBECONFIG");
  if (kubeconfig == nullptr || *kubeconfig == '\0') {
    GTEST_FAIL() << "KUBECONFIG is not set: start the cluster with `make cluster-up` and run "
                    "`eval \"$(make -s cluster-env)\"`, or use `make test`";
  }
}

ProcessResult Kubectl::run(const std::vector<std::string>& args, const std::string& input) const {
  std::vector<std::string> argv{"kubectl"};
  if (const char* kubectl = std::getenv("KUBECTL"); kubectl != nullptr && *kubectl != '\0') {
    argv[0] = kubectl;
  }
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, input);
}

std::string Kubectl::must(const std::vector<std::string>& args, const std::string& input) const {
  ProcessResult r = run(args, input);
  if (!r.ok()) {
    std::ostringstream cmd;
    for (const auto& a : args) cmd << ' ' << a;
    ADD_FAILURE() << "kubectl" << cmd.str() << " exited " << r.exit_code << ": " << r.err;
  }
  return r.out;
}

void Kubectl::apply(const std::string& manifest) const { must({"apply", "-f", "-"}, manifest); }

std::optional<json::value> Kubectl::get_json(const std::vector<std::string>& args) const {
  std::vector<std::string> full{"get"};
  full.insert(full.end(), args.begin(), args.end());
  full.insert(full.end(), {"-o", "json"});
  ProcessResult r = run(full);
  if (!r.ok()) {
    if (r.err.find("NotFound") == std::string::npos) {
      ADD_FAILURE() << "kubectl get failed (" << r.exit_code << "): " << r.err;
    }
    return std::nullopt;
  }
  boost::system::error_code ec;
  json::value v = json::parse(r.out, ec);
  if (ec) {
    ADD_FAILURE() << "kubectl printed invalid JSON: " << ec.message();
    return std::nullopt;
  }
  return v;
}

int server_minor(const Kubectl& kubectl) {
  static const int minor = [&] {
    const ProcessResult r = kubectl.run({"get", "--raw", "/version"});
    boost::system::error_code ec;
    const json::value version = json::parse(r.out, ec);
    const json::string* text = nullptr;
    if (r.ok() && !ec && version.is_object()) {
      if (const json::value* field = version.as_object().if_contains("minor")) {
        text = field->if_string();
      }
    }
    // Distributions decorate the minor ("27+"); std::atoi reads the digits before it.
    const int parsed = text == nullptr ? 0 : std::atoi(text->c_str());
    if (parsed == 0) ADD_FAILURE() << "cannot read the server's version: " << r.out << r.err;
    return parsed;
  }();
  return minor;
}

std::string crd_kustomization(const Kubectl& kubectl) {
  return server_minor(kubectl) < 31 ? "deploy/before-1.31/crd" : "deploy/crd";
}

std::string self_subject_review_api_version(const Kubectl& kubectl) {
  return server_minor(kubectl) < 28 ? "authentication.k8s.io/v1beta1" : "authentication.k8s.io/v1";
}

std::string self_subject_review_path(const Kubectl& kubectl) {
  return "/apis/" + self_subject_review_api_version(kubectl) + "/selfsubjectreviews";
}

bool wait_until(const std::string& what, std::chrono::milliseconds timeout,
                const std::function<bool()>& condition,
                const std::function<std::string()>& describe) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() >= deadline) break;
    // Polling interval of a condition wait, not a synchronisation sleep.
    std::this_thread::sleep_for(200ms);
  }
  ADD_FAILURE() << "timed out after " << timeout.count() << " ms waiting for " << what
                << (describe ? "; last seen: " + describe() : std::string());
  return false;
}

std::string unique_name(const std::string& prefix) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  std::ostringstream s;
  s << prefix << '-' << std::hex << (rng() & 0xffffffU);
  return s.str();
}

TestNamespace::TestNamespace(const Kubectl& kubectl, const std::string& prefix)
    : kubectl_(kubectl), name_(unique_name(prefix)) {
  kubectl_.must({"create", "namespace", name_});
  // Pods created before the namespace's default ServiceAccount exists are refused.
  wait_until("ServiceAccount default in namespace " + name_, 60s, [&] {
    return kubectl_.run({"get", "serviceaccount", "default", "-n", name_}).ok();
  });
}

TestNamespace::~TestNamespace() {
  (void)kubectl_.run({"delete", "namespace", name_, "--wait=false", "--ignore-not-found"});
}

NodeGuard::NodeGuard(const Kubectl& kubectl, std::string node)
    : kubectl_(kubectl), node_(std::move(node)) {}

NodeGuard::~NodeGuard() {
  (void)kubectl_.run({"uncordon", node_});
  (void)kubectl_.run({"label", "node", node_, std::string(kNotReadyLabel) + "-"});
}

namespace {

json::object labels(const std::string& app_label) { return {{"app", app_label}}; }

json::object pod_template(const std::string& app_label) {
  return {
      {"metadata", {{"labels", labels(app_label)}}},
      {"spec",
       {{"terminationGracePeriodSeconds", 1},
        {"containers", json::array{{{"name", "app"}, {"image", "registry.invalid/app:1"}}}}}},
  };
}

}  // namespace

std::string deployment_manifest(const std::string& ns, const std::string& name, int replicas,
                                const std::string& app_label) {
  json::object d{
      {"apiVersion", "apps/v1"},
      {"kind", "Deployment"},
      {"metadata", {{"name", name}, {"namespace", ns}}},
      {"spec",
       {{"replicas", replicas},
        {"selector", {{"matchLabels", labels(app_label)}}},
        {"template", pod_template(app_label)}}},
  };
  return json::serialize(d);
}

std::string daemonset_manifest(const std::string& ns, const std::string& name,
                               const std::string& app_label) {
  json::object d{
      {"apiVersion", "apps/v1"},
      {"kind", "DaemonSet"},
      {"metadata", {{"name", name}, {"namespace", ns}}},
      {"spec",
       {{"selector", {{"matchLabels", labels(app_label)}}}, {"template", pod_template(app_label)}}},
  };
  return json::serialize(d);
}

std::string pdb_manifest(const std::string& ns, const std::string& name, int min_available,
                         const std::string& app_label) {
  json::object p{
      {"apiVersion", "policy/v1"},
      {"kind", "PodDisruptionBudget"},
      {"metadata", {{"name", name}, {"namespace", ns}}},
      {"spec",
       {{"minAvailable", min_available}, {"selector", {{"matchLabels", labels(app_label)}}}}},
  };
  return json::serialize(p);
}

std::string pod_manifest(const std::string& ns, const std::string& name, const std::string& node,
                         const std::vector<std::pair<std::string, std::string>>& annotations,
                         int termination_grace_period_seconds) {
  json::object annotation_map;
  for (const auto& [k, v] : annotations) annotation_map[k] = v;
  json::object p{
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", name},
        {"namespace", ns},
        {"labels", labels(name)},
        {"annotations", annotation_map}}},
      {"spec",
       {{"nodeName", node},
        {"terminationGracePeriodSeconds", termination_grace_period_seconds},
        {"containers", json::array{{{"name", "c"}, {"image", "registry.invalid/c:1"}}}}}},
  };
  return json::serialize(p);
}

std::string node_manifest(const std::string& name,
                          const std::vector<std::pair<std::string, std::string>>& node_labels) {
  json::object label_map{{"kubernetes.io/hostname", name}, {"kubernetes.io/os", "linux"}};
  for (const auto& [k, v] : node_labels) label_map[k] = v;
  json::object n{
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata", {{"name", name}, {"labels", label_map}}},
  };
  return json::serialize(n);
}

std::vector<json::object> list_pods(const Kubectl& kubectl, const std::string& ns,
                                    const std::string& selector) {
  std::vector<json::object> pods;
  auto list = kubectl.get_json({"pods", "-n", ns, "-l", selector});
  if (!list) return pods;
  if (const auto* items = list->as_object().if_contains("items"); items && items->is_array()) {
    for (const auto& item : items->as_array()) pods.push_back(item.as_object());
  }
  return pods;
}

bool wait_running_pods(const Kubectl& kubectl, const std::string& ns, const std::string& selector,
                       std::size_t count) {
  std::vector<json::object> pods;
  return wait_until(
      std::to_string(count) + " running pods " + selector + " in " + ns, 90s,
      [&] {
        pods = list_pods(kubectl, ns, selector);
        return pods.size() == count && std::all_of(pods.begin(), pods.end(), pod_running_ready);
      },
      [&] { return std::to_string(pods.size()) + " pods"; });
}

std::string condition_field(const json::value& object, const std::string& type,
                            const std::string& field) {
  boost::system::error_code ec;
  const json::value* conditions = object.find_pointer("/status/conditions", ec);
  if (conditions == nullptr || !conditions->is_array()) return "";
  for (const auto& c : conditions->as_array()) {
    if (string_at(c, "/type") == type) return string_at(c, "/" + field);
  }
  return "";
}

bool pod_running_ready(const json::object& pod) {
  const json::value v = pod;
  return string_at(v, "/status/phase") == "Running" &&
         string_at(v, "/metadata/deletionTimestamp").empty() &&
         condition_field(v, "Ready", "status") == "True";
}

std::string node_ready_status(const json::object& node) {
  return condition_field(json::value(node), "Ready", "status");
}

std::string string_at(const json::value& v, const std::string& pointer) {
  boost::system::error_code ec;
  const json::value* found = v.find_pointer(pointer, ec);
  if (found == nullptr || !found->is_string()) return "";
  return std::string(found->as_string());
}

std::optional<std::int64_t> int_at(const json::value& v, const std::string& pointer) {
  boost::system::error_code ec;
  const json::value* found = v.find_pointer(pointer, ec);
  if (found == nullptr || !found->is_number()) return std::nullopt;
  return found->to_number<std::int64_t>();
}

namespace {

// Standard base64 with padding, as etcd's JSON gateway expects for keys and values.
std::string base64(const std::string& in) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const auto n = (static_cast<unsigned>(static_cast<unsigned char>(in[i])) << 16U) |
                   (static_cast<unsigned>(static_cast<unsigned char>(in[i + 1])) << 8U) |
                   static_cast<unsigned>(static_cast<unsigned char>(in[i + 2]));
    for (const unsigned shift : {18U, 12U, 6U, 0U}) out.push_back(kAlphabet[(n >> shift) & 63U]);
  }
  if (i < in.size()) {
    unsigned n = static_cast<unsigned>(static_cast<unsigned char>(in[i])) << 16U;
    if (i + 1 < in.size()) n |= static_cast<unsigned>(static_cast<unsigned char>(in[i + 1])) << 8U;
    out.push_back(kAlphabet[(n >> 18U) & 63U]);
    out.push_back(kAlphabet[(n >> 12U) & 63U]);
    out.push_back(i + 1 < in.size() ? kAlphabet[(n >> 6U) & 63U] : '=');
    out.push_back('=');
  }
  return out;
}

}  // namespace

std::optional<std::int64_t> put_etcd_key(const std::string& key, const std::string& value) {
  const char* url = std::getenv("NMO_ETCD_URL");
  if (url == nullptr || *url == '\0') {
    ADD_FAILURE() << "NMO_ETCD_URL is not set: run `eval \"$(make -s cluster-env)\"` or make test";
    return std::nullopt;
  }
  json::object request;
  request["key"] = base64(key);
  request["value"] = base64(value);
  ProcessResult put = run_process({"curl", "-sf", "-X", "POST", std::string(url) + "/v3/kv/put",
                                   "-d", json::serialize(request)});
  if (!put.ok()) {
    ADD_FAILURE() << "etcd put failed (" << put.exit_code << "): " << put.err;
    return std::nullopt;
  }
  boost::system::error_code ec;
  const json::value reply = json::parse(put.out, ec);
  // The gateway prints 64-bit integers as strings.
  const std::string revision = ec ? std::string() : string_at(reply, "/header/revision");
  if (revision.empty() || revision.find_first_not_of("0123456789") != std::string::npos) {
    ADD_FAILURE() << "etcd put reply has no revision: " << put.out;
    return std::nullopt;
  }
  return std::stoll(revision);
}

bool compact_etcd() {
  const char* url = std::getenv("NMO_ETCD_URL");
  if (url == nullptr || *url == '\0') {
    ADD_FAILURE() << "NMO_ETCD_URL is not set: run `eval \"$(make -s cluster-env)\"` or make test";
    return false;
  }
  const std::string base(url);
  // etcd's JSON gateway: a range over the empty key answers with the current revision.
  ProcessResult range =
      run_process({"curl", "-sf", "-X", "POST", base + "/v3/kv/range", "-d", R"({"key":"AA=="})"});
  if (!range.ok()) {
    ADD_FAILURE() << "etcd range request failed (" << range.exit_code << "): " << range.err;
    return false;
  }
  boost::system::error_code ec;
  json::value reply = json::parse(range.out, ec);
  // The gateway prints 64-bit integers as strings.
  const std::string revision = string_at(reply, "/header/revision");
  if (ec || revision.empty()) {
    ADD_FAILURE() << "etcd range reply has no revision: " << range.out;
    return false;
  }
  ProcessResult compact = run_process({"curl", "-s", "-X", "POST", base + "/v3/kv/compaction", "-d",
                                       R"({"revision":")" + revision + R"(","physical":true})"});
  // etcd refuses a revision at or below one it has already compacted, which serves as well.
  const bool compacted =
      compact.ok() && (compact.out.find("\"code\"") == std::string::npos ||
                       compact.out.find("has been compacted") != std::string::npos);
  if (!compacted) {
    ADD_FAILURE() << "etcd compaction failed (" << compact.exit_code << "): " << compact.out
                  << compact.err;
    return false;
  }
  return true;
}

void make_not_ready(const Kubectl& kubectl, const std::string& node) {
  kubectl.must({"label", "node", node, std::string(kNotReadyLabel) + "=true"});
  kubectl.must({"patch", "node", node, "--subresource=status", "-p",
                R"({"status":{"conditions":[{"type":"Ready","status":"False",)"
                R"("reason":"TestNotReady","message":"set by a test"}]}})"});
}

bool make_not_ready_and_wait(const Kubectl& kubectl, const std::string& node,
                             std::chrono::milliseconds timeout) {
  make_not_ready(kubectl, node);
  return wait_until("node " + node + " NotReady", timeout, [&] {
    auto n = kubectl.get_json({"node", node});
    return n && node_ready_status(n->as_object()) == "False";
  });
}

}  // namespace nmo::e2e
