#include "http/testing/test_pki.h"

#include <string>

#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "base/testing/status_matchers.h"
#include "http/internal/openssl_handles.h"

namespace nmo::http::test {
namespace {

using internal::X509Ptr;

X509Ptr parse(const std::string& pem) {
  internal::BioPtr bio = internal::make_memory_bio(pem);
  return X509Ptr(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

std::string subject_entry(X509* certificate, int nid) {
  char text[256] = {};
  X509_NAME_get_text_by_NID(X509_get_subject_name(certificate), nid, text, sizeof text);
  return text;
}

// Verifies `leaf` against `ca` for `purpose` (X509_PURPOSE_SSL_SERVER / _CLIENT).
int verify(X509* leaf, X509* ca, int purpose) {
  const internal::X509StorePtr store(X509_STORE_new());
  const internal::X509StoreCtxPtr context(X509_STORE_CTX_new());
  if (!store || !context || X509_STORE_add_cert(store.get(), ca) != 1 ||
      X509_STORE_CTX_init(context.get(), store.get(), leaf, nullptr) != 1 ||
      X509_STORE_CTX_set_purpose(context.get(), purpose) != 1) {
    return -1;
  }
  return X509_verify_cert(context.get()) == 1 ? X509_V_OK : X509_STORE_CTX_get_error(context.get());
}

TEST(TestPkiTest, ServerCertificateCarriesTheRequestedNames) {
  ASSERT_OK_AND_ASSIGN(const TestPki pki,
                       make_test_pki({.server_dns_names = {"localhost", "kube.example"},
                                      .server_ips = {"127.0.0.1", "::1"}}));
  const X509Ptr server = parse(pki.server_cert_pem);
  ASSERT_TRUE(server);
  EXPECT_EQ(X509_check_host(server.get(), "kube.example", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_host(server.get(), "localhost", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_host(server.get(), "other.example", 0, 0, nullptr), 0);
  EXPECT_EQ(X509_check_ip_asc(server.get(), "127.0.0.1", 0), 1);
  EXPECT_EQ(X509_check_ip_asc(server.get(), "::1", 0), 1);
  EXPECT_EQ(X509_check_ip_asc(server.get(), "127.0.0.2", 0), 0);
  EXPECT_EQ(subject_entry(server.get(), NID_commonName), "nmo-test-server");
}

TEST(TestPkiTest, CertificatesChainToTheCaForTheirPurpose) {
  ASSERT_OK_AND_ASSIGN(const TestPki pki, make_test_pki());
  const X509Ptr ca = parse(pki.ca_cert_pem);
  const X509Ptr server = parse(pki.server_cert_pem);
  const X509Ptr client = parse(pki.client_cert_pem);
  ASSERT_TRUE(ca && server && client);
  EXPECT_EQ(verify(server.get(), ca.get(), X509_PURPOSE_SSL_SERVER), X509_V_OK);
  EXPECT_EQ(verify(client.get(), ca.get(), X509_PURPOSE_SSL_CLIENT), X509_V_OK);
  EXPECT_EQ(verify(client.get(), ca.get(), X509_PURPOSE_SSL_SERVER), X509_V_ERR_INVALID_PURPOSE);
}

TEST(TestPkiTest, ClientSubjectHasTheKubernetesUserAndGroup) {
  ASSERT_OK_AND_ASSIGN(const TestPki pki,
                       make_test_pki({.client_common_name = "system:node:worker-1",
                                      .client_organization = "system:nodes"}));
  const X509Ptr client = parse(pki.client_cert_pem);
  ASSERT_TRUE(client);
  EXPECT_EQ(subject_entry(client.get(), NID_commonName), "system:node:worker-1");
  EXPECT_EQ(subject_entry(client.get(), NID_organizationName), "system:nodes");
}

TEST(TestPkiTest, EachCallMakesADifferentCa) {
  ASSERT_OK_AND_ASSIGN(const TestPki first, make_test_pki());
  ASSERT_OK_AND_ASSIGN(const TestPki second, make_test_pki());
  EXPECT_NE(first.ca_cert_pem, second.ca_cert_pem);
  const X509Ptr other_ca = parse(second.ca_cert_pem);
  const X509Ptr server = parse(first.server_cert_pem);
  EXPECT_EQ(verify(server.get(), other_ca.get(), X509_PURPOSE_SSL_SERVER),
            X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);
}

TEST(TestPkiTest, KeysArePkcs8Pem) {
  ASSERT_OK_AND_ASSIGN(const TestPki pki, make_test_pki());
  EXPECT_TRUE(pki.server_key_pem.starts_with("-----BEGIN PRIVATE KEY-----\n"));
  EXPECT_TRUE(pki.client_key_pem.starts_with("-----BEGIN PRIVATE KEY-----\n"));
  EXPECT_TRUE(pki.ca_cert_pem.starts_with("-----BEGIN CERTIFICATE-----\n"));
}

}  // namespace
}  // namespace nmo::http::test
