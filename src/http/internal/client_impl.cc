#include "http/internal/client_impl.h"

#include <charconv>
#include <chrono>
#include <span>
#include <string>
#include <utility>

#include "http/internal/client_state.h"
#include "http/internal/connection.h"
#include "http/internal/exchange.h"
#include "http/internal/line_stream_impl.h"
#include "http/internal/request_encoding.h"
#include "http/internal/tls_context.h"

namespace nmo::http::internal {
namespace {

// Bytes added to a response body per read.
constexpr std::size_t kReadChunk = 64 * 1024;

std::string label_of(const Request& request, const ServerAddress& server) {
  return std::string(to_string(request.method)) + " " + request.target + " on " + server.authority;
}

Result<ServerAddress> server_address(const ClientOptions& options) {
  if (options.host.empty()) {
    return Error(ErrorCode::kInvalid, "host is empty");
  }
  if (options.host.starts_with('[')) {
    return Error(ErrorCode::kInvalid,
                 "host \"" + options.host + "\": give IPv6 addresses without brackets");
  }
  ServerAddress server;
  const char* const end = options.port.data() + options.port.size();
  const auto [stop, error] = std::from_chars(options.port.data(), end, server.port);
  if (options.port.empty() || error != std::errc() || stop != end || server.port == 0) {
    return Error(ErrorCode::kInvalid, "port \"" + options.port + "\" is not a port number");
  }
  server.host = options.host;
  server.authority =
      (options.host.find(':') != std::string::npos ? "[" + options.host + "]" : options.host) +
      ":" + options.port;
  server.tls_name =
      options.tls_options.server_name.empty() ? options.host : options.tls_options.server_name;
  server.verify = !options.tls_options.insecure_skip_verify;
  return server;
}

// Strand: the whole of send().
asio::awaitable<Result<Response>> send_on_strand(std::shared_ptr<ClientState> state,
                                                 Request request) {
  co_await asio::this_coro::throw_if_cancelled(false);
  const std::string label = label_of(request, state->server);
  if (state->shut_down) {
    co_return Error(ErrorCode::kCancelled, label + ": cancelled");
  }
  Result<BeastRequest> message = encode_request(request, state->server);
  if (!message) {
    co_return std::move(message).error();
  }
  const std::chrono::milliseconds timeout =
      request.timeout.value_or(state->options.request_timeout);
  Result<Exchange> exchange = co_await start_exchange(
      *state, *message, label, Clock::now() + timeout, timeout, state->options.max_body_bytes);
  if (!exchange) {
    co_return std::move(exchange).error();
  }
  LeasedConnection& connection = exchange->connection;
  ResponseParser& parser = *exchange->parser;

  Response response;
  response.status = parser.get().result_int();
  response.headers = response_headers(parser);
  if (const auto length = parser.content_length()) {
    response.body.reserve(static_cast<std::size_t>(*length));
  }
  while (!parser.is_done()) {
    const std::size_t size = response.body.size();
    response.body.resize(size + kReadChunk);
    auto [error, bytes] =
        co_await connection->read_body(parser, std::span(response.body).subspan(size));
    response.body.resize(size + bytes);
    if (error) {
      const bool cancelled = co_await this_coroutine_cancelled();
      co_return io_error(*state, *connection, label, "read body", error, cancelled,
                         timed_out_after(timeout));
    }
  }
  connection.give_back(parser.get().keep_alive() && !parser.need_eof() &&
                       !connection->has_unread_input());
  co_return response;
}

// Strand: the whole of stream().
asio::awaitable<Result<std::unique_ptr<LineStream>>> stream_on_strand(
    std::shared_ptr<ClientState> state, Request request) {
  co_await asio::this_coro::throw_if_cancelled(false);
  std::string label = label_of(request, state->server);
  if (state->shut_down) {
    co_return Error(ErrorCode::kCancelled, label + ": cancelled");
  }
  Result<BeastRequest> message = encode_request(request, state->server);
  if (!message) {
    co_return std::move(message).error();
  }
  const std::chrono::milliseconds timeout =
      request.timeout.value_or(state->options.request_timeout);
  Result<Exchange> exchange = co_await start_exchange(
      *state, *message, label, Clock::now() + timeout, timeout, std::nullopt);
  if (!exchange) {
    co_return std::move(exchange).error();
  }
  co_return make_line_stream(state, std::move(exchange).value(), std::move(label));
}

class BeastClient final : public Client {
 public:
  explicit BeastClient(std::shared_ptr<ClientState> state) : state_(std::move(state)) {}
  ~BeastClient() override { shutdown(); }
  BeastClient(const BeastClient&) = delete;
  BeastClient& operator=(const BeastClient&) = delete;

  asio::awaitable<Result<Response>> send(Request request) override {
    // Checked here, without awaiting an operation: Asio would throw into a cancelled caller.
    // (Temporaries are named before each co_await throughout: GCC 12 mis-destroys non-trivial
    // temporaries in some co_await expressions.)
    const asio::cancellation_state caller = co_await asio::this_coro::cancellation_state;
    if (caller.cancelled() != asio::cancellation_type::none) {
      co_return Error(ErrorCode::kCancelled, label_of(request, state_->server) + ": cancelled");
    }
    asio::awaitable<Result<Response>> task = send_on_strand(state_, std::move(request));
    co_return co_await asio::co_spawn(state_->strand, std::move(task), asio::use_awaitable);
  }

  asio::awaitable<Result<std::unique_ptr<LineStream>>> stream(Request request) override {
    const asio::cancellation_state caller = co_await asio::this_coro::cancellation_state;
    if (caller.cancelled() != asio::cancellation_type::none) {
      co_return Error(ErrorCode::kCancelled, label_of(request, state_->server) + ": cancelled");
    }
    asio::awaitable<Result<std::unique_ptr<LineStream>>> task =
        stream_on_strand(state_, std::move(request));
    co_return co_await asio::co_spawn(state_->strand, std::move(task), asio::use_awaitable);
  }

  void shutdown() override {
    if (state_->shut_down.exchange(true)) {
      return;
    }
    asio::post(state_->strand, [state = state_] { state->close_all(); });
  }

 private:
  std::shared_ptr<ClientState> state_;
};

}  // namespace

Result<std::unique_ptr<Client>> make_beast_client(asio::any_io_executor executor,
                                                  ClientOptions options) {
  NMO_TRY_ASSIGN(ServerAddress server, server_address(options));
  std::shared_ptr<asio::ssl::context> tls;
  if (options.tls) {
    NMO_TRY_ASSIGN(tls, make_client_tls_context(options.tls_options));
  }
  auto state = std::make_shared<ClientState>(asio::make_strand(std::move(executor)),
                                             std::move(options), std::move(server), std::move(tls));
  return std::unique_ptr<Client>(std::make_unique<BeastClient>(std::move(state)));
}

}  // namespace nmo::http::internal
