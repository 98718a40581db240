// The client's TLS setup: the shared asio::ssl::context built from TlsOptions, the per-connection
// identity check (SNI and the name or address the certificate must carry), and readable TLS
// failure descriptions.
//
// Threading: make_client_tls_context() is a pure function. The context it returns is shared by
// every connection of one client and only read after creation (OpenSSL allows that from several
// threads). set_expected_peer() and describe_tls_error() touch one connection's SSL object: call
// them where that connection is used (its strand).
#pragma once

#include <memory>
#include <string>

#include <boost/asio/ssl/context.hpp>
#include <boost/system/error_code.hpp>
#include <openssl/ssl.h>

#include "base/result.h"
#include "http/asio.h"
#include "http/client_options.h"

namespace nmo::http::internal {

// A TLS client context: TLS 1.2 or newer, peer verification against options.ca_pem (or the
// system trust store) unless insecure_skip_verify, and the client certificate chain and key when
// given. Fails with kInvalid naming the unusable field ("ca_pem: not a PEM certificate bundle
// (no start line)"). Encrypted private keys are refused, never prompted for.
[[nodiscard]] Result<std::shared_ptr<asio::ssl::context>> make_client_tls_context(
    const TlsOptions& options);

// Prepares one connection before its handshake. SNI carries `name` unless it is an IP literal
// (RFC 6066 section 3 forbids addresses in SNI). When `verify`, the handshake fails unless the
// server certificate has a DNS SAN matching `name` or, for an IP literal, an IP SAN equal to it.
// The subject CN is never used (Go, and so Kubernetes, ignore it too).
[[nodiscard]] Result<void> set_expected_peer(SSL* ssl, const std::string& name, bool verify);

// One TLS failure as text: OpenSSL's reason ("tlsv13 alert certificate required (SSL
// routines)"), except that certificate verification failures name the verifier's reason
// instead: "certificate verify failed (IP address mismatch)". `ssl` may be null.
[[nodiscard]] std::string describe_tls_error(const boost::system::error_code& error,
                                             const SSL* ssl);

}  // namespace nmo::http::internal
