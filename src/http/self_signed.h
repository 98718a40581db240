// A self-signed serving certificate made at start-up, for endpoints whose callers do not verify
// it (Prometheus scraping /metrics with insecureSkipVerify, as controller-runtime's secure
// metrics server expects when no certificate is mounted). The key (ECDSA P-256) never leaves
// the process.
//
// Threading: a pure function; safe from any thread.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "base/result.h"

namespace nmo::http {

/// A PEM certificate and its unencrypted PEM private key.
struct CertificatePair {
  std::string certificate_pem;
  std::string key_pem;
};

/// A certificate for `common_name` valid from an hour ago for `validity`, with the subject
/// alternative names `dns_names` and `ip_addresses` (textual IPv4/IPv6). kInvalid for an address
/// that is not an IP; kInternal when OpenSSL fails.
[[nodiscard]] Result<CertificatePair> make_self_signed_certificate(
    const std::string& common_name, const std::vector<std::string>& dns_names,
    const std::vector<std::string>& ip_addresses,
    std::chrono::hours validity = std::chrono::hours(24 * 365));

}  // namespace nmo::http
