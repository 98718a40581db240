#include "http/server.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdint>
#include <exception>
#include <limits>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <variant>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/error.hpp>

#include "base/log.h"
#include "http/internal/server_certificates.h"
#include "http/internal/server_stream_io.h"

namespace nmo::http {
namespace {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using boost::system::error_code;
using internal::PlainStream;
using internal::TlsStream;
using Tcp = asio::ip::tcp;
using Strand = asio::strand<asio::any_io_executor>;

constexpr auto kAsTuple = asio::as_tuple(asio::use_awaitable);

// After refusing a request whose body was not read, how much of it is read and dropped (and for
// how long) so the client, still writing, gets to read the refusal. Go's net/http drains 256 KB;
// a body just over our limit must fit too.
constexpr std::chrono::seconds kDiscardTimeout{2};
constexpr std::size_t kDiscardBytes = std::size_t{4} << 20U;

// After accept() fails (out of file descriptors, say), wait this long before trying again instead
// of spinning.
constexpr std::chrono::milliseconds kAcceptRetryDelay{100};

// Under a flood every shed connection would be a log line; one warning per this long says how
// many there were instead.
constexpr std::chrono::seconds kShedWarningInterval{10};

std::optional<Method> method_of(bhttp::verb verb) {
  switch (verb) {
    case bhttp::verb::get:
      return Method::kGet;
    case bhttp::verb::post:
      return Method::kPost;
    case bhttp::verb::put:
      return Method::kPut;
    case bhttp::verb::patch:
      return Method::kPatch;
    case bhttp::verb::delete_:
      return Method::kDelete;
    default:
      return std::nullopt;
  }
}

// A response the server gives by itself: status, a one-line text body, and the connection closed.
Response plain_response(unsigned status, std::string text) {
  return {.status = status,
          .headers = {{"Content-Type", "text/plain; charset=utf-8"}},
          .body = std::move(text) + "\n"};
}

bool is_token_char(char c) {
  static constexpr std::string_view kSpecials = "!#$%&'*+-.^_`|~";
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         kSpecials.find(c) != std::string_view::npos;
}

// Why a handler's header cannot be sent as it is, or "" when it can. Framing fields are the
// server's to set.
std::string header_problem(const std::string& name, const std::string& value) {
  if (name.empty() || !std::all_of(name.begin(), name.end(), is_token_char)) {
    return "header name \"" + name + "\" is not an HTTP token";
  }
  if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
    return "header \"" + name + "\": value contains CR, LF or NUL";
  }
  for (const std::string_view framing : {"Content-Length", "Transfer-Encoding", "Connection"}) {
    if (name.size() == framing.size() &&
        std::equal(name.begin(), name.end(), framing.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) ==
                 std::tolower(static_cast<unsigned char>(b));
        })) {
      return "header \"" + name + "\" is set by the server";
    }
  }
  return {};
}

// Errors that only mean the peer went away or the connection was closed on purpose.
bool is_disconnect(const error_code& error) {
  return error == bhttp::error::end_of_stream || error == asio::error::eof ||
         error == asio::error::connection_reset || error == asio::error::operation_aborted ||
         error == asio::error::broken_pipe || error == asio::error::bad_descriptor ||
         error == asio::ssl::error::stream_truncated || error == beast::error::timeout;
}

// Where a connection is in its life, for stop() and for choosing whom to shed.
enum class Phase {
  kHandshake,     // TLS handshake not complete
  kFirstRequest,  // waiting for (or reading) the header of the connection's first request
  kIdle,          // kept alive between requests, nothing of the next one received
  kHeader,        // reading the header of a later request
  kServing,       // between having read a request's header and having written its response
};

// One accepted connection. `tls` is declared before `stream` so the context outlives the stream
// that was made with it.
struct Connection {
  Connection(Tcp::socket socket, std::shared_ptr<asio::ssl::context> context)
      : tls(std::move(context)), stream(make_stream(std::move(socket), tls.get())) {}

  using Clock = std::chrono::steady_clock;

  static std::variant<PlainStream, TlsStream> make_stream(Tcp::socket socket,
                                                          asio::ssl::context* context) {
    if (context == nullptr) {
      return PlainStream(std::move(socket));
    }
    return std::variant<PlainStream, TlsStream>(std::in_place_type<TlsStream>, std::move(socket),
                                                *context);
  }

  beast::tcp_stream& tcp() {
    return std::visit([](auto& s) -> beast::tcp_stream& { return beast::get_lowest_layer(s); },
                      stream);
  }
  void close() {
    error_code ignored;
    tcp().socket().shutdown(Tcp::socket::shutdown_both, ignored);
    tcp().close();
  }

  std::shared_ptr<asio::ssl::context> tls;
  std::variant<PlainStream, TlsStream> stream;
  beast::flat_buffer buffer;
  std::string peer;     // "address:port", for logs
  std::string address;  // the peer's IP address, for max_connections_per_peer
  // stop() lets a kServing connection finish; any other is closed at once.
  Phase phase = Phase::kHandshake;
  Clock::time_point since = Clock::now();  // when `phase` began
  // Where the connection sits in State::connections_; unset once it left the list (shed, or
  // ended).
  std::optional<std::list<Connection*>::iterator> listed;

  void enter(Phase next) {
    phase = next;
    since = Clock::now();
  }
  [[nodiscard]] bool busy() const { return phase == Phase::kServing; }
};

// Whether `error` is a stream's expiry (beast::tcp_stream's timeout).
bool is_timeout(const error_code& error) { return error == beast::error::timeout; }

// Everything a running server owns. Shared by its coroutines so that none outlives it.
class State : public std::enable_shared_from_this<State> {
 public:
  State(asio::any_io_executor executor, ServerOptions options, Handler handler)
      : options_(std::move(options)),
        handler_(std::move(handler)),
        strand_(asio::make_strand(std::move(executor))),
        acceptor_(strand_),
        poll_timer_(strand_),
        wake_(strand_),
        logger_(log::root().with({{"server", options_.name}})) {}

  Result<void> listen() {
    if (!handler_) {
      return Error(ErrorCode::kInvalid, "no handler");
    }
    if (options_.max_body_bytes == 0 || options_.max_header_bytes == 0 ||
        options_.max_connections == 0) {
      return Error(ErrorCode::kInvalid,
                   "max_body_bytes, max_header_bytes and max_connections must be positive");
    }
    error_code error;
    const asio::ip::address address = asio::ip::make_address(options_.bind_address, error);
    if (error) {
      return Error(ErrorCode::kInvalid,
                   "bind address \"" + options_.bind_address + "\" is not an IP address");
    }
    internal::ServerCertificates::ClientCa client_ca{.pem = options_.client_ca_pem,
                                                     .name = "client_ca_pem"};
    if (client_ca.pem.empty() && !options_.client_ca_file.empty()) {
      NMO_TRY_ASSIGN(client_ca.pem, internal::read_pem_file(options_.client_ca_file));
      client_ca.name = options_.client_ca_file;
    }
    const bool tls = !options_.cert_dir.empty() || !options_.certificate_pem.empty() ||
                     !options_.key_pem.empty();
    if (!client_ca.pem.empty() && !tls) {
      return Error(ErrorCode::kInvalid, "a client CA needs TLS (a serving certificate)");
    }
    client_certificates_ = !client_ca.pem.empty();
    if (!options_.cert_dir.empty()) {
      const std::string dir =
          options_.cert_dir.back() == '/' ? options_.cert_dir : options_.cert_dir + "/";
      NMO_TRY_ASSIGN(certificates_,
                     internal::ServerCertificates::load(
                         dir + options_.cert_file, dir + options_.key_file, std::move(client_ca)));
    } else if (tls) {
      NMO_TRY_ASSIGN(certificates_,
                     internal::ServerCertificates::from_memory(
                         options_.certificate_pem, options_.key_pem, std::move(client_ca)));
    }
    Tcp::endpoint endpoint(address, options_.port);
    const std::string where =
        endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
    error = listen(endpoint);
    // "::" is every address of both families (dual stack); a host without IPv6 gets every IPv4
    // address instead.
    if (error && address.is_v6() && address.is_unspecified()) {
      endpoint = Tcp::endpoint(asio::ip::address_v4::any(), options_.port);
      error = listen(endpoint);
    }
    if (error) {
      return Error(ErrorCode::kUnavailable, "listen on " + where + ": " + error.message());
    }
    port_ = acceptor_.local_endpoint(error).port();
    auto self = shared_from_this();
    asio::co_spawn(strand_, accept_loop(self), asio::detached);
    if (certificates_ && !options_.cert_dir.empty()) {
      asio::co_spawn(strand_, poll_certificates(self), asio::detached);
    }
    logger_.info("serving",
                 {{"address", endpoint.address().to_string()},
                  {"port", static_cast<int>(port_.load())},
                  {"tls", certificates_ != nullptr},
                  {"client_certificates", client_certificates_},
                  {"max_connections", static_cast<std::int64_t>(options_.max_connections)},
                  {"max_connections_per_peer",
                   static_cast<std::int64_t>(options_.max_connections_per_peer)}});
    return {};
  }

  [[nodiscard]] const Strand& strand() const { return strand_; }
  [[nodiscard]] std::uint16_t port() const { return port_; }

  std::uint64_t certificate_generation() const {
    return certificates_ ? certificates_->generation() : 0;
  }
  [[nodiscard]] std::shared_ptr<const ConnectionStats> stats() const { return stats_; }

  // Stops accepting and closes idle connections; strand only.
  void begin_stop() {
    if (stopping_) {
      return;
    }
    stopping_ = true;
    error_code ignored;
    acceptor_.close(ignored);
    poll_timer_.cancel();
    for (Connection* connection : connections_) {
      if (!connection->busy()) {
        connection->close();
      }
    }
  }

  // stop() of the Server; runs on the strand.
  asio::awaitable<void> stop(std::chrono::milliseconds grace) {
    const bool first = !stopping_;
    begin_stop();
    const auto deadline = std::chrono::steady_clock::now() + grace;
    const auto busy = std::count_if(connections_.begin(), connections_.end(),
                                    [](const Connection* c) { return c->busy(); });
    if (first && busy > 0) {
      logger_.info("stopping: waiting for requests in flight", {{"requests", busy}});
    }
    while (!connections_.empty() && std::chrono::steady_clock::now() < deadline) {
      wake_.expires_at(deadline);
      (void)co_await wake_.async_wait(kAsTuple);
    }
    if (!connections_.empty()) {
      logger_.warn("stopping: closing connections whose requests did not finish in time",
                   {{"connections", static_cast<int>(connections_.size())}});
      for (Connection* connection : connections_) {
        connection->close();
      }
    }
    if (first) {
      logger_.info("stopped");
    }
  }

 private:
  // Opens, binds and listens on `endpoint`; the acceptor is closed again when that fails. An
  // unspecified IPv6 address also takes IPv4 connections (IPV6_V6ONLY off).
  error_code listen(const Tcp::endpoint& endpoint) {
    error_code error;
    if (acceptor_.open(endpoint.protocol(), error); !error) {
      if (endpoint.address().is_v6() && endpoint.address().is_unspecified()) {
        acceptor_.set_option(asio::ip::v6_only(false), error);
      }
      if (!error) acceptor_.set_option(Tcp::acceptor::reuse_address(true), error);
      if (!error) acceptor_.bind(endpoint, error);
      if (!error) acceptor_.listen(asio::socket_base::max_listen_connections, error);
    }
    if (error) {
      error_code ignored;
      acceptor_.close(ignored);
    }
    return error;
  }

  asio::awaitable<void> accept_loop(std::shared_ptr<State> self) {
    for (;;) {
      auto [error, socket] = co_await acceptor_.async_accept(kAsTuple);
      if (stopping_ || error == asio::error::operation_aborted) {
        co_return;
      }
      if (error == asio::error::no_descriptors) {
        // Out of file descriptors (a flood below max_connections, under a low RLIMIT_NOFILE):
        // the connection waiting in the backlog gets the descriptor of the one that has waited
        // longest, as when the slots are full.
        if (Connection* victim = choose_victim(nullptr); victim != nullptr) {
          shed_for_room(*victim);
          continue;
        }
      }
      if (error) {
        logger_.warn("accept failed", {{"error", error.message()}});
        asio::steady_timer pause(strand_, kAcceptRetryDelay);
        (void)co_await pause.async_wait(kAsTuple);
        continue;
      }
      stats_->count_accepted();
      error_code ignored;
      const Tcp::endpoint remote = socket.remote_endpoint(ignored);
      std::string address = remote.address().to_string();
      if (!make_room(address)) {
        socket.close(ignored);
        continue;
      }
      socket.set_option(Tcp::no_delay(true), ignored);
      // Listed here, before the next accept, so that make_room() always sees every connection.
      auto connection = std::make_unique<Connection>(
          std::move(socket), certificates_ ? certificates_->current() : nullptr);
      connection->peer = address + ":" + std::to_string(remote.port());
      connection->address = std::move(address);
      connection->enter(certificates_ ? Phase::kHandshake : Phase::kFirstRequest);
      connection->listed = connections_.insert(connections_.end(), connection.get());
      ++per_peer_[connection->address];
      asio::co_spawn(strand_, serve(self, std::move(connection)), asio::detached);
    }
  }

  // Before a new connection from `address` is served: sheds what must go for it to fit
  // (the file comment of server.h says in which order). False when it cannot fit: the new one is
  // closed instead.
  bool make_room(const std::string& address) {
    if (options_.max_connections_per_peer > 0) {
      if (const auto held = per_peer_.find(address);
          held != per_peer_.end() && held->second >= options_.max_connections_per_peer) {
        Connection* victim = choose_victim(&address);
        count_shed(ShedReason::kPeerLimit);
        if (victim == nullptr) return false;
        shed(*victim);
      }
    }
    if (connections_.size() >= options_.max_connections) {
      Connection* victim = choose_victim(nullptr);
      if (victim == nullptr) {
        count_shed(ShedReason::kFull);
        return false;
      }
      shed_for_room(*victim);
    }
    return true;
  }

  // The connection to close for a new one (of `address` only, when given): the oldest one still
  // in its handshake or request header, else the one idle for longest; none while all serve a
  // request. An incomplete connection has sent nothing that closing it loses, while an idle one
  // belongs to a client that completed a request and may be sending its next one: a Go client
  // (the API server's webhook client) does not retry a POST that races with a server-side close.
  Connection* choose_victim(const std::string* address) const {
    Connection* idle = nullptr;
    Connection* incomplete = nullptr;
    for (Connection* connection : connections_) {
      if (connection->busy() || (address != nullptr && connection->address != *address)) {
        continue;
      }
      Connection*& oldest = connection->phase == Phase::kIdle ? idle : incomplete;
      if (oldest == nullptr || connection->since < oldest->since) oldest = connection;
    }
    return incomplete != nullptr ? incomplete : idle;
  }

  // Sheds `victim` (choose_victim()) to make room, counted as idle or incomplete.
  void shed_for_room(Connection& victim) {
    count_shed(victim.phase == Phase::kIdle ? ShedReason::kIdle : ShedReason::kIncomplete);
    shed(victim);
  }

  // Takes `connection` off the lists and closes it; its coroutine then ends on its own.
  void shed(Connection& connection) {
    logger_.debug(
        1, "connection shed to make room",
        {{"peer", connection.peer},
         {"idle", connection.phase == Phase::kIdle},
         {"age_ms", static_cast<std::int64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                  Connection::Clock::now() - connection.since)
                                                  .count())}});
    unlist(connection);
    connection.close();
  }

  void unlist(Connection& connection) {
    if (!connection.listed) return;
    connections_.erase(*connection.listed);
    connection.listed.reset();
    if (auto held = per_peer_.find(connection.address); held != per_peer_.end()) {
      if (--held->second == 0) per_peer_.erase(held);
    }
  }

  // Counts a connection closed early, and warns at most once per kShedWarningInterval.
  void count_shed(ShedReason reason) {
    stats_->count_shed(reason);
    const auto now = std::chrono::steady_clock::now();
    if (last_shed_warning_ && now - *last_shed_warning_ < kShedWarningInterval) {
      return;
    }
    last_shed_warning_ = now;
    std::vector<log::Field> totals;
    for (std::size_t i = 0; i < kShedReasonCount; ++i) {
      const auto each = static_cast<ShedReason>(i);
      totals.emplace_back(std::string(to_string(each)) + "_total",
                          static_cast<std::int64_t>(stats_->shed(each)));
    }
    logger_.with(totals).warn(
        "closing connections early (slow, idle under pressure, or over a limit)",
        {{"reason", to_string(reason)},
         {"connections", static_cast<std::int64_t>(connections_.size())},
         {"limit", static_cast<std::int64_t>(options_.max_connections)},
         {"accepted_total", static_cast<std::int64_t>(stats_->accepted())}});
  }

  asio::awaitable<void> poll_certificates(std::shared_ptr<State> /*self*/) {
    while (!stopping_) {
      poll_timer_.expires_after(options_.cert_reload_interval);
      (void)co_await poll_timer_.async_wait(kAsTuple);
      if (stopping_) {
        co_return;
      }
      switch (certificates_->poll()) {
        case internal::ServerCertificates::PollResult::kUnchanged:
          break;
        case internal::ServerCertificates::PollResult::kReloaded:
          logger_.info("serving certificate reloaded; new connections use it",
                       {{"generation", static_cast<std::int64_t>(certificates_->generation())}});
          break;
        case internal::ServerCertificates::PollResult::kFailed:
          logger_.error(
              "serving certificate changed but cannot be loaded; keeping the previous one",
              {{"error", certificates_->last_error()}});
          break;
      }
    }
  }

  asio::awaitable<void> serve(std::shared_ptr<State> /*self*/,
                              std::unique_ptr<Connection> connection) {
    try {
      co_await run(*connection);
    } catch (const std::exception& e) {
      logger_.error("connection failed", {{"peer", connection->peer}, {"error", e.what()}});
    }
    connection->close();
    unlist(*connection);
    if (stopping_) {
      wake_.cancel();
    }
  }

  asio::awaitable<void> run(Connection& connection) {
    if (auto* tls = std::get_if<TlsStream>(&connection.stream)) {
      connection.tcp().expires_after(options_.handshake_timeout);
      const error_code error = co_await internal::accept_handshake(*tls);
      if (error) {
        if (is_timeout(error)) count_shed(ShedReason::kHandshakeTimeout);
        logger_.debug(1, "TLS handshake failed",
                      {{"peer", connection.peer}, {"error", describe(error)}});
        co_return;
      }
      connection.enter(Phase::kFirstRequest);
    }
    bool first = true;
    while (!stopping_) {
      internal::RequestParser parser;
      parser.header_limit(static_cast<std::uint32_t>(std::min<std::size_t>(
          options_.max_header_bytes, std::numeric_limits<std::uint32_t>::max())));
      parser.body_limit(options_.max_body_bytes);
      if (!first && connection.buffer.size() == 0) {
        // Kept alive: idle until the next request's first bytes, then header_timeout for the
        // rest of its header.
        connection.enter(Phase::kIdle);
        connection.tcp().expires_after(options_.idle_timeout);
        const error_code idle_error = co_await std::visit(
            [&](auto& stream) { return internal::read_some(stream, connection.buffer); },
            connection.stream);
        if (idle_error) {
          logger_.debug(2, "connection ended",
                        {{"peer", connection.peer}, {"reason", describe(idle_error)}});
          co_return;
        }
      }
      if (!first) connection.enter(Phase::kHeader);
      // The first request's header counts from the handshake (or the accept).
      if (first) {
        connection.tcp().expires_at(connection.since + options_.header_timeout);
      } else {
        connection.tcp().expires_after(options_.header_timeout);
      }
      first = false;
      error_code error = co_await std::visit(
          [&](auto& stream) {
            return internal::read_request_header(stream, connection.buffer, parser);
          },
          connection.stream);
      if (error && is_timeout(error)) count_shed(ShedReason::kHeaderTimeout);
      if (!error && !parser.is_done()) {
        connection.enter(Phase::kServing);
        connection.tcp().expires_after(options_.read_timeout);
        error = co_await std::visit(
            [&](auto& stream) {
              return internal::read_request_body(stream, connection.buffer, parser);
            },
            connection.stream);
      }
      connection.enter(Phase::kServing);
      if (error) {
        std::optional<Response> refusal = refusal_for(error);
        if (!refusal) {
          logger_.debug(2, "connection ended",
                        {{"peer", connection.peer}, {"reason", describe(error)}});
          co_return;
        }
        logger_.debug(1, "request refused",
                      {{"peer", connection.peer},
                       {"status", static_cast<int>(refusal->status)},
                       {"reason", describe(error)}});
        const bool written = co_await write(connection, std::move(*refusal), false);
        if (written) {
          connection.enter(Phase::kIdle);
          error_code ignored;
          connection.tcp().socket().shutdown(Tcp::socket::shutdown_send, ignored);
          connection.tcp().expires_after(kDiscardTimeout);
          co_await internal::discard_input(connection.tcp(),
                                           std::max(kDiscardBytes, options_.max_body_bytes * 2));
        }
        co_return;
      }

      auto& message = parser.get();
      const bool keep_alive = message.keep_alive();
      Response response;
      if (const std::optional<Method> method = method_of(message.method()); !method) {
        response = plain_response(
            405, "method " + std::string(message.method_string()) + " is not supported");
        response.headers.emplace_back("Allow", "GET, POST, PUT, PATCH, DELETE");
      } else {
        Request request{.method = *method,
                        .target = std::string(message.target()),
                        .headers = {},
                        .body = std::move(message.body()),
                        .timeout = std::nullopt};
        for (const auto& field : message) {
          request.headers.emplace_back(std::string(field.name_string()),
                                       std::string(field.value()));
        }
        response = co_await call_handler(std::move(request));
      }
      const bool written =
          co_await write(connection, std::move(response), keep_alive && !stopping_);
      if (!written || !keep_alive) {
        co_return;
      }
    }
  }

  // What the server answers to a request it could not read, or std::nullopt when there is
  // nobody to answer (the peer left, or the connection timed out).
  std::optional<Response> refusal_for(const error_code& error) const {
    if (error == bhttp::error::body_limit) {
      return plain_response(400, "request body is larger than the limit of " +
                                     std::to_string(options_.max_body_bytes) + " bytes");
    }
    if (error == bhttp::error::header_limit) {
      return plain_response(431, "request header is larger than the limit of " +
                                     std::to_string(options_.max_header_bytes) + " bytes");
    }
    if (is_disconnect(error) || error == bhttp::error::partial_message ||
        error.category() != bhttp::make_error_code(bhttp::error::need_more).category()) {
      return std::nullopt;
    }
    return plain_response(400, "malformed HTTP request: " + error.message());
  }

  asio::awaitable<Response> call_handler(Request request) {
    try {
      asio::awaitable<Response> pending = handler_(std::move(request));
      Response response = co_await std::move(pending);
      co_return response;
    } catch (const std::exception& e) {
      logger_.error("request handler failed", {{"error", e.what()}});
    } catch (...) {
      logger_.error("request handler failed", {{"error", "unknown exception"}});
    }
    co_return plain_response(500, "internal error");
  }

  // Writes `response`; false when the connection is unusable afterwards.
  asio::awaitable<bool> write(Connection& connection, Response response, bool keep_alive) {
    if (response.status < 100 || response.status > 599) {
      logger_.error("request handler returned an invalid status",
                    {{"status", static_cast<int>(response.status)}});
      response = plain_response(500, "internal error");
    }
    for (const auto& [name, value] : response.headers) {
      if (std::string problem = header_problem(name, value); !problem.empty()) {
        logger_.error("request handler returned an invalid header", {{"error", problem}});
        response = plain_response(500, "internal error");
        break;
      }
    }
    internal::BeastResponse message;
    message.version(11);
    message.result(response.status);
    for (const auto& [name, value] : response.headers) {
      message.insert(name, value);
    }
    message.body() = std::move(response.body);
    message.keep_alive(keep_alive);
    message.prepare_payload();
    connection.tcp().expires_after(options_.write_timeout);
    const error_code error = co_await std::visit(
        [&](auto& stream) { return internal::write_response(stream, message); }, connection.stream);
    if (error) {
      logger_.debug(1, "writing a response failed",
                    {{"peer", connection.peer}, {"error", describe(error)}});
    }
    co_return !error;
  }

  static std::string describe(const error_code& error) {
    if (error.category() == asio::error::get_ssl_category()) {
      return error.message() + " (TLS)";
    }
    return error.message();
  }

  const ServerOptions options_;
  const Handler handler_;
  Strand strand_;
  Tcp::acceptor acceptor_;
  asio::steady_timer poll_timer_;
  asio::steady_timer wake_;  // woken when a connection ends during stop()
  const log::Logger logger_;
  std::unique_ptr<internal::ServerCertificates> certificates_;  // null for plain HTTP
  bool client_certificates_ = false;                            // set before accepting
  std::atomic<std::uint16_t> port_{0};
  const std::shared_ptr<ConnectionStats> stats_ = std::make_shared<ConnectionStats>();

  // Strand only.
  bool stopping_ = false;
  std::list<Connection*> connections_;                        // in accept order
  std::map<std::string, std::size_t, std::less<>> per_peer_;  // listed connections by address
  std::optional<std::chrono::steady_clock::time_point> last_shed_warning_;
};

class ServerHandle final : public Server {
 public:
  explicit ServerHandle(std::shared_ptr<State> state) : state_(std::move(state)) {}
  ~ServerHandle() override {
    // Without a completed stop(): stop accepting and close idle connections; the coroutines
    // still running keep the State alive until they end.
    asio::dispatch(state_->strand(), [state = state_] { state->begin_stop(); });
  }
  ServerHandle(const ServerHandle&) = delete;
  ServerHandle& operator=(const ServerHandle&) = delete;

  std::uint16_t port() const override { return state_->port(); }
  std::uint64_t certificate_generation() const override { return state_->certificate_generation(); }
  std::shared_ptr<const ConnectionStats> connection_stats() const override {
    return state_->stats();
  }
  asio::awaitable<void> stop(std::chrono::milliseconds grace) override {
    // On the strand, where the server's state lives, whatever executor the caller runs on.
    std::shared_ptr<State> state = state_;
    co_await asio::co_spawn(state->strand(), state->stop(grace), asio::use_awaitable);
  }

 private:
  std::shared_ptr<State> state_;
};

}  // namespace

std::string_view to_string(ShedReason reason) noexcept {
  switch (reason) {
    case ShedReason::kIdle:
      return "idle";
    case ShedReason::kIncomplete:
      return "incomplete";
    case ShedReason::kPeerLimit:
      return "peer_limit";
    case ShedReason::kFull:
      return "full";
    case ShedReason::kHandshakeTimeout:
      return "handshake_timeout";
    case ShedReason::kHeaderTimeout:
      return "header_timeout";
  }
  return "unknown";
}

Server::~Server() = default;

Result<std::unique_ptr<Server>> Server::start(asio::any_io_executor executor, ServerOptions options,
                                              Handler handler) {
  auto state = std::make_shared<State>(std::move(executor), std::move(options), std::move(handler));
  NMO_TRY(state->listen());
  return std::unique_ptr<Server>(std::make_unique<ServerHandle>(std::move(state)));
}

}  // namespace nmo::http
