#include "http/digest.h"

#include <array>

#include <openssl/sha.h>

namespace nmo::http {

std::string sha256(std::string_view data) {
  std::array<unsigned char, SHA256_DIGEST_LENGTH> digest{};
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): OpenSSL takes bytes
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest.data());
  return {digest.begin(), digest.end()};
}

}  // namespace nmo::http
