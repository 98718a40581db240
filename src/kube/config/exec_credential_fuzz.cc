// Fuzz target: parse_exec_credential() on arbitrary bytes (what a credential plugin printed)
// must return a value or an Error, never crash, hang or throw.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kube/config/exec_credential.h"

// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  (void)nmo::kube::parse_exec_credential(input, nmo::kube::kExecApiV1);
  (void)nmo::kube::parse_exec_credential(input, nmo::kube::kExecApiV1Beta1);
  return 0;
}
