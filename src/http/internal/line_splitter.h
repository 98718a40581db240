// LineSplitter: cuts bytes that arrive in arbitrary pieces (HTTP chunks, socket reads) into
// '\n'-terminated lines, independent of where the pieces break. The pure core of LineStream,
// kept free of I/O so it can be unit-tested and fuzzed.
//
// Threading: a plain value type; one object is used by one thread at a time.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace nmo::http::internal {

// Accumulates bytes and hands out complete lines in order.
class LineSplitter {
 public:
  // `max_line_bytes` bounds the unterminated tail: see overflowed().
  explicit LineSplitter(std::size_t max_line_bytes) : max_line_bytes_(max_line_bytes) {}

  // Adds the next piece of the byte stream.
  void append(std::string_view bytes);

  // The oldest complete line not yet returned, without its "\n" and without a "\r" right before
  // it; std::nullopt when no complete line is buffered.
  [[nodiscard]] std::optional<std::string> next_line();

  // True when the last next_line() found no complete line and the partial line buffered exceeds
  // max_line_bytes: the producer is sending a line too long to hold.
  [[nodiscard]] bool overflowed() const noexcept;

  // Every byte appended but not yet returned by next_line(), unchanged; the splitter is empty
  // afterwards. At the end of a body this is the last line when it had no "\n".
  [[nodiscard]] std::string take_remaining();

  // How many bytes take_remaining() would return.
  [[nodiscard]] std::size_t buffered_bytes() const noexcept { return buffer_.size() - start_; }

 private:
  std::string buffer_;
  std::size_t start_ = 0;    // offset of the first byte not yet returned
  std::size_t scanned_ = 0;  // bytes after start_ already known to hold no '\n'
  std::size_t max_line_bytes_;
};

}  // namespace nmo::http::internal
