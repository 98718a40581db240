#include "http/testing/test_server.h"

#include <condition_variable>
#include <deque>
#include <list>
#include <mutex>
#include <thread>
#include <utility>
#include <variant>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <openssl/ssl.h>

#include "http/internal/openssl_handles.h"
#include "http/testing/server_stream_io.h"

namespace nmo::http::test {
namespace {

using Tcp = asio::ip::tcp;
using TlsStream = TlsServerStream;
using AnyStream = std::variant<PlainServerStream, TlsServerStream>;

constexpr auto kAsTuple = asio::as_tuple(asio::use_awaitable);

std::optional<std::string> name_entry(X509_NAME* name, int nid) {
  const int index = X509_NAME_get_index_by_NID(name, nid, -1);
  if (index < 0) {
    return std::nullopt;
  }
  const ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, index));
  return std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(data)),
                     static_cast<std::size_t>(ASN1_STRING_length(data)));
}

HandshakeInfo handshake_info(SSL* ssl) {
  HandshakeInfo info;
  if (const char* sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name)) {
    info.sni = sni;
  }
  if (const internal::X509Ptr peer(SSL_get1_peer_certificate(ssl)); peer) {
    X509_NAME* subject = X509_get_subject_name(peer.get());
    info.client_cn = name_entry(subject, NID_commonName);
    info.client_org = name_entry(subject, NID_organizationName);
  }
  return info;
}

class Server;

class Connection final : public ServerConnection {
 public:
  Connection(Server& server, AnyStream stream) : server_(server), stream_(std::move(stream)) {}

  asio::awaitable<bool> handshake() {
    auto [error] = co_await std::get<TlsStream>(stream_).async_handshake(
        asio::ssl::stream_base::server, kAsTuple);
    co_return !error;
  }
  SSL* ssl() { return std::get<TlsStream>(stream_).native_handle(); }

  asio::awaitable<std::optional<ReceivedRequest>> read_request() override;
  asio::awaitable<bool> write_response(ServerResponse response) override;
  asio::awaitable<bool> write_raw(std::string bytes) override;
  asio::awaitable<std::optional<std::string>> next_pushed() override;
  asio::awaitable<void> wait_until_stopped() override;
  void close() override {
    std::visit([](auto& stream) { beast::get_lowest_layer(stream).close(); }, stream_);
  }

 private:
  Server& server_;
  AnyStream stream_;
  beast::flat_buffer buffer_;
};

class Server final : public TestServer {
 public:
  explicit Server(TestServerOptions options)
      : options_(std::move(options)),
        acceptor_(context_),
        stopped_(context_, asio::steady_timer::time_point::max()),
        pushed_signal_(context_, asio::steady_timer::time_point::max()) {}

  ~Server() override {
    asio::post(context_, [this] {
      stopping_ = true;
      boost::system::error_code ignored;
      acceptor_.close(ignored);
      for (Connection* connection : live_) {
        connection->close();
      }
      stopped_.cancel();
      pushed_signal_.cancel();
    });
    if (thread_.joinable()) {
      thread_.join();
    }
  }
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  Result<void> listen() {
    if (options_.cert_pem.empty() != options_.key_pem.empty()) {
      return Error(ErrorCode::kInvalid, "cert_pem and key_pem must be set together");
    }
    if (!options_.cert_pem.empty()) {
      NMO_TRY(make_tls_context());
    }
    boost::system::error_code error;
    const Tcp::endpoint endpoint(asio::ip::make_address_v4("127.0.0.1"), 0);
    if (acceptor_.open(endpoint.protocol(), error); !error) {
      if (acceptor_.bind(endpoint, error); !error) {
        acceptor_.listen(asio::socket_base::max_listen_connections, error);
      }
    }
    if (error) {
      return Error(ErrorCode::kUnavailable, "listen on 127.0.0.1: " + error.message());
    }
    port_ = std::to_string(acceptor_.local_endpoint().port());
    asio::co_spawn(context_, accept_loop(), asio::detached);
    thread_ = std::thread([this] { context_.run(); });
    return {};
  }

  std::string port() const override { return port_; }

  int accepted_connections() const override {
    const std::lock_guard lock(mutex_);
    return accepted_;
  }
  int closed_connections() const override {
    const std::lock_guard lock(mutex_);
    return closed_;
  }
  std::vector<ReceivedRequest> requests() const override {
    const std::lock_guard lock(mutex_);
    return requests_;
  }
  std::vector<HandshakeInfo> handshakes() const override {
    const std::lock_guard lock(mutex_);
    return handshakes_;
  }

  bool wait_for_requests(std::size_t count, std::chrono::milliseconds limit) const override {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, limit, [&] { return requests_.size() >= count; });
  }
  bool wait_for_closed_connections(int count, std::chrono::milliseconds limit) const override {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, limit, [&] { return closed_ >= count; });
  }

  void push(std::string bytes) override { enqueue(std::move(bytes)); }
  void push_end() override { enqueue(std::nullopt); }

  // Server thread only, from here on.

  void record(const ReceivedRequest& request) {
    const std::lock_guard lock(mutex_);
    requests_.push_back(request);
    changed_.notify_all();
  }

  asio::awaitable<std::optional<std::string>> next_pushed() {
    for (;;) {
      std::optional<std::optional<std::string>> item;
      {
        const std::lock_guard lock(mutex_);
        if (!pushed_.empty()) {
          item = std::move(pushed_.front());
          pushed_.pop_front();
          pushed_ended_ = !item->has_value();
        } else if (pushed_ended_) {
          item.emplace(std::nullopt);
        }
      }
      if (item) {
        co_return *std::move(item);
      }
      if (stopping_) {
        co_return std::nullopt;
      }
      // Woken by push() or by the stop; the expiry stays at max, so waiters never cancel each
      // other.
      (void)co_await pushed_signal_.async_wait(kAsTuple);
    }
  }

  asio::awaitable<void> wait_until_stopped() {
    if (!stopping_) {
      (void)co_await stopped_.async_wait(kAsTuple);
    }
  }

 private:
  Result<void> make_tls_context() {
    tls_.emplace(asio::ssl::context::tls_server);
    SSL_CTX_set_min_proto_version(tls_->native_handle(), TLS1_2_VERSION);
    boost::system::error_code error;
    tls_->use_certificate_chain(asio::buffer(options_.cert_pem), error);
    if (error) {
      return Error(ErrorCode::kInvalid, "cert_pem: " + error.message());
    }
    tls_->use_private_key(asio::buffer(options_.key_pem), asio::ssl::context::pem, error);
    if (error) {
      return Error(ErrorCode::kInvalid, "key_pem: " + error.message());
    }
    if (!options_.client_ca_pem.empty()) {
      tls_->add_certificate_authority(asio::buffer(options_.client_ca_pem), error);
      if (error) {
        return Error(ErrorCode::kInvalid, "client_ca_pem: " + error.message());
      }
      tls_->set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert);
    }
    return {};
  }

  void enqueue(std::optional<std::string> item) {
    {
      const std::lock_guard lock(mutex_);
      pushed_.push_back(std::move(item));
    }
    asio::post(context_, [this] { pushed_signal_.cancel(); });
  }

  asio::awaitable<void> accept_loop() {
    for (;;) {
      auto [error, socket] = co_await acceptor_.async_accept(kAsTuple);
      if (error || stopping_) {
        co_return;
      }
      {
        const std::lock_guard lock(mutex_);
        ++accepted_;
      }
      asio::co_spawn(context_, serve(std::move(socket)), asio::detached);
    }
  }

  asio::awaitable<void> serve(Tcp::socket socket) {
    beast::tcp_stream tcp(std::move(socket));
    std::optional<Connection> connection;
    if (tls_) {
      connection.emplace(*this, AnyStream(std::in_place_type<TlsStream>, std::move(tcp), *tls_));
    } else {
      connection.emplace(*this, AnyStream(std::move(tcp)));
    }
    const auto live = live_.insert(live_.end(), &*connection);
    bool ready = true;
    if (tls_) {
      ready = co_await connection->handshake();
      if (ready) {
        const std::lock_guard lock(mutex_);
        handshakes_.push_back(handshake_info(connection->ssl()));
      }
    }
    if (ready && !stopping_) {
      co_await options_.handler(*connection);
    }
    connection->close();
    live_.erase(live);
    const std::lock_guard lock(mutex_);
    ++closed_;
    changed_.notify_all();
  }

  TestServerOptions options_;
  asio::io_context context_;
  std::optional<asio::ssl::context> tls_;
  Tcp::acceptor acceptor_;
  asio::steady_timer stopped_;
  asio::steady_timer pushed_signal_;
  std::string port_;
  std::thread thread_;

  // Server thread only.
  bool stopping_ = false;
  std::list<Connection*> live_;

  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  int accepted_ = 0;
  int closed_ = 0;
  std::vector<ReceivedRequest> requests_;
  std::vector<HandshakeInfo> handshakes_;
  std::deque<std::optional<std::string>> pushed_;
  bool pushed_ended_ = false;
};

asio::awaitable<std::optional<ReceivedRequest>> Connection::read_request() {
  RequestParser parser;
  parser.body_limit(boost::none);
  const boost::system::error_code error = co_await std::visit(
      [&](auto& stream) { return test::read_request(stream, buffer_, parser); }, stream_);
  if (error) {
    co_return std::nullopt;
  }
  const auto& message = parser.get();
  ReceivedRequest request{.method = std::string(message.method_string()),
                          .target = std::string(message.target()),
                          .headers = {},
                          .body = message.body(),
                          .keep_alive = message.keep_alive()};
  for (const auto& field : message) {
    request.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  server_.record(request);
  co_return request;
}

asio::awaitable<bool> Connection::write_response(ServerResponse response) {
  ServerMessage message;
  message.version(11);
  message.result(response.status);
  for (const auto& [name, value] : response.headers) {
    message.insert(name, value);
  }
  message.body() = std::move(response.body);
  message.keep_alive(response.after != AfterResponse::kClose);
  message.prepare_payload();
  const boost::system::error_code error = co_await std::visit(
      [&](auto& stream) { return test::write_response(stream, message); }, stream_);
  if (response.after != AfterResponse::kKeepAlive) {
    close();
  }
  co_return !error;
}

asio::awaitable<bool> Connection::write_raw(std::string bytes) {
  const boost::system::error_code error =
      co_await std::visit([&](auto& stream) { return test::write_bytes(stream, bytes); }, stream_);
  co_return !error;
}

asio::awaitable<std::optional<std::string>> Connection::next_pushed() {
  co_return co_await server_.next_pushed();
}

asio::awaitable<void> Connection::wait_until_stopped() { co_await server_.wait_until_stopped(); }

}  // namespace

ServerConnection::~ServerConnection() = default;
TestServer::~TestServer() = default;

Result<std::unique_ptr<TestServer>> TestServer::start(TestServerOptions options) {
  auto server = std::make_unique<Server>(std::move(options));
  NMO_TRY(server->listen());
  return std::unique_ptr<TestServer>(std::move(server));
}

Handler answer(std::function<ServerResponse(const ReceivedRequest&)> respond) {
  return [respond = std::move(respond)](ServerConnection& connection) -> asio::awaitable<void> {
    for (;;) {
      std::optional<ReceivedRequest> request = co_await connection.read_request();
      if (!request) {
        co_return;
      }
      ServerResponse response = respond(*request);
      if (!request->keep_alive && response.after == AfterResponse::kKeepAlive) {
        response.after = AfterResponse::kClose;
      }
      const AfterResponse after = response.after;
      const bool written = co_await connection.write_response(std::move(response));
      if (!written || after != AfterResponse::kKeepAlive) {
        co_return;
      }
    }
  };
}

Handler answer_with(ServerResponse response) {
  return answer([response = std::move(response)](const ReceivedRequest&) { return response; });
}

Handler never_answer() {
  return [](ServerConnection& connection) -> asio::awaitable<void> {
    co_await connection.wait_until_stopped();
  };
}

Handler stream_pushed(unsigned status) {
  return [status](ServerConnection& connection) -> asio::awaitable<void> {
    for (;;) {
      const std::optional<ReceivedRequest> request = co_await connection.read_request();
      if (!request) {
        co_return;
      }
      std::string header = "HTTP/1.1 " + std::to_string(status) +
                           " Streaming\r\nContent-Type: application/json\r\n"
                           "Transfer-Encoding: chunked\r\n\r\n";
      bool written = co_await connection.write_raw(std::move(header));
      for (;;) {
        if (!written) {
          co_return;
        }
        std::optional<std::string> bytes = co_await connection.next_pushed();
        if (!bytes) {
          break;
        }
        std::string framed = chunk(*bytes);
        written = co_await connection.write_raw(std::move(framed));
      }
      std::string last_chunk = "0\r\n\r\n";
      written = co_await connection.write_raw(std::move(last_chunk));
      if (!written) {
        co_return;
      }
    }
  };
}

std::string chunk(std::string_view data) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string size;
  for (std::size_t n = data.size(); n > 0 || size.empty(); n /= 16) {
    size.insert(size.begin(), kHex[n % 16]);
  }
  return size + "\r\n" + std::string(data) + "\r\n";
}

}  // namespace nmo::http::test
