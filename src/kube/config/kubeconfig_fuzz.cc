// Fuzz target: parse_kubeconfig() on arbitrary bytes must return a value or an Error, never
// crash, hang or throw (an escaping exception aborts libFuzzer). When parsing succeeds, every
// context is also resolved, which exercises the server-URL parser and the entry lookups; file
// paths in the input are neutralised first so the fuzzer never reads the machine's files.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kube/config/kubeconfig.h"
#include "kube/config/kubeconfig_loader.h"

// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  nmo::Result<nmo::kube::Kubeconfig> config = nmo::kube::parse_kubeconfig(input, "<fuzz>");
  if (!config.has_value()) {
    return 0;
  }
  for (auto& [name, cluster] : config->clusters) {
    cluster.certificate_authority.clear();
  }
  for (auto& [name, user] : config->users) {
    user.token_file.clear();
    user.client_certificate.clear();
    user.client_key.clear();
  }
  for (const auto& [name, context] : config->contexts) {
    (void)nmo::kube::resolve_kubeconfig(*config, name);  // outcome irrelevant: must not crash
  }
  (void)nmo::kube::resolve_kubeconfig(*config, "");
  return 0;
}
