#include "http/internal/line_stream_impl.h"

#include <atomic>
#include <optional>
#include <utility>
#include <vector>

#include "http/internal/line_splitter.h"

namespace nmo::http::internal {
namespace {

// Bytes taken from the connection per read; watch events are usually a few KiB.
constexpr std::size_t kReadChunk = 16 * 1024;

// Everything one stream owns. Shared by the LineStream, the coroutines reading on the strand and
// handlers posted by cancel(), so each may finish after the others.
struct StreamState {
  StreamState(std::shared_ptr<ClientState> client_state, Exchange exchange,
              std::string request_label)
      : client(std::move(client_state)),
        connection(std::move(exchange.connection)),
        parser(std::move(exchange.parser)),
        label(std::move(request_label)),
        lines(client->options.max_line_bytes) {}

  std::shared_ptr<ClientState> client;
  // Strand-confined from here on, except `cancelled`.
  LeasedConnection connection;
  std::unique_ptr<ResponseParser> parser;
  std::string label;
  LineSplitter lines;
  std::vector<char> buffer = std::vector<char>(kReadChunk);
  bool body_done = false;
  std::optional<Error> failure;  // sticky: every call after an error returns it
  std::atomic<bool> cancelled{false};
};

Error cancelled_error(const StreamState& stream) {
  return {ErrorCode::kCancelled, stream.label + ": cancelled"};
}

// Strand: ends the stream with `error`, closing the connection.
Error fail(StreamState& stream, Error error) {
  stream.failure = error;
  stream.connection.give_back(false);
  return error;
}

// Strand: reads the next piece of the body into `lines`; at the clean end of the body the
// connection goes back to the pool.
asio::awaitable<Result<void>> read_more(StreamState& stream, Clock::time_point deadline,
                                        std::string timeout_text) {
  stream.connection->expires_at(deadline);
  auto [error, bytes] = co_await stream.connection->read_body(*stream.parser, stream.buffer);
  stream.lines.append(std::string_view(stream.buffer.data(), bytes));
  if (error) {
    bool cancelled = stream.cancelled;
    if (!cancelled) {
      cancelled = co_await this_coroutine_cancelled();
    }
    co_return fail(stream, io_error(*stream.client, *stream.connection, stream.label, "read body",
                                    error, cancelled, timeout_text));
  }
  if (stream.parser->is_done()) {
    stream.body_done = true;
    const bool reusable = !stream.cancelled && stream.parser->get().keep_alive() &&
                          !stream.parser->need_eof() && !stream.connection->has_unread_input();
    stream.connection.give_back(reusable);
  }
  co_return Result<void>();
}

// The reasons next_line() and read_rest() stop before reading, if any.
std::optional<Error> stopped(const StreamState& stream) {
  if (stream.cancelled || stream.client->shut_down) {
    return cancelled_error(stream);
  }
  return stream.failure;
}

asio::awaitable<Result<std::optional<std::string>>> next_line_on_strand(
    std::shared_ptr<StreamState> stream, std::chrono::milliseconds idle_timeout) {
  co_await asio::this_coro::throw_if_cancelled(false);
  for (;;) {
    if (std::optional<Error> error = stopped(*stream)) {
      co_return *std::move(error);
    }
    if (std::optional<std::string> line = stream->lines.next_line()) {
      co_return line;
    }
    if (stream->lines.overflowed()) {
      co_return fail(*stream,
                     Error(ErrorCode::kInvalid,
                           stream->label + ": line longer than " +
                               std::to_string(stream->client->options.max_line_bytes) + " bytes"));
    }
    if (stream->body_done) {
      std::string last = stream->lines.take_remaining();
      if (last.empty()) {
        co_return std::optional<std::string>();
      }
      if (last.ends_with('\r')) {
        last.pop_back();
      }
      co_return std::optional<std::string>(std::move(last));
    }
    std::string timeout_text = "no data for " + std::to_string(idle_timeout.count()) + "ms";
    Result<void> read =
        co_await read_more(*stream, Clock::now() + idle_timeout, std::move(timeout_text));
    if (!read) {
      co_return std::move(read).error();
    }
  }
}

asio::awaitable<Result<std::string>> read_rest_on_strand(std::shared_ptr<StreamState> stream,
                                                         std::chrono::milliseconds timeout) {
  co_await asio::this_coro::throw_if_cancelled(false);
  const Clock::time_point deadline = Clock::now() + timeout;
  for (;;) {
    if (std::optional<Error> error = stopped(*stream)) {
      co_return *std::move(error);
    }
    if (stream->lines.buffered_bytes() > stream->client->options.max_body_bytes) {
      co_return fail(*stream,
                     Error(ErrorCode::kInvalid,
                           stream->label + ": body exceeds " +
                               std::to_string(stream->client->options.max_body_bytes) + " bytes"));
    }
    if (stream->body_done) {
      co_return stream->lines.take_remaining();
    }
    std::string timeout_text = timed_out_after(timeout);
    Result<void> read = co_await read_more(*stream, deadline, std::move(timeout_text));
    if (!read) {
      co_return std::move(read).error();
    }
  }
}

class BeastLineStream final : public LineStream {
 public:
  BeastLineStream(unsigned status, Headers headers, std::shared_ptr<StreamState> state)
      : LineStream(status, std::move(headers)), state_(std::move(state)) {}

  ~BeastLineStream() override {
    // The connection must be closed and unregistered on the strand.
    const Strand strand = state_->client->strand;
    asio::post(strand, [state = std::move(state_)]() mutable { state.reset(); });
  }
  BeastLineStream(const BeastLineStream&) = delete;
  BeastLineStream& operator=(const BeastLineStream&) = delete;

  asio::awaitable<Result<std::optional<std::string>>> next_line(
      std::chrono::milliseconds idle_timeout) override {
    const asio::cancellation_state caller = co_await asio::this_coro::cancellation_state;
    if (caller.cancelled() != asio::cancellation_type::none) {
      co_return cancelled_error(*state_);
    }
    // Lines already buffered need no trip to the strand: the strand coroutine that filled the
    // buffer has finished (calls never overlap), and cancel() touches only `cancelled`.
    if (!stopped(*state_)) {
      if (std::optional<std::string> line = state_->lines.next_line()) {
        co_return line;
      }
    }
    asio::awaitable<Result<std::optional<std::string>>> task =
        next_line_on_strand(state_, idle_timeout);
    co_return co_await asio::co_spawn(state_->client->strand, std::move(task), asio::use_awaitable);
  }

  asio::awaitable<Result<std::string>> read_rest(std::chrono::milliseconds timeout) override {
    const asio::cancellation_state caller = co_await asio::this_coro::cancellation_state;
    if (caller.cancelled() != asio::cancellation_type::none) {
      co_return cancelled_error(*state_);
    }
    asio::awaitable<Result<std::string>> task = read_rest_on_strand(state_, timeout);
    co_return co_await asio::co_spawn(state_->client->strand, std::move(task), asio::use_awaitable);
  }

  void cancel() override {
    state_->cancelled = true;
    asio::post(state_->client->strand, [state = state_] {
      if (state->connection) {
        state->connection->close();
      }
    });
  }

 private:
  std::shared_ptr<StreamState> state_;
};

}  // namespace

std::unique_ptr<LineStream> make_line_stream(std::shared_ptr<ClientState> state, Exchange exchange,
                                             std::string label) {
  const unsigned status = exchange.parser->get().result_int();
  Headers headers = response_headers(*exchange.parser);
  const bool body_done = exchange.parser->is_done();
  auto stream =
      std::make_shared<StreamState>(std::move(state), std::move(exchange), std::move(label));
  if (body_done) {
    // No body at all (Content-Length: 0): the connection is free again right away.
    stream->body_done = true;
    stream->connection.give_back(stream->parser->get().keep_alive() &&
                                 !stream->connection->has_unread_input());
  }
  return std::make_unique<BeastLineStream>(status, std::move(headers), std::move(stream));
}

}  // namespace nmo::http::internal
