// LineStream over chunked bodies: lines split across chunks, several per chunk, CRLF, a last line
// without newline, non-2xx bodies via read_rest(), broken streams, and reuse of the connection
// after a clean end.
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/testing/status_matchers.h"
#include "http/client.h"
#include "http/testing/run.h"
#include "http/testing/test_server.h"

namespace nmo::http {
namespace {

using ::testing::ElementsAre;

constexpr std::chrono::seconds kIdle(30);

class ClientStreamTest : public ::testing::Test {
 protected:
  void start(test::Handler handler, ClientOptions options = {}) {
    ASSERT_OK_AND_ASSIGN(server_, test::TestServer::start({.handler = std::move(handler)}));
    options.host = "127.0.0.1";
    options.port = server_->port();
    options.tls = false;
    ASSERT_OK_AND_ASSIGN(client_, Client::create(context_.get_executor(), options));
  }

  Result<std::unique_ptr<LineStream>> watch() {
    return test::run(context_, client_->stream({.method = Method::kGet,
                                                .target = "/api/v1/pods?watch=1",
                                                .headers = {{"Accept", "application/json"}}}));
  }

  Result<std::optional<std::string>> next(LineStream& stream) {
    return test::run(context_, stream.next_line(kIdle));
  }

  // Every line until the clean end of the body.
  std::vector<std::string> drain(LineStream& stream) {
    std::vector<std::string> lines;
    for (;;) {
      Result<std::optional<std::string>> line = next(stream);
      EXPECT_OK(line);
      if (!line || !*line) {
        return lines;
      }
      lines.push_back(**line);
    }
  }

  std::string label() const { return "GET /api/v1/pods?watch=1 on 127.0.0.1:" + server_->port(); }

  asio::io_context context_;
  std::unique_ptr<test::TestServer> server_;
  std::unique_ptr<Client> client_;
};

TEST_F(ClientStreamTest, LinesArriveAsTheServerSendsThem) {
  start(test::stream_pushed());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<LineStream> stream, watch());
  EXPECT_EQ(stream->status(), 200U);
  EXPECT_EQ(stream->header("content-type"), "application/json");
  EXPECT_EQ(stream->header("transfer-encoding"), "chunked");

  server_->push("{\"type\":\"ADDED\",\"n\":1}\n{\"type\":\"MOD");
  ASSERT_OK_AND_ASSIGN(std::optional<std::string> line, next(*stream));
  EXPECT_EQ(line, "{\"type\":\"ADDED\",\"n\":1}");
  server_->push("IFIED\",\"n\":2}\n");
  ASSERT_OK_AND_ASSIGN(line, next(*stream));
  EXPECT_EQ(line, "{\"type\":\"MODIFIED\",\"n\":2}");
}

TEST_F(ClientStreamTest, SplitAndPackedLinesAndALastLineWithoutNewline) {
  start(test::stream_pushed());
  server_->push("{\"n\":");
  server_->push("1}");
  server_->push("\n{\"n\":2}\n{\"n\":3}\n{\"n");
  server_->push("\":4}\n");
  server_->push("{\"n\":5}\n{\"n\":6}");
  server_->push_end();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<LineStream> stream, watch());
  EXPECT_THAT(drain(*stream), ElementsAre("{\"n\":1}", "{\"n\":2}", "{\"n\":3}", "{\"n\":4}",
                                          "{\"n\":5}", "{\"n\":6}"));
  ASSERT_OK_AND_ASSIGN(const std::optional<std::string> after_end, next(*stream));
  EXPECT_EQ(after_end, std::nullopt);
}

TEST_F(ClientStreamTest, CrLfLineEndsAreTolerated) {
  start(test::stream_pushed());
  server_->push("first\r\nsecond\r");
  server_->push("\nthird\r\n");
  server_->push_end();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<LineStream> stream, watch());
  EXPECT_THAT(drain(*stream), ElementsAre("first", "second", "third"));
}

TEST_F(ClientStreamTest, NonSuccessBodyIsReadWithReadRest) {
  const std::string status =
      R"({"kind":"Status","status":"Failure","reason":"Expired","code":410})";
  start(test::answer_with(
      {.status = 410, .headers = {{"Content-Type", "application/json"}}, .body = status}));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<LineStream> stream, watch());
  EXPECT_EQ(stream->status(), 410U);
  ASSERT_OK_AND_ASSIGN(const std::string rest,
                       test::run(context_, stream->read_rest(std::chrono::seconds(30))));
  EXPECT_EQ(rest, status);
}

TEST_F(ClientStreamTest, ReadRestIncludesLinesNotYetReturned) {
  start(test::stream_pushed(500));
  server_->push("a\nb\n");
  server_->push("c");
  server_->push_end();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<LineStream> stream, watch());
  ASSERT_OK_AND_ASSIGN(const std::optional<std::string> first, next(*stream));
  EXPECT_EQ(first, "a");
  ASSERT_OK_AND_ASSIGN(const std::string rest,
                       test::run(context_, stream->read_rest(std::chrono::seconds(30))));
  EXPECT_EQ(rest, "b\nc");
}

TEST_F(ClientStreamTest, EmptyBodyEndsAtOnce) {
  start(test::answer_with({.status = 200, .headers = {}, .body = ""}));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<LineStream> stream, watch());
  ASSERT_OK_AND_ASSIGN(const std::optional<std::string> line, next(*stream));
  EXPECT_EQ(line, std::nullopt);
}

TEST_F(ClientStreamTest, ConnectionLostMidStreamIsUnavailable) {
  start([](test::ServerConnection& connection) -> asio::awaitable<void> {
    const std::optional<test::ReceivedRequest> request = co_await connection.read_request();
    if (request) {
      std::string cut_short = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
                              test::chunk("{\"n\":1}\n{\"n\"");
      const bool sent = co_await connection.write_raw(std::move(cut_short));
      EXPECT_TRUE(sent);
    }
  });
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<LineStream> stream, watch());
  ASSERT_OK_AND_ASSIGN(const std::optional<std::string> line, next(*stream));
  EXPECT_EQ(line, "{\"n\":1}");
  const Result<std::optional<std::string>> broken = next(*stream);
  ASSERT_FALSE(broken.has_value());
  EXPECT_EQ(broken.error(), Error(ErrorCode::kUnavailable,
                                  label() + ": read body: connection closed by the server"));
  EXPECT_EQ(next(*stream).error(), broken.error());
}

TEST_F(ClientStreamTest, OverlongLineIsRefused) {
  // The line cap is its own, below the body cap.
  start(test::stream_pushed(), {.max_body_bytes = 1024, .max_line_bytes = 16});
  server_->push("{\"n\":1}\n");
  server_->push(std::string(40, 'x'));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<LineStream> stream, watch());
  ASSERT_OK_AND_ASSIGN(const std::optional<std::string> line, next(*stream));
  EXPECT_EQ(line, "{\"n\":1}");
  const Result<std::optional<std::string>> overlong = next(*stream);
  ASSERT_FALSE(overlong.has_value());
  EXPECT_EQ(overlong.error(), Error(ErrorCode::kInvalid, label() + ": line longer than 16 bytes"));
}

TEST(ClientOptionsTest, DefaultCapsFitThePodsMemoryLimit) {
  // deploy/ gives the operator 256Mi; a body is held more than once while it is decoded, and a
  // watch line carries one object (docs/operations.md, "Memory").
  const ClientOptions defaults;
  EXPECT_EQ(defaults.max_body_bytes, std::size_t{64} << 20U);
  EXPECT_EQ(defaults.max_line_bytes, std::size_t{16} << 20U);
  EXPECT_LT(defaults.max_line_bytes, defaults.max_body_bytes);
}

TEST_F(ClientStreamTest, ConnectionIsReusedAfterACleanEnd) {
  start(test::stream_pushed());
  server_->push("only\n");
  server_->push_end();
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<LineStream> stream, watch());
    EXPECT_THAT(drain(*stream), ElementsAre("only"));
  }
  ASSERT_OK_AND_ASSIGN(const Response response,
                       test::run(context_, client_->send({.method = Method::kGet, .target = "/"})));
  EXPECT_EQ(response.status, 200U);
  EXPECT_EQ(server_->accepted_connections(), 1);
  EXPECT_EQ(server_->requests().size(), 2U);
}

TEST_F(ClientStreamTest, ConnectionIsNotReusedWhileStreaming) {
  start(test::stream_pushed());
  server_->push("first\n");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<LineStream> first, watch());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<LineStream> second, watch());
  EXPECT_EQ(server_->accepted_connections(), 2);
  first.reset();
  second.reset();
}

}  // namespace
}  // namespace nmo::http
