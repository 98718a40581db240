// TempDir: a fresh directory under $TMPDIR (or /tmp) for file-based tests, removed with
// everything in it when the object goes out of scope. Test-only (nmo::kube_config_testing).
//
// Threading: use one TempDir from one thread; distinct objects are independent.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>

#include <gtest/gtest.h>

namespace nmo::kube::testing {

class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");  // NOLINT(concurrency-mt-unsafe): tests only
    std::string pattern =
        std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/nmo-kube-config-XXXXXX";
    const char* created = ::mkdtemp(pattern.data());
    if (created == nullptr) {
      ADD_FAILURE() << "mkdtemp failed for " << pattern;
    }
    path_ = pattern;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }

  // The directory itself.
  [[nodiscard]] const std::string& path() const { return path_; }

  // "<dir>/<name>".
  [[nodiscard]] std::string file(std::string_view name) const {
    return path_ + "/" + std::string(name);
  }

  // Writes `contents` to "<dir>/<name>" (creating parent directories) and returns that path.
  std::string write(std::string_view name, std::string_view contents) const {
    std::string target = file(name);
    std::filesystem::create_directories(std::filesystem::path(target).parent_path());
    std::ofstream out(target, std::ios::binary | std::ios::trunc);
    out << contents;
    out.close();
    EXPECT_TRUE(out.good()) << "cannot write " << target;
    return target;
  }

 private:
  std::string path_;
};

}  // namespace nmo::kube::testing
