// CertDir: a temporary directory holding a serving certificate pair as Server reads it
// (tls.crt, tls.key), with atomic replacement for rotation tests. Removed with its contents when
// the object goes out of scope. Test-only.
//
// Threading: use one CertDir from one thread.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>

#include <gtest/gtest.h>

namespace nmo::http::test {

class CertDir {
 public:
  CertDir() {
    const char* base = std::getenv("TMPDIR");  // NOLINT(concurrency-mt-unsafe): tests only
    std::string pattern =
        std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/nmo-certs-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      ADD_FAILURE() << "mkdtemp failed for " << pattern;
    }
    path_ = pattern;
  }
  CertDir(const CertDir&) = delete;
  CertDir& operator=(const CertDir&) = delete;
  ~CertDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }

  [[nodiscard]] const std::string& path() const { return path_; }

  // Writes both files, each through a temporary file renamed over the old one (as a Secret
  // volume update or cert-manager would, so a reader never sees half a file).
  void write_pair(std::string_view cert_pem, std::string_view key_pem) const {
    write("tls.crt", cert_pem);
    write("tls.key", key_pem);
  }

  // Replaces one file atomically.
  void write(std::string_view name, std::string_view contents) const {
    const std::string target = path_ + "/" + std::string(name);
    const std::string temporary = target + ".tmp";
    {
      std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
      out << contents;
      out.close();
      EXPECT_TRUE(out.good()) << "cannot write " << temporary;
    }
    std::error_code error;
    std::filesystem::rename(temporary, target, error);
    EXPECT_FALSE(error) << "cannot rename " << temporary << ": " << error.message();
  }

 private:
  std::string path_;
};

}  // namespace nmo::http::test
