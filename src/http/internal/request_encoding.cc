#include "http/internal/request_encoding.h"

#include <algorithm>
#include <string_view>

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>

namespace nmo::http::internal {
namespace {

namespace http = beast::http;

http::verb to_verb(Method method) noexcept {
  switch (method) {
    case Method::kGet:
      return http::verb::get;
    case Method::kPost:
      return http::verb::post;
    case Method::kPut:
      return http::verb::put;
    case Method::kPatch:
      return http::verb::patch;
    case Method::kDelete:
      return http::verb::delete_;
  }
  return http::verb::get;
}

// RFC 9110 section 5.6.2: tchar.
bool is_token_char(char c) noexcept {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
    return true;
  }
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_token(std::string_view text) noexcept {
  return !text.empty() && std::all_of(text.begin(), text.end(), is_token_char);
}

bool is_visible_ascii(char c) noexcept { return c > ' ' && c != '\x7f'; }

}  // namespace

Result<BeastRequest> encode_request(const Request& request, const ServerAddress& server) {
  if (!request.target.starts_with('/') ||
      !std::all_of(request.target.begin(), request.target.end(), is_visible_ascii)) {
    return Error(ErrorCode::kInvalid,
                 "request target \"" + request.target +
                     "\" must be a path starting with '/' without spaces or control characters");
  }
  BeastRequest message(to_verb(request.method), request.target, 11);
  bool has_host = false;
  for (const auto& [name, value] : request.headers) {
    if (!is_token(name)) {
      return Error(ErrorCode::kInvalid, "header name \"" + name + "\" is not an HTTP token");
    }
    if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
      return Error(ErrorCode::kInvalid, "header \"" + name + "\": value contains CR, LF or NUL");
    }
    if (beast::iequals(name, "Content-Length") || beast::iequals(name, "Transfer-Encoding")) {
      return Error(ErrorCode::kInvalid,
                   "header \"" + name + "\" is set by the client from the body");
    }
    has_host = has_host || beast::iequals(name, "Host");
    message.insert(name, value);
  }
  if (!has_host) {
    message.set(http::field::host, server.authority);
  }
  message.body() = request.body;
  message.keep_alive(true);
  message.prepare_payload();
  return message;
}

}  // namespace nmo::http::internal
