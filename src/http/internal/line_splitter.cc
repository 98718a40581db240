#include "http/internal/line_splitter.h"

namespace nmo::http::internal {

void LineSplitter::append(std::string_view bytes) {
  if (start_ == buffer_.size()) {
    buffer_.clear();
    start_ = 0;
  } else if (start_ > 0 && start_ >= buffer_.size() / 2) {
    // Returned lines take at least half the buffer: drop them so the buffer tracks the
    // unreturned bytes, not everything ever received.
    buffer_.erase(0, start_);
    start_ = 0;
  }
  buffer_.append(bytes);
}

std::optional<std::string> LineSplitter::next_line() {
  const std::size_t newline = buffer_.find('\n', start_ + scanned_);
  if (newline == std::string::npos) {
    scanned_ = buffer_.size() - start_;
    return std::nullopt;
  }
  std::size_t end = newline;
  if (end > start_ && buffer_[end - 1] == '\r') {
    --end;
  }
  std::string line = buffer_.substr(start_, end - start_);
  start_ = newline + 1;
  scanned_ = 0;
  return line;
}

bool LineSplitter::overflowed() const noexcept { return scanned_ > max_line_bytes_; }

std::string LineSplitter::take_remaining() {
  std::string rest = buffer_.substr(start_);
  buffer_.clear();
  start_ = 0;
  scanned_ = 0;
  return rest;
}

}  // namespace nmo::http::internal
