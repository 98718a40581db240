// The values the HTTP client (client.h) exchanges with its callers: Method, Headers, Request and
// Response. Plain structs without Beast or OpenSSL types, so the kube layer that builds requests
// includes only this header, client.h and line_stream.h.
//
// Threading: plain value types. Distinct objects may be used from different threads; one object
// may be read concurrently but not written concurrently.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nmo::http {

// The HTTP methods the Kubernetes API uses.
enum class Method { kGet, kPost, kPut, kPatch, kDelete };

// The method as it appears on the request line: "GET", "POST", "PUT", "PATCH", "DELETE".
[[nodiscard]] std::string_view to_string(Method method) noexcept;

// Header fields in the order they were sent or received; a name may repeat (several Warning
// headers). Names keep their original spelling; lookups ignore ASCII case.
using Headers = std::vector<std::pair<std::string, std::string>>;

// The value of the first field called `name` (ASCII case-insensitive), or std::nullopt. The view
// points into `headers`.
[[nodiscard]] std::optional<std::string_view> find_header(const Headers& headers,
                                                          std::string_view name);

// The values of every field called `name` (ASCII case-insensitive), in order. The views point into
// `headers`.
[[nodiscard]] std::vector<std::string_view> find_header_values(const Headers& headers,
                                                               std::string_view name);

// One HTTP/1.1 request. The client adds Host, Content-Length (when there is a body or the method
// carries one) and keep-alive; everything else comes from `headers`.
struct Request {
  Method method = Method::kGet;
  // Path and query, already percent-encoded ("/api/v1/pods?limit=500"); must start with '/'.
  std::string target;
  // Extra fields such as Authorization, Content-Type and Accept. Names must be HTTP tokens and
  // values must not contain CR, LF or NUL (send() fails with kInvalid otherwise).
  Headers headers;
  std::string body;
  // Overrides ClientOptions::request_timeout for this request.
  std::optional<std::chrono::milliseconds> timeout;
};

// A complete HTTP response. Any status is a Response: a 404 or a 500 is not an error at this
// layer; the kube layer decodes the Kubernetes Status body.
struct Response {
  unsigned status = 0;
  Headers headers;
  std::string body;

  // The first value of header `name` (case-insensitive), or std::nullopt; views into `headers`.
  [[nodiscard]] std::optional<std::string_view> header(std::string_view name) const {
    return find_header(headers, name);
  }
  // Every value of header `name` (case-insensitive), in order; views into `headers`.
  [[nodiscard]] std::vector<std::string_view> header_values(std::string_view name) const {
    return find_header_values(headers, name);
  }
};

}  // namespace nmo::http
