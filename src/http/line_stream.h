// LineStream: a streaming HTTP response body read one line at a time (a Kubernetes watch sends
// one JSON object per line over a chunked body). Obtained from Client::stream().
//
// Threading: next_line() and read_rest() may be awaited from any executor, but one at a time
// (never two concurrently on the same stream). cancel() may be called from any thread at any
// time. Destroy every LineStream before the io_context its Client runs on.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"
#include "http/asio.h"
#include "http/message.h"

namespace nmo::http {

// The body of a response whose headers have arrived. The status and headers are known up front;
// the body is read on demand. The connection belongs to the stream until the body ends cleanly
// (then it goes back to the client's pool) or the stream is destroyed.
//
// After any error the stream is finished: every later call fails with the same error.
class LineStream {
 public:
  virtual ~LineStream();
  LineStream(const LineStream&) = delete;
  LineStream& operator=(const LineStream&) = delete;

  // The response status (200 for a watch that started; anything else usually carries a
  // Kubernetes Status body, read it with read_rest()).
  [[nodiscard]] unsigned status() const noexcept { return status_; }
  // The response headers.
  [[nodiscard]] const Headers& headers() const noexcept { return headers_; }
  // The first value of header `name` (case-insensitive), or std::nullopt.
  [[nodiscard]] std::optional<std::string_view> header(std::string_view name) const {
    return find_header(headers_, name);
  }

  // The next complete line without its "\n" (a "\r" before it is dropped too). Lines may arrive
  // split across chunks or several to a chunk; an empty line is returned as "". At the clean end
  // of the body a last line without "\n" is returned, then std::nullopt. Errors: kTimeout when
  // nothing arrives for `idle_timeout`, kUnavailable when the connection breaks or the body is
  // truncated, kInvalid when a line exceeds ClientOptions::max_line_bytes, kCancelled after
  // cancel() or Client::shutdown().
  virtual asio::awaitable<Result<std::optional<std::string>>> next_line(
      std::chrono::milliseconds idle_timeout) = 0;

  // Everything left in the body (including lines not yet returned) as one string, read within
  // `timeout` in total. For the body of a non-2xx answer to a streaming request.
  virtual asio::awaitable<Result<std::string>> read_rest(std::chrono::milliseconds timeout) = 0;

  // Stops the stream: a pending or later next_line()/read_rest() fails with kCancelled, and the
  // connection is closed, never reused. Thread-safe and idempotent.
  virtual void cancel() = 0;

 protected:
  LineStream(unsigned status, Headers headers) : status_(status), headers_(std::move(headers)) {}

 private:
  unsigned status_;
  Headers headers_;
};

}  // namespace nmo::http
