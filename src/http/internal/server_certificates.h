// The serving certificate of a TLS Server: a TLS 1.2+ server context built from a PEM chain and
// key read from two files, and re-built when the files change (certificate rotation by
// cert-manager, a Secret volume update, or an admin replacing the files).
//
// Changes are detected by polling each file's identity and times (device, inode, size, change
// and modification times, following symlinks, so a Secret volume's atomic `..data` symlink swap
// counts as a change). A pair that fails to load is reported once per change of the files, and
// the context in use stays.
//
// Threading: current() and generation() may be called from any thread; poll() from one thread
// (or strand) at a time.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include <boost/asio/ssl/context.hpp>

#include "base/result.h"
#include "http/asio.h"

namespace nmo::http::internal {

// A TLS server context: TLS 1.2 or newer, AEAD cipher suites with forward secrecy for TLS 1.2
// (Go's defaults), no renegotiation, no compression, the server's cipher preference. Fails with
// kInvalid naming the file the bad PEM came from (`cert_name`, `key_name`):
//   "/certs/tls.crt: not a PEM certificate chain (no start line)"
//   "/certs/tls.key: does not match the certificate in /certs/tls.crt"
// Encrypted keys are refused, never prompted for. A non-empty `client_ca_pem` makes every
// handshake require a client certificate that chains to one of its certificates (kInvalid
// naming `client_ca_name` when it holds none).
[[nodiscard]] Result<std::shared_ptr<asio::ssl::context>> make_server_tls_context(
    std::string_view cert_pem, std::string_view key_pem, std::string_view cert_name,
    std::string_view key_name, std::string_view client_ca_pem, std::string_view client_ca_name);

// The whole of a small file (a PEM certificate or key), or kInvalid naming it.
[[nodiscard]] Result<std::string> read_pem_file(const std::string& path);

// What identifies one version of a file on disk.
struct FileStamp {
  bool exists = false;
  dev_t device = 0;
  ino_t inode = 0;
  off_t size = 0;
  std::int64_t modified_ns = 0;
  std::int64_t changed_ns = 0;

  friend bool operator==(const FileStamp&, const FileStamp&) = default;
};

// The stamp of `path` now (exists = false when it cannot be stat'ed).
[[nodiscard]] FileStamp stamp_of(const std::string& path);

// The current serving context and the files it comes from.
class ServerCertificates {
 public:
  // What client certificates every context asks for: none when `pem` is empty, else one signed
  // by a CA in `pem` (`name` says where it came from, for errors).
  struct ClientCa {
    std::string pem;
    std::string name;
  };

  // Loads the pair. kInvalid when a file cannot be read or the pair is unusable (the message
  // names the file).
  [[nodiscard]] static Result<std::unique_ptr<ServerCertificates>> load(std::string cert_path,
                                                                        std::string key_path,
                                                                        ClientCa client_ca);

  // A pair held in memory, never reloaded (poll() always says kUnchanged). kInvalid when it is
  // unusable (the message says "certificate_pem" or "key_pem").
  [[nodiscard]] static Result<std::unique_ptr<ServerCertificates>> from_memory(
      std::string_view cert_pem, std::string_view key_pem, ClientCa client_ca);

  // The context new handshakes use. Connections keep the pointer they took for their lifetime.
  [[nodiscard]] std::shared_ptr<asio::ssl::context> current() const;

  // 1 after load(), plus one per successful reload.
  [[nodiscard]] std::uint64_t generation() const noexcept { return generation_.load(); }

  // What poll() did.
  enum class PollResult {
    kUnchanged,  // the files are as last seen
    kReloaded,   // they changed and the new pair is in use
    kFailed,     // they changed but the new pair is unusable: last_error() says why
  };

  // Compares the files with what was seen last and, when either changed, loads the pair.
  PollResult poll();

  // Why the last poll() failed ("" before any failure).
  [[nodiscard]] const std::string& last_error() const noexcept { return last_error_; }

 private:
  ServerCertificates(std::string cert_path, std::string key_path, ClientCa client_ca)
      : cert_path_(std::move(cert_path)),
        key_path_(std::move(key_path)),
        client_ca_(std::move(client_ca)) {}

  // Reads both files and builds a context.
  [[nodiscard]] Result<std::shared_ptr<asio::ssl::context>> read_pair() const;

  const std::string cert_path_;
  const std::string key_path_;
  const ClientCa client_ca_;
  FileStamp cert_stamp_;  // as seen by the last load or poll (poll()'s thread only)
  FileStamp key_stamp_;
  std::string last_error_;

  mutable std::mutex mutex_;
  std::shared_ptr<asio::ssl::context> current_;  // guarded by mutex_
  std::atomic<std::uint64_t> generation_{0};
};

}  // namespace nmo::http::internal
