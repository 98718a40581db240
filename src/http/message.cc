#include "http/message.h"

#include <algorithm>

namespace nmo::http {
namespace {

char ascii_lower(char c) noexcept {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

bool equals_ignoring_case(std::string_view a, std::string_view b) noexcept {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return ascii_lower(x) == ascii_lower(y);
         });
}

}  // namespace

std::string_view to_string(Method method) noexcept {
  switch (method) {
    case Method::kGet:
      return "GET";
    case Method::kPost:
      return "POST";
    case Method::kPut:
      return "PUT";
    case Method::kPatch:
      return "PATCH";
    case Method::kDelete:
      return "DELETE";
  }
  return "GET";
}

std::optional<std::string_view> find_header(const Headers& headers, std::string_view name) {
  for (const auto& [key, value] : headers) {
    if (equals_ignoring_case(key, name)) {
      return std::string_view(value);
    }
  }
  return std::nullopt;
}

std::vector<std::string_view> find_header_values(const Headers& headers, std::string_view name) {
  std::vector<std::string_view> values;
  for (const auto& [key, value] : headers) {
    if (equals_ignoring_case(key, name)) {
      values.emplace_back(value);
    }
  }
  return values;
}

}  // namespace nmo::http
