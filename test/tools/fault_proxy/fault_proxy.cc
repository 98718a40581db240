#include "test/tools/fault_proxy/fault_proxy.h"

#include <fcntl.h>
#include <sys/socket.h>

#include <array>
#include <cstdio>
#include <functional>
#include <future>
#include <limits>
#include <string_view>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <openssl/ssl.h>

#include "http/asio.h"

namespace nmo::fault_proxy {
namespace {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace ssl = boost::asio::ssl;
using Tcp = asio::ip::tcp;
using SteadyClock = std::chrono::steady_clock;
using Request = bhttp::request<bhttp::string_body>;
using ReusePort = asio::detail::socket_option::boolean<SOL_SOCKET, SO_REUSEPORT>;

constexpr auto kAsTuple = asio::as_tuple(asio::use_awaitable);
// The operator's requests are small; the API server's own limit on a request body is 3 MiB.
constexpr std::uint32_t kRequestHeaderLimit = 64 * 1024;
constexpr std::uint64_t kRequestBodyLimit = std::uint64_t{8} << 20U;
// How much of a response is read from upstream before it is written downstream.
constexpr std::size_t kPieceBytes = 16 * 1024;

// The test forks kubectl and the operator while the proxy runs: a socket inherited by a child
// would outlive close() there (a "closed" listener still taking connections, a dropped
// connection still open), so every socket is closed on exec.
void close_on_exec(int fd) { (void)::fcntl(fd, F_SETFD, FD_CLOEXEC); }

// What fail_next() asked for.
struct Injection {
  int remaining = 0;
  unsigned status = 0;
  std::optional<std::chrono::seconds> retry_after;
};

// "/api/v1/namespaces/<ns>/pods/<name>/eviction" of a POST: the namespace and pod, else nullopt.
std::optional<std::pair<std::string, std::string>> eviction_target(const Request& request) {
  if (request.method() != bhttp::verb::post) return std::nullopt;
  std::string_view target(request.target().data(), request.target().size());
  target = target.substr(0, target.find('?'));
  constexpr std::string_view kPrefix = "/api/v1/namespaces/";
  constexpr std::string_view kSuffix = "/eviction";
  if (!target.starts_with(kPrefix) || !target.ends_with(kSuffix)) return std::nullopt;
  target.remove_prefix(kPrefix.size());
  target.remove_suffix(kSuffix.size());
  const std::size_t slash = target.find("/pods/");
  if (slash == std::string_view::npos) return std::nullopt;
  return std::make_pair(std::string(target.substr(0, slash)),
                        std::string(target.substr(slash + 6)));
}

// A Status body as kube-apiserver writes it for these codes.
std::string status_body(unsigned status, std::optional<std::chrono::seconds> retry_after) {
  const bool throttled = status == 429;
  std::string reason = throttled ? "TooManyRequests" : "ServiceUnavailable";
  if (status == 500) reason = "InternalError";
  const std::string message = throttled ? "Too many requests, please try again later."
                                        : "fault proxy: injected " + std::to_string(status);
  std::string details;
  if (retry_after)
    details = R"(,"details":{"retryAfterSeconds":)" + std::to_string(retry_after->count()) + "}";
  return R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":")" +
         message + R"(","reason":")" + reason + "\"" + details +
         ",\"code\":" + std::to_string(status) + "}";
}

class Proxy;

// One downstream connection and the upstream connection it forwards to. Lives on the proxy's
// thread; serve() owns it while it runs.
class Connection {
 public:
  Connection(Proxy& proxy, std::uint64_t id, Tcp::socket downstream)
      : proxy_(proxy),
        id_(id),
        downstream_(std::move(downstream)),
        hold_timer_(downstream_.get_executor()) {}

  static asio::awaitable<void> serve(std::shared_ptr<Connection> self);

  // Closes both sides at once; every pending operation ends with an error.
  void close() {
    closed_ = true;
    boost::system::error_code ignored;
    downstream_.close(ignored);
    if (upstream_) upstream_->lowest_layer().close(ignored);
    hold_timer_.cancel();
  }

 private:
  asio::awaitable<void> relay_requests();
  asio::awaitable<bool> hold_while_stalled();
  asio::awaitable<bool> ensure_upstream();
  asio::awaitable<bool> answer(Request request, Injection injection);
  asio::awaitable<bool> forward(Request request);

  Proxy& proxy_;
  const std::uint64_t id_;
  Tcp::socket downstream_;
  std::optional<ssl::stream<Tcp::socket>> upstream_;
  asio::steady_timer hold_timer_;
  beast::flat_buffer down_buffer_;
  beast::flat_buffer up_buffer_;
  bool closed_ = false;
};

class Proxy final : public FaultProxy {
 public:
  explicit Proxy(Upstream upstream)
      : upstream_(std::move(upstream)),
        tls_(ssl::context::tls_client),
        acceptor_(io_),
        reopen_timer_(io_),
        work_(asio::make_work_guard(io_)) {}

  ~Proxy() override {
    if (thread_.joinable()) {
      on_io([this] {
        stopping_ = true;
        boost::system::error_code ignored;
        acceptor_.close(ignored);
        reopen_timer_.cancel();
        close_all();
        return 0;
      });
      work_.reset();
      thread_.join();
    }
  }
  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;

  Result<void> init() {
    boost::system::error_code error;
    tls_.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                     ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
    tls_.add_certificate_authority(asio::buffer(upstream_.ca_pem), error);
    if (error) {
      return Error(ErrorCode::kInvalid,
                   "fault proxy: the upstream CA does not load: " + error.message());
    }
    tls_.set_verify_mode(ssl::verify_peer);
    boost::system::error_code error_port;
    if (!bind(acceptor_, 0) || !listen()) {
      return Error(ErrorCode::kUnavailable, "fault proxy: cannot listen on 127.0.0.1");
    }
    port_ = acceptor_.local_endpoint(error_port).port();
    thread_ = std::thread([this] { io_.run(); });
    return {};
  }

  std::uint16_t port() const override { return port_; }
  std::string url() const override { return "http://127.0.0.1:" + std::to_string(port_); }

  std::int64_t drop_all() override {
    return on_io([this] {
      const std::int64_t closed = close_all();
      counters_.connections_dropped += closed;
      return closed;
    });
  }

  void stall(std::chrono::milliseconds span) override {
    on_io([this, span] {
      stall_until_ = SteadyClock::now() + span;
      stall_below_id_ = next_id_;
      return 0;
    });
  }

  void refuse(std::chrono::milliseconds span) override {
    on_io([this, span] {
      refuse_until_ = SteadyClock::now() + span;
      if (!refusing_) {
        // A socket bound to the port but not listening: the kernel answers SYNs with RST.
        Tcp::acceptor holder(io_);
        if (!bind(holder, port_)) return 0;
        boost::system::error_code ignored;
        acceptor_.close(ignored);
        acceptor_ = std::move(holder);
        refusing_ = true;
        asio::co_spawn(io_, listen_later(), asio::detached);
      }
      return 0;
    });
  }

  void fail_next(int count, unsigned status,
                 std::optional<std::chrono::seconds> retry_after) override {
    on_io([this, count, status, retry_after] {
      injection_ = Injection{.remaining = count, .status = status, .retry_after = retry_after};
      return 0;
    });
  }

  std::optional<SteadyClock::time_point> last_injected_at() const override {
    return on_io([this] { return last_injected_at_; });
  }

  Counters counters() const override {
    return on_io([this] {
      Counters now = counters_;
      now.open_connections = static_cast<std::int64_t>(open_.size());
      return now;
    });
  }

  std::vector<Eviction> evictions() const override {
    return on_io([this] { return evictions_; });
  }

  // ---- for Connection, on the proxy's thread ----

  const Upstream& upstream() const { return upstream_; }
  ssl::context& tls() { return tls_; }

  // When connection `id` must hold its bytes back until, or nullopt.
  std::optional<SteadyClock::time_point> stalled_until(std::uint64_t id) const {
    if (id >= stall_below_id_ || SteadyClock::now() >= stall_until_) return std::nullopt;
    return stall_until_;
  }

  // Takes one injected answer, if fail_next() asked for more. Counted now, before it is written,
  // so a client that has read the answer finds it counted.
  std::optional<Injection> take_injection() {
    if (injection_.remaining <= 0) return std::nullopt;
    --injection_.remaining;
    ++counters_.responses_injected;
    last_injected_at_ = SteadyClock::now();
    return injection_;
  }

  // An injected answer was written (`delivered`) or failed to be.
  void injected(const Request& request, unsigned status, bool delivered) {
    record_eviction(request, status, /*injected=*/true, delivered);
  }

  void forwarded() { ++counters_.requests_forwarded; }

  void record_eviction(const Request& request, unsigned status, bool injected, bool delivered) {
    auto target = eviction_target(request);
    if (!target) return;
    evictions_.push_back(Eviction{.namespace_ = std::move(target->first),
                                  .pod = std::move(target->second),
                                  .status = status,
                                  .injected = injected,
                                  .delivered = delivered,
                                  .answered_at = SteadyClock::now()});
  }

  void forget(std::uint64_t id) { open_.erase(id); }

 private:
  // Runs `task` on the proxy's thread and returns its result. Never call it from that thread.
  template <typename Task>
  auto on_io(Task task) const -> std::invoke_result_t<Task> {
    std::packaged_task<std::invoke_result_t<Task>()> packaged(std::move(task));
    auto result = packaged.get_future();
    asio::post(io_, [&packaged] { packaged(); });
    return result.get();
  }

  // Binds `socket` to 127.0.0.1:`port` (0: a free one). SO_REUSEPORT lets refuse() bind a
  // second socket to the port while the listener still holds it, so the port is never free
  // for another process to take while connections are refused.
  static bool bind(Tcp::acceptor& socket, std::uint16_t port) {
    boost::system::error_code error;
    const Tcp::endpoint endpoint(asio::ip::make_address_v4("127.0.0.1"), port);
    socket.open(endpoint.protocol(), error);
    if (!error) close_on_exec(socket.native_handle());
    if (!error) socket.set_option(Tcp::acceptor::reuse_address(true), error);
    if (!error) socket.set_option(ReusePort(true), error);
    if (!error) socket.bind(endpoint, error);
    if (error) {
      std::fprintf(stderr, "fault proxy: cannot bind 127.0.0.1:%u: %s\n", unsigned{port},
                   error.message().c_str());
      boost::system::error_code ignored;
      socket.close(ignored);
      return false;
    }
    return true;
  }

  bool listen() {
    boost::system::error_code error;
    acceptor_.listen(asio::socket_base::max_listen_connections, error);
    if (error) {
      std::fprintf(stderr, "fault proxy: cannot listen: %s\n", error.message().c_str());
      return false;
    }
    asio::co_spawn(io_, accept_loop(), asio::detached);
    return true;
  }

  asio::awaitable<void> accept_loop() {
    for (;;) {
      auto [error, socket] = co_await acceptor_.async_accept(kAsTuple);
      if (error) co_return;  // closed: refuse() or the destructor
      close_on_exec(socket.native_handle());
      const std::uint64_t id = next_id_++;
      ++counters_.connections_accepted;
      auto connection = std::make_shared<Connection>(*this, id, std::move(socket));
      open_.emplace(id, connection.get());
      asio::co_spawn(io_, Connection::serve(std::move(connection)), asio::detached);
    }
  }

  asio::awaitable<void> listen_later() {
    while (!stopping_ && SteadyClock::now() < refuse_until_) {
      reopen_timer_.expires_at(refuse_until_);
      [[maybe_unused]] auto [ignored] = co_await reopen_timer_.async_wait(kAsTuple);
    }
    refusing_ = false;
    if (!stopping_) (void)listen();
  }

  std::int64_t close_all() {
    std::vector<Connection*> open;
    for (const auto& [id, connection] : open_) open.push_back(connection);
    for (Connection* connection : open) connection->close();
    return static_cast<std::int64_t>(open.size());
  }

  const Upstream upstream_;
  ssl::context tls_;
  mutable asio::io_context io_;
  Tcp::acceptor acceptor_;
  asio::steady_timer reopen_timer_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::thread thread_;
  std::uint16_t port_ = 0;  // set before the thread starts, never changed after

  // Owned by the proxy's thread.
  bool stopping_ = false;
  std::uint64_t next_id_ = 0;
  std::unordered_map<std::uint64_t, Connection*> open_;  // not owning: serve() owns each
  SteadyClock::time_point stall_until_{};
  std::uint64_t stall_below_id_ = 0;
  SteadyClock::time_point refuse_until_{};
  bool refusing_ = false;
  Injection injection_;
  std::optional<SteadyClock::time_point> last_injected_at_;
  Counters counters_;
  std::vector<Eviction> evictions_;
};

asio::awaitable<void> Connection::serve(std::shared_ptr<Connection> self) {
  co_await self->relay_requests();
  self->close();
  self->proxy_.forget(self->id_);
}

asio::awaitable<void> Connection::relay_requests() {
  for (;;) {
    bhttp::request_parser<bhttp::string_body> parser;
    parser.header_limit(kRequestHeaderLimit);
    parser.body_limit(kRequestBodyLimit);
    auto [read_error, read_bytes] =
        co_await bhttp::async_read(downstream_, down_buffer_, parser, kAsTuple);
    if (read_error) co_return;
    Request request = parser.release();
    const bool go_on = co_await hold_while_stalled();
    if (!go_on) co_return;
    bool keep_alive = false;
    if (std::optional<Injection> injection = proxy_.take_injection(); injection) {
      keep_alive = co_await answer(std::move(request), *injection);
    } else {
      keep_alive = co_await forward(std::move(request));
    }
    if (!keep_alive || closed_) co_return;
  }
}

asio::awaitable<bool> Connection::hold_while_stalled() {
  for (;;) {
    if (closed_) co_return false;
    const std::optional<SteadyClock::time_point> until = proxy_.stalled_until(id_);
    if (!until) co_return true;
    hold_timer_.expires_at(*until);
    [[maybe_unused]] auto [ignored] = co_await hold_timer_.async_wait(kAsTuple);
  }
}

asio::awaitable<bool> Connection::ensure_upstream() {
  if (upstream_) co_return !closed_;
  const Upstream& to = proxy_.upstream();
  Tcp::resolver resolver(downstream_.get_executor());
  auto [resolve_error, endpoints] = co_await resolver.async_resolve(to.host, to.port, kAsTuple);
  if (resolve_error || closed_) co_return false;
  upstream_.emplace(downstream_.get_executor(), proxy_.tls());
  boost::system::error_code not_an_address;
  (void)asio::ip::make_address(to.host, not_an_address);
  if (not_an_address &&
      SSL_ctrl(upstream_->native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
               const_cast<char*>(to.host.c_str())) != 1) {
    co_return false;
  }
  upstream_->set_verify_callback(ssl::host_name_verification(to.host));
  if (endpoints.empty()) co_return false;
  const Tcp::endpoint endpoint = *endpoints.begin();
  boost::system::error_code open_error;
  upstream_->lowest_layer().open(endpoint.protocol(), open_error);
  if (open_error) co_return false;
  close_on_exec(upstream_->lowest_layer().native_handle());
  auto [connect_error] = co_await upstream_->lowest_layer().async_connect(endpoint, kAsTuple);
  if (connect_error || closed_) co_return false;
  auto [handshake_error] = co_await upstream_->async_handshake(ssl::stream_base::client, kAsTuple);
  if (handshake_error) {
    std::fprintf(stderr, "fault proxy: TLS handshake with %s:%s failed: %s\n", to.host.c_str(),
                 to.port.c_str(), handshake_error.message().c_str());
  }
  co_return !handshake_error && !closed_;
}

asio::awaitable<bool> Connection::answer(Request request, Injection injection) {
  bhttp::response<bhttp::string_body> response{static_cast<bhttp::status>(injection.status),
                                               request.version()};
  response.set(bhttp::field::content_type, "application/json");
  if (injection.retry_after) {
    response.set(bhttp::field::retry_after, std::to_string(injection.retry_after->count()));
  }
  if (injection.status == 429) {
    // kube-apiserver's API Priority & Fairness names the flow schema and priority level.
    response.set("X-Kubernetes-PF-FlowSchema-UID", "fault-proxy");
    response.set("X-Kubernetes-PF-PriorityLevel-UID", "fault-proxy");
  }
  response.body() = status_body(injection.status, injection.retry_after);
  response.keep_alive(request.keep_alive());
  response.prepare_payload();
  auto [write_error, written] = co_await bhttp::async_write(downstream_, response, kAsTuple);
  proxy_.injected(request, injection.status, !write_error);
  co_return !write_error && request.keep_alive();
}

asio::awaitable<bool> Connection::forward(Request request) {
  const bool connected = co_await ensure_upstream();
  if (!connected) co_return false;  // the client sees its connection close, as on an outage
  proxy_.forwarded();
  unsigned status = 0;
  bool delivered = false;
  // Records an eviction and its answer (if any) whichever way this ends.
  struct Record {
    Proxy& proxy;
    const Request& request;
    const unsigned& status;
    const bool& delivered;
    ~Record() { proxy.record_eviction(request, status, /*injected=*/false, delivered); }
  } record{proxy_, request, status, delivered};

  auto [write_error, written] = co_await bhttp::async_write(*upstream_, request, kAsTuple);
  if (write_error) co_return false;

  bhttp::response_parser<bhttp::buffer_body> parser;
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());  // watches run for minutes
  if (request.method() == bhttp::verb::head) parser.skip(true);
  auto [header_error, header_bytes] =
      co_await bhttp::async_read_header(*upstream_, up_buffer_, parser, kAsTuple);
  if (header_error) co_return false;
  status = parser.get().result_int();

  bhttp::response_serializer<bhttp::buffer_body> serializer{parser.get()};
  bool go_on = co_await hold_while_stalled();
  if (!go_on) co_return false;
  auto [head_error, head_bytes] =
      co_await bhttp::async_write_header(downstream_, serializer, kAsTuple);
  if (head_error) co_return false;
  std::array<char, kPieceBytes> piece{};
  while (!parser.is_done()) {
    parser.get().body().data = piece.data();
    parser.get().body().size = piece.size();
    auto [read_error, read_bytes] =
        co_await bhttp::async_read_some(*upstream_, up_buffer_, parser, kAsTuple);
    if (read_error && read_error != bhttp::error::need_buffer) co_return false;
    const std::size_t got = piece.size() - parser.get().body().size;
    // An empty piece would go out as a zero-length chunk, which ends a chunked body.
    if (got == 0 && !parser.is_done()) continue;
    parser.get().body().size = got;
    parser.get().body().data = got == 0 ? nullptr : piece.data();  // nullptr: only the end
    parser.get().body().more = !parser.is_done();
    go_on = co_await hold_while_stalled();
    if (!go_on) co_return false;
    auto [body_error, body_bytes] = co_await bhttp::async_write(downstream_, serializer, kAsTuple);
    if (body_error && body_error != bhttp::error::need_buffer) co_return false;
  }
  if (!serializer.is_done()) {
    parser.get().body().data = nullptr;
    parser.get().body().size = 0;
    parser.get().body().more = false;
    auto [end_error, end_bytes] = co_await bhttp::async_write(downstream_, serializer, kAsTuple);
    if (end_error && end_error != bhttp::error::need_buffer) co_return false;
  }
  delivered = true;
  co_return parser.get().keep_alive() && request.keep_alive();
}

}  // namespace

FaultProxy::~FaultProxy() = default;

Result<std::unique_ptr<FaultProxy>> FaultProxy::start(Upstream upstream) {
  auto proxy = std::make_unique<Proxy>(std::move(upstream));
  NMO_TRY(proxy->init());
  return std::unique_ptr<FaultProxy>(std::move(proxy));
}

}  // namespace nmo::fault_proxy
