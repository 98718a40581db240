// Fuzz target: one list page (GET .../<plural>?limit=500) through decode_list<T>, the way a
// reflector pages through its initial list. The first byte picks the kind (Pod, Node, Lease,
// PodDisruptionBudget, Namespace, DaemonSet, by its value modulo 6); the rest is the body. Must
// never crash, throw or leak; an error is kInvalid and explains itself, and a decoded page's
// pure helpers (selectors, readiness) must run on whatever the items hold.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/check.h"
#include "kube/api/daemon_set.h"
#include "kube/api/lease.h"
#include "kube/api/list.h"
#include "kube/api/namespace.h"
#include "kube/api/node.h"
#include "kube/api/pod.h"
#include "kube/api/pod_disruption_budget.h"

namespace {

// Decodes `body` as a page of T and hands each decoded item to `visit`.
template <typename T, typename Visit>
void decode_page(std::string_view body, Visit&& visit) {
  const nmo::Result<nmo::kube::ListPage<T>> page = nmo::kube::decode_list<T>(body);
  if (!page.has_value()) {
    NMO_CHECK(page.error().code == nmo::ErrorCode::kInvalid,
              "a list error must be kInvalid: " + page.error().describe());
    NMO_CHECK(!page.error().message.empty(), "a list error explains itself");
    return;
  }
  for (const T& item : page->items) {
    visit(item);
  }
}

}  // namespace

// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace nmo::kube;  // NOLINT(google-build-using-namespace): six kinds below
  if (size == 0) {
    return 0;
  }
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 6) {
    case 0:
      decode_page<Pod>(body, [](const Pod& pod) { (void)controller_of(pod.meta); });
      break;
    case 1:
      decode_page<Node>(body, [](const Node& node) { (void)node.is_ready(); });
      break;
    case 2:
      decode_page<Lease>(body, [](const Lease&) {});
      break;
    case 3:
      decode_page<PodDisruptionBudget>(body, [](const PodDisruptionBudget& pdb) {
        (void)pdb.selects(pdb.meta.labels);
        (void)pdb.selects(Labels{});
      });
      break;
    case 4:
      decode_page<Namespace>(body, [](const Namespace&) {});
      break;
    default:
      decode_page<DaemonSet>(body, [](const DaemonSet&) {});
      break;
  }
  return 0;
}
