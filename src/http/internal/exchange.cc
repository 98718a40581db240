#include "http/internal/exchange.h"

#include <string>
#include <utility>

#include <boost/beast/core/error.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/none.hpp>

#include "base/log.h"

namespace nmo::http::internal {
namespace {

// Response headers of the API server are small; Beast's default (8 KiB) is tight once several
// Warning headers appear.
constexpr std::uint32_t kHeaderLimit = 64 * 1024;

}  // namespace

Headers response_headers(const ResponseParser& parser) {
  Headers headers;
  for (const auto& field : parser.get()) {
    headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  return headers;
}

asio::awaitable<bool> this_coroutine_cancelled() {
  const asio::cancellation_state state = co_await asio::this_coro::cancellation_state;
  co_return state.cancelled() != asio::cancellation_type::none;
}

Error io_error(const ClientState& state, const Connection& connection, std::string_view label,
               std::string_view step, const boost::system::error_code& error, bool cancelled,
               std::string_view timeout_text) {
  std::string message(label);
  if (cancelled || state.shut_down || connection.was_closed() ||
      error == asio::error::operation_aborted) {
    return {ErrorCode::kCancelled, message + ": cancelled"};
  }
  if (error == beast::error::timeout) {
    return {ErrorCode::kTimeout, message + ": " + std::string(timeout_text)};
  }
  if (error == beast::http::error::body_limit) {
    return {ErrorCode::kInvalid, message + ": response body exceeds " +
                                     std::to_string(state.options.max_body_bytes) + " bytes"};
  }
  return {ErrorCode::kUnavailable,
          message + ": " + std::string(step) + ": " + connection.describe(error)};
}

asio::awaitable<Result<Exchange>> start_exchange(ClientState& state, const BeastRequest& request,
                                                 std::string_view label, Clock::time_point deadline,
                                                 std::chrono::milliseconds timeout,
                                                 std::optional<std::uint64_t> body_limit) {
  for (int attempt = 1;; ++attempt) {
    LeasedConnection connection;
    if (attempt == 1) {
      connection = state.take_idle();
    }
    if (!connection) {
      Result<LeasedConnection> opened = co_await state.open_new(deadline);
      if (!opened) {
        co_return std::move(opened).error();
      }
      connection = std::move(opened).value();
    }

    auto parser = std::make_unique<ResponseParser>();
    parser->header_limit(kHeaderLimit);
    if (body_limit) {
      parser->body_limit(*body_limit);
    } else {
      parser->body_limit(boost::none);
    }
    connection->expires_at(deadline);
    std::string_view step = "write request";
    boost::system::error_code error = co_await connection->write(request);
    if (!error) {
      step = "read response";
      error = co_await connection->read_header(*parser);
    }
    if (!error) {
      co_return Exchange{std::move(connection), std::move(parser)};
    }

    const bool cancelled = co_await this_coroutine_cancelled();
    Error failure =
        io_error(state, *connection, label, step, error, cancelled, timed_out_after(timeout));
    const bool nothing_received = !parser->got_some() && !connection->has_unread_input();
    if (attempt == 1 && connection->reused() && nothing_received &&
        failure.code == ErrorCode::kUnavailable) {
      log::root().debug(1, "pooled connection failed before the response; retrying once",
                        {{"request", label}, {"error", failure.message}});
      continue;
    }
    co_return failure;
  }
}

}  // namespace nmo::http::internal
