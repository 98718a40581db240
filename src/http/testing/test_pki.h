// A throw-away PKI for tests, generated at run time with the OpenSSL API (nothing on disk, no
// openssl CLI): a CA, a server certificate for chosen DNS names and IP addresses, and a client
// certificate with a chosen CN and O (how Kubernetes names users and groups), all as PEM text
// ready for TlsOptions and the test server.
//
// Threading: make_test_pki() is safe to call from any thread.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"

namespace nmo::http::test {

// What to put in the generated certificates.
struct TestPkiOptions {
  // Subject alternative names of the server certificate. Both empty: no SAN extension.
  std::vector<std::string> server_dns_names = {"localhost"};
  std::vector<std::string> server_ips = {"127.0.0.1"};
  // Subject CN of the server certificate (never used for verification; see tls_context.h).
  std::string server_common_name = "nmo-test-server";
  // Subject of the client certificate: CN is the Kubernetes user, O its group.
  std::string client_common_name = "nmo-test-client";
  std::string client_organization = "nmo-testers";  // empty: no O
};

// The generated material, PEM-encoded. Keys are unencrypted PKCS#8 P-256 keys; certificates are
// valid from an hour ago for a day.
struct TestPki {
  std::string ca_cert_pem;
  std::string ca_key_pem;
  std::string server_cert_pem;  // signed by the CA: serverAuth, the SANs from the options
  std::string server_key_pem;
  std::string client_cert_pem;  // signed by the CA: clientAuth
  std::string client_key_pem;
};

// A fresh CA with its server and client certificates. Fails with kInternal when OpenSSL does
// (the message carries OpenSSL's reason).
[[nodiscard]] Result<TestPki> make_test_pki(const TestPkiOptions& options = {});

}  // namespace nmo::http::test
