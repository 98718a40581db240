// Benchmark: decoding a realistic 5,000-pod PodList (about 5 KB of compact JSON per pod:
// labels, annotations, managedFields, an ownerReference, two containers with env and resources,
// status conditions and containerStatuses) into Pod projections, against parsing the same text
// into a Boost.JSON DOM only. Also reports what one cached Pod projection costs in memory.
//
//   decode_list<Pod>               the real path: arena parse + projection
//   boost::json::parse (default)   DOM only, default allocator (one allocation per node)
//   boost::json::parse (arena)     DOM only, monotonic_resource (what decode_list parses with)
//   decode_watch_event + decode    one ADDED line per pod, as a watch delivers them
//
// Counters: bytes_per_pod (sizeof(Pod) plus the heap its strings and vectors own, libstdc++ SSO
// aware) and heap_per_pod (glibc mallinfo2() growth while the projections are alive, so malloc
// overhead is included; 0 where a sanitizer replaces malloc).
#include <malloc.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <benchmark/benchmark.h>
#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include "base/check.h"
#include "kube/api/list.h"
#include "kube/api/pod.h"
#include "kube/api/watch.h"

namespace nmo::kube {
namespace {

constexpr int kPods = 5000;

std::string hex(std::uint64_t value, int digits) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(static_cast<std::size_t>(digits), '0');
  for (int i = digits - 1; i >= 0; --i) {
    out[static_cast<std::size_t>(i)] = kDigits[value & 0xfU];
    value >>= 4U;
  }
  return out;
}

std::string uuid(std::uint64_t seed) {
  const std::uint64_t a = seed * 0x9e3779b97f4a7c15ULL;
  const std::uint64_t b = a ^ (seed << 17U) ^ 0xdeadbeefcafef00dULL;
  return hex(a >> 32U, 8) + "-" + hex(a >> 16U, 4) + "-4" + hex(a, 3) + "-8" + hex(b >> 48U, 3) +
         "-" + hex(b, 12);
}

// The main container has env, ports and a probe; the sidecar only resources and mounts.
boost::json::value container(const std::string& name, const std::string& image, int index,
                             bool main) {
  boost::json::object out = {
      {"name", name},
      {"image", image},
      {"imagePullPolicy", "IfNotPresent"},
      {"resources",
       {{"limits", {{"cpu", "500m"}, {"memory", "512Mi"}}},
        {"requests", {{"cpu", "250m"}, {"memory", "256Mi"}}}}},
      {"terminationMessagePath", "/dev/termination-log"},
      {"terminationMessagePolicy", "File"},
      {"volumeMounts",
       {{{"mountPath", "/var/run/secrets/kubernetes.io/serviceaccount"},
         {"name", "kube-api-access-" + hex(static_cast<std::uint64_t>(index), 5)},
         {"readOnly", true}},
        {{"mountPath", "/cache"}, {"name", "cache"}}}},
  };
  if (main) {
    boost::json::array env;
    for (const char* var : {"LOG_LEVEL", "HTTP_PORT", "DB_HOST"}) {
      env.push_back({{"name", var}, {"value", std::string(var) + "-" + std::to_string(index)}});
    }
    env.push_back(
        {{"name", "POD_NAME"},
         {"valueFrom", {{"fieldRef", {{"apiVersion", "v1"}, {"fieldPath", "metadata.name"}}}}}});
    out["env"] = std::move(env);
    out["ports"] = {{{"containerPort", 8080}, {"name", "http"}, {"protocol", "TCP"}}};
    out["readinessProbe"] = {{"httpGet", {{"path", "/healthz"}, {"port", 8080}}},
                             {"periodSeconds", 10}};
  }
  return out;
}

boost::json::value container_status(const std::string& name, const std::string& image, int index) {
  return {{"name", name},
          {"image", image},
          {"imageID", image + "@sha256:" + hex(0x1234abcdULL * 7U, 16) + hex(99, 16) + hex(7, 16) +
                          hex(static_cast<std::uint64_t>(index), 16)},
          {"containerID", "containerd://" + hex(static_cast<std::uint64_t>(index) * 31U, 16) +
                              hex(5, 16) + hex(6, 16) + hex(7, 16)},
          {"ready", true},
          {"restartCount", 0},
          {"started", true},
          {"lastState", boost::json::object()},
          {"state", {{"running", {{"startedAt", "2026-11-30T09:58:30Z"}}}}}};
}

boost::json::value condition(const char* type) {
  return {{"type", type},
          {"status", "True"},
          {"lastProbeTime", nullptr},
          {"lastTransitionTime", "2026-11-30T09:58:31Z"}};
}

boost::json::value make_pod(int index) {
  const std::string app = "svc-" + std::to_string(index % 50);
  const std::string hash = hex(static_cast<std::uint64_t>(index % 50) * 2654435761U, 10);
  const std::string name = app + "-" + hash + "-" + hex(static_cast<std::uint64_t>(index), 5);
  const std::string ns = "team-" + std::to_string(index % 20);
  const std::string uid = uuid(static_cast<std::uint64_t>(index));
  const std::string node = "node-worker-" + std::to_string(index % 40);
  boost::json::value managed_spec = {
      {"f:metadata",
       {{"f:generateName", boost::json::object()},
        {"f:labels",
         {{".", boost::json::object()},
          {"f:app", boost::json::object()},
          {"f:pod-template-hash", boost::json::object()}}},
        {"f:ownerReferences",
         {{".", boost::json::object()}, {"k:{\"uid\":\"" + uid + "\"}", boost::json::object()}}}}},
      {"f:spec",
       {{"f:containers",
         {{"k:{\"name\":\"app\"}",
           {{".", boost::json::object()},
            {"f:env", boost::json::object()},
            {"f:image", boost::json::object()},
            {"f:resources", boost::json::object()}}},
          {"k:{\"name\":\"sidecar\"}", {{".", boost::json::object()}}}}},
        {"f:volumes", boost::json::object()}}}};
  boost::json::value managed_status = {
      {"f:status",
       {{"f:conditions", {{"k:{\"type\":\"Ready\"}", {{".", boost::json::object()}}}}},
        {"f:containerStatuses", boost::json::object()},
        {"f:podIP", boost::json::object()},
        {"f:startTime", boost::json::object()}}}};
  const std::string image = "registry.example.com/" + app + ":1." + std::to_string(index % 7);
  return {
      {"metadata",
       {{"name", name},
        {"generateName", app + "-" + hash + "-"},
        {"namespace", ns},
        {"uid", uid},
        {"resourceVersion", std::to_string(100000 + index)},
        {"creationTimestamp", "2026-11-30T09:58:12Z"},
        {"labels",
         {{"app", app},
          {"app.kubernetes.io/name", app},
          {"app.kubernetes.io/part-of", "shop"},
          {"pod-template-hash", hash},
          {"version", "v1"}}},
        {"annotations",
         {{"kubectl.kubernetes.io/restartedAt", "2026-11-29T08:00:00Z"},
          {"prometheus.io/port", "9090"},
          {"prometheus.io/scrape", "true"}}},
        {"ownerReferences",
         {{{"apiVersion", "apps/v1"},
           {"kind", "ReplicaSet"},
           {"name", app + "-" + hash},
           {"uid", uuid(static_cast<std::uint64_t>(index % 50) + 1000000U)},
           {"controller", true},
           {"blockOwnerDeletion", true}}}},
        {"managedFields",
         {{{"apiVersion", "v1"},
           {"fieldsType", "FieldsV1"},
           {"fieldsV1", std::move(managed_spec)},
           {"manager", "kube-controller-manager"},
           {"operation", "Update"},
           {"time", "2026-11-30T09:58:12Z"}},
          {{"apiVersion", "v1"},
           {"fieldsType", "FieldsV1"},
           {"fieldsV1", std::move(managed_status)},
           {"manager", "kubelet"},
           {"operation", "Update"},
           {"subresource", "status"},
           {"time", "2026-11-30T09:58:31Z"}}}}}},
      {"spec",
       {{"containers",
         {container("app", image, index, true),
          container("sidecar", "registry.example.com/envoy:1.30", index, false)}},
        {"dnsPolicy", "ClusterFirst"},
        {"nodeName", node},
        {"restartPolicy", "Always"},
        {"schedulerName", "default-scheduler"},
        {"securityContext", boost::json::object()},
        {"serviceAccount", "default"},
        {"serviceAccountName", "default"},
        {"terminationGracePeriodSeconds", 30},
        {"tolerations",
         {{{"effect", "NoExecute"},
           {"key", "node.kubernetes.io/not-ready"},
           {"operator", "Exists"},
           {"tolerationSeconds", 300}},
          {{"effect", "NoExecute"},
           {"key", "node.kubernetes.io/unreachable"},
           {"operator", "Exists"},
           {"tolerationSeconds", 300}}}},
        {"volumes",
         {{{"name", "cache"}, {"emptyDir", boost::json::object()}},
          {{"name", "kube-api-access-" + hex(static_cast<std::uint64_t>(index), 5)},
           {"projected",
            {{"defaultMode", 420},
             {"sources",
              {{{"serviceAccountToken", {{"expirationSeconds", 3607}, {"path", "token"}}}},
               {{"configMap",
                 {{"name", "kube-root-ca.crt"},
                  {"items", {{{"key", "ca.crt"}, {"path", "ca.crt"}}}}}}}}}}}}}}}},
      {"status",
       {{"phase", "Running"},
        {"conditions",
         {condition("PodReadyToStartContainers"), condition("Initialized"), condition("Ready"),
          condition("ContainersReady"), condition("PodScheduled")}},
        {"hostIP", "10.0." + std::to_string(index % 40) + ".10"},
        {"hostIPs", {{{"ip", "10.0." + std::to_string(index % 40) + ".10"}}}},
        {"podIP", "10.244." + std::to_string(index % 40) + "." + std::to_string(index % 250)},
        {"podIPs",
         {{{"ip", "10.244." + std::to_string(index % 40) + "." + std::to_string(index % 250)}}}},
        {"qosClass", "Burstable"},
        {"startTime", "2026-11-30T09:58:12Z"},
        {"containerStatuses",
         {container_status("app", image, index),
          container_status("sidecar", "registry.example.com/envoy:1.30", index)}}}},
  };
}

// The PodList body, built once.
const std::string& pod_list() {
  static const std::string body = [] {
    boost::json::array items;
    items.reserve(kPods);
    for (int i = 0; i < kPods; ++i) {
      items.push_back(make_pod(i));
    }
    const boost::json::value list = {{"kind", "PodList"},
                                     {"apiVersion", "v1"},
                                     {"metadata", {{"resourceVersion", "250000"}}},
                                     {"items", std::move(items)}};
    return boost::json::serialize(list);
  }();
  return body;
}

// One ADDED watch line per pod.
const std::vector<std::string>& watch_lines() {
  static const std::vector<std::string> lines = [] {
    std::vector<std::string> out;
    out.reserve(kPods);
    for (int i = 0; i < kPods; ++i) {
      boost::json::value pod = make_pod(i);
      pod.as_object()["kind"] = "Pod";
      pod.as_object()["apiVersion"] = "v1";
      out.push_back(boost::json::serialize(boost::json::value{{"type", "ADDED"}, {"object", pod}}));
    }
    return out;
  }();
  return lines;
}

// Heap bytes a std::string owns (libstdc++ keeps up to 15 characters inline).
std::size_t heap_of(const std::string& text) {
  return text.capacity() > 15 ? text.capacity() + 1 : 0;
}

std::size_t heap_of(const Labels& labels) {
  std::size_t bytes = labels.size() * sizeof(Labels::Entry);  // decode reserves exactly
  for (const auto& [key, value] : labels) {
    bytes += heap_of(key) + heap_of(value);
  }
  return bytes;
}

// sizeof(Pod) plus everything it owns on the heap.
std::size_t footprint(const Pod& pod) {
  const ObjectMeta& meta = pod.meta;
  std::size_t bytes = sizeof(Pod) + heap_of(meta.name) + heap_of(meta.namespace_) +
                      heap_of(meta.uid) + heap_of(meta.resource_version) + heap_of(meta.labels) +
                      heap_of(meta.annotations) + heap_of(pod.node_name) + heap_of(pod.phase);
  bytes += meta.owner_references.capacity() * sizeof(OwnerReference);
  for (const OwnerReference& ref : meta.owner_references) {
    bytes += heap_of(ref.api_version) + heap_of(ref.kind) + heap_of(ref.name) + heap_of(ref.uid);
  }
  bytes += meta.finalizers.capacity() * sizeof(std::string);
  for (const std::string& finalizer : meta.finalizers) {
    bytes += heap_of(finalizer);
  }
  bytes += pod.tolerations.capacity() * sizeof(Toleration);
  for (const Toleration& toleration : pod.tolerations) {
    bytes += heap_of(toleration.key) + heap_of(toleration.operator_) + heap_of(toleration.value) +
             heap_of(toleration.effect);
  }
  return bytes;
}

std::size_t heap_in_use() {
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

void BM_DecodeListPods(benchmark::State& state) {
  const std::string& body = pod_list();
  for (auto _ : state) {
    Result<ListPage<Pod>> page = decode_list<Pod>(body);
    NMO_CHECK(page.has_value() && page->items.size() == kPods, "decode_list failed");
    benchmark::DoNotOptimize(page);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(body.size()));

  // Memory of the cached projections, measured outside the timed loop.
  const std::size_t before = heap_in_use();
  Result<ListPage<Pod>> kept = decode_list<Pod>(body);
  const std::size_t after = heap_in_use();
  std::size_t estimate = 0;
  for (const Pod& pod : kept->items) {
    estimate += footprint(pod);
  }
  state.counters["json_bytes_per_pod"] = static_cast<double>(body.size()) / kPods;
  state.counters["bytes_per_pod"] = static_cast<double>(estimate) / kPods;
  state.counters["heap_per_pod"] =
      after > before ? static_cast<double>(after - before) / kPods : 0.0;
  state.counters["sizeof_pod"] = sizeof(Pod);
}
BENCHMARK(BM_DecodeListPods)->Unit(benchmark::kMillisecond);

void BM_ParseDomDefaultAllocator(benchmark::State& state) {
  const std::string& body = pod_list();
  for (auto _ : state) {
    boost::json::value dom = boost::json::parse(body);
    benchmark::DoNotOptimize(dom);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(body.size()));

  // What caching whole documents would cost, for comparison with BM_DecodeListPods.
  const std::size_t before = heap_in_use();
  boost::json::value kept = boost::json::parse(body);
  const std::size_t after = heap_in_use();
  benchmark::DoNotOptimize(kept);
  state.counters["heap_per_pod"] =
      after > before ? static_cast<double>(after - before) / kPods : 0.0;
}
BENCHMARK(BM_ParseDomDefaultAllocator)->Unit(benchmark::kMillisecond);

void BM_ParseDomArena(benchmark::State& state) {
  const std::string& body = pod_list();
  for (auto _ : state) {
    boost::json::monotonic_resource arena(3 * body.size());
    boost::json::value dom = boost::json::parse(body, &arena);
    benchmark::DoNotOptimize(dom);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(body.size()));
}
BENCHMARK(BM_ParseDomArena)->Unit(benchmark::kMillisecond);

void BM_DecodeWatchLines(benchmark::State& state) {
  const std::vector<std::string>& lines = watch_lines();
  std::size_t bytes = 0;
  for (const std::string& line : lines) {
    bytes += line.size();
  }
  for (auto _ : state) {
    for (const std::string& line : lines) {
      Result<WatchEvent> event = decode_watch_event(line);
      NMO_CHECK(event.has_value(), "decode_watch_event failed");
      Result<Pod> pod = decode_pod(event->object);
      NMO_CHECK(pod.has_value(), "decode_pod failed");
      benchmark::DoNotOptimize(pod);
    }
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(bytes));
  state.counters["events"] = benchmark::Counter(static_cast<double>(state.iterations()) * kPods,
                                                benchmark::Counter::kIsRate);
}
BENCHMARK(BM_DecodeWatchLines)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace nmo::kube
