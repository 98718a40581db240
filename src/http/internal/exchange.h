// Exchange: one request written and its response headers read, on a pooled connection or a new
// one, under the client's retry rule: a reused connection that fails before the first byte of
// the response arrives is replaced once by a fresh connection (the server closed it while it was
// idle, so it cannot have answered). Any later failure is returned, never retried.
//
// Threading: strand-confined (run inside the client's strand).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include <boost/system/error_code.hpp>

#include "base/result.h"
#include "http/asio.h"
#include "http/internal/client_state.h"
#include "http/internal/connection.h"
#include "http/message.h"

namespace nmo::http::internal {

// A request whose response headers have arrived; the body is still to be read from `connection`
// through `parser`.
struct Exchange {
  LeasedConnection connection;
  std::unique_ptr<ResponseParser> parser;
};

// Sends `request` and reads the response headers, all before `deadline`. `label` names the
// request in errors ("GET /api on 127.0.0.1:6443"); `timeout` is quoted when the deadline hits;
// `body_limit` caps the body the parser will accept (std::nullopt: unlimited, for streams).
asio::awaitable<Result<Exchange>> start_exchange(ClientState& state, const BeastRequest& request,
                                                 std::string_view label, Clock::time_point deadline,
                                                 std::chrono::milliseconds timeout,
                                                 std::optional<std::uint64_t> body_limit);

// A failed read or write on `connection` as an Error: kCancelled ("<label>: cancelled") after
// close(), shutdown or cancellation of the awaiting coroutine (`cancelled`); kTimeout
// ("<label>: <timeout_text>") when the deadline closed the socket; kInvalid when the body
// exceeds ClientOptions::max_body_bytes; otherwise kUnavailable
// ("<label>: <step>: Connection reset by peer").
[[nodiscard]] Error io_error(const ClientState& state, const Connection& connection,
                             std::string_view label, std::string_view step,
                             const boost::system::error_code& error, bool cancelled,
                             std::string_view timeout_text);

// Whether the coroutine running on the strand has been asked to stop (its caller's
// cancellation slot fired).
asio::awaitable<bool> this_coroutine_cancelled();

// The header fields of the response in `parser`, in order.
[[nodiscard]] Headers response_headers(const ResponseParser& parser);

}  // namespace nmo::http::internal
