#include "http/internal/openssl_handles.h"

#include <climits>

#include <openssl/err.h>

namespace nmo::http::internal {

BioPtr make_memory_bio(std::string_view data) {
  if (data.size() > static_cast<std::size_t>(INT_MAX)) {
    return nullptr;
  }
  return BioPtr(BIO_new_mem_buf(data.data(), static_cast<int>(data.size())));
}

std::string memory_bio_text(BIO* bio) {
  char* data = nullptr;
  // BIO_get_mem_data() spelled out: the macro's C-style cast breaks -Wold-style-cast.
  const long size = BIO_ctrl(bio, BIO_CTRL_INFO, 0, &data);
  if (size <= 0 || data == nullptr) {
    return {};
  }
  return {data, static_cast<std::size_t>(size)};
}

std::string openssl_error_text(std::string_view fallback) {
  std::string text;
  while (const unsigned long code = ERR_get_error()) {
    if (!text.empty()) {
      text += "; ";
    }
    const char* reason = ERR_reason_error_string(code);
    text += reason != nullptr ? reason : "error " + std::to_string(code);
  }
  return text.empty() ? std::string(fallback) : text;
}

}  // namespace nmo::http::internal
