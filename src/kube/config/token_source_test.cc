#include "kube/config/token_source.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/log.h"
#include "base/testing/status_matchers.h"
#include "kube/config/testing/temp_dir.h"

namespace nmo::kube {
namespace {

using std::chrono::milliseconds;
using testing::TempDir;

TEST(StaticTokenTest, ReturnsTheTokenUnchanged) {
  const std::shared_ptr<TokenSource> source = static_token(" abc ");
  ASSERT_OK_AND_ASSIGN(const std::string token, source->token());
  EXPECT_EQ(token, " abc ");
}

TEST(FileTokenTest, ReadsAndTrimsTrailingWhitespace) {
  const TempDir dir;
  const std::string path = dir.write("token", "abc.def\r\n \t\n");
  const std::shared_ptr<TokenSource> source = file_token(path, milliseconds(0));
  ASSERT_OK_AND_ASSIGN(const std::string token, source->token());
  EXPECT_EQ(token, "abc.def");
}

TEST(FileTokenTest, MissingFileWithoutPreviousTokenIsNotFound) {
  const TempDir dir;
  const std::shared_ptr<TokenSource> source = file_token(dir.file("token"), milliseconds(0));
  const Result<std::string> token = source->token();
  ASSERT_FALSE(token.has_value());
  EXPECT_EQ(token.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(token.error().message,
            "cannot read " + dir.file("token") + ": No such file or directory");
}

TEST(FileTokenTest, EmptyFileWithoutPreviousTokenIsInvalid) {
  const TempDir dir;
  const std::string path = dir.write("token", " \n");
  const Result<std::string> token = file_token(path, milliseconds(0))->token();
  ASSERT_FALSE(token.has_value());
  EXPECT_EQ(token.error().code, ErrorCode::kInvalid);
  EXPECT_EQ(token.error().message, "token file " + path + " is empty");
}

TEST(FileTokenTest, RereadsAfterRotation) {
  const TempDir dir;
  const std::string path = dir.write("token", "first-token\n");
  const std::shared_ptr<TokenSource> source = file_token(path, milliseconds(0));
  ASSERT_OK_AND_ASSIGN(const std::string first, source->token());
  EXPECT_EQ(first, "first-token");
  // A different size changes the stamp even when mtime has a coarse resolution.
  dir.write("token", "the-rotated-token\n");
  ASSERT_OK_AND_ASSIGN(const std::string second, source->token());
  EXPECT_EQ(second, "the-rotated-token");
}

TEST(FileTokenTest, RereadsAfterSymlinkSwapLikeTheKubelet) {
  // The kubelet writes a new ..data directory and swaps a symlink: same size, new inode.
  const TempDir dir;
  dir.write("v1/token", "aaaa");
  dir.write("v2/token", "bbbb");
  ASSERT_EQ(::symlink(dir.file("v1/token").c_str(), dir.file("token").c_str()), 0);
  const std::shared_ptr<TokenSource> source = file_token(dir.file("token"), milliseconds(0));
  ASSERT_OK_AND_ASSIGN(const std::string first, source->token());
  EXPECT_EQ(first, "aaaa");
  ASSERT_EQ(::symlink(dir.file("v2/token").c_str(), dir.file("token.tmp").c_str()), 0);
  ASSERT_EQ(std::rename(dir.file("token.tmp").c_str(), dir.file("token").c_str()), 0);
  ASSERT_OK_AND_ASSIGN(const std::string second, source->token());
  EXPECT_EQ(second, "bbbb");
}

TEST(FileTokenTest, DoesNotRecheckWithinTheInterval) {
  const TempDir dir;
  const std::string path = dir.write("token", "first-token");
  const std::shared_ptr<TokenSource> source = file_token(path, std::chrono::hours(1));
  ASSERT_OK_AND_ASSIGN(const std::string first, source->token());
  EXPECT_EQ(first, "first-token");
  dir.write("token", "the-rotated-token");
  ASSERT_OK_AND_ASSIGN(const std::string second, source->token());
  EXPECT_EQ(second, "first-token");
}

TEST(FileTokenTest, KeepsLastGoodTokenWhenRereadFails) {
  std::vector<std::string> lines;
  log::set_writer([&lines](std::string_view line) { lines.emplace_back(line); });
  const TempDir dir;
  const std::string path = dir.write("token", "good-token");
  const std::shared_ptr<TokenSource> source = file_token(path, milliseconds(0));
  ASSERT_OK(source->token());
  ASSERT_EQ(std::remove(path.c_str()), 0);
  ASSERT_OK_AND_ASSIGN(const std::string after_delete, source->token());
  EXPECT_EQ(after_delete, "good-token");
  dir.write("token", "   \n");
  ASSERT_OK_AND_ASSIGN(const std::string after_empty, source->token());
  EXPECT_EQ(after_empty, "good-token");
  dir.write("token", "new-token");
  ASSERT_OK_AND_ASSIGN(const std::string after_fix, source->token());
  EXPECT_EQ(after_fix, "new-token");
  log::set_writer({});
  ASSERT_EQ(lines.size(), 2U);
  EXPECT_NE(lines[0].find("No such file or directory"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("is empty"), std::string::npos) << lines[1];
}

TEST(FileTokenTest, ConcurrentCallersAllSeeAToken) {
  const TempDir dir;
  const std::string path = dir.write("token", "shared-token");
  const std::shared_ptr<TokenSource> source = file_token(path, milliseconds(0));
  std::vector<std::thread> threads;
  std::vector<std::string> seen(4);
  for (std::size_t i = 0; i < seen.size(); ++i) {
    threads.emplace_back([&source, &seen, i] {
      for (int n = 0; n < 200; ++n) {
        Result<std::string> token = source->token();
        seen[i] = token.has_value() ? *token : token.error().message;
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  for (const std::string& token : seen) {
    EXPECT_EQ(token, "shared-token");
  }
}

}  // namespace
}  // namespace nmo::kube
