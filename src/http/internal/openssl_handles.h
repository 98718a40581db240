// RAII owners for the OpenSSL handles src/http creates itself (certificates, keys, BIOs, ...),
// and a helper that turns OpenSSL's thread-local error queue into text.
//
// Threading: the handles follow OpenSSL's rules (an object is used by one thread at a time);
// openssl_error_text() reads and clears the calling thread's error queue.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

namespace nmo::http::internal {

// Calls the OpenSSL release function `Free` on the owned pointer.
template <auto Free>
struct OpensslFree {
  template <typename T>
  void operator()(T* handle) const noexcept {
    Free(handle);
  }
};

using BioPtr = std::unique_ptr<BIO, OpensslFree<&BIO_free_all>>;
using X509Ptr = std::unique_ptr<X509, OpensslFree<&X509_free>>;
using X509NamePtr = std::unique_ptr<X509_NAME, OpensslFree<&X509_NAME_free>>;
using X509ExtensionPtr = std::unique_ptr<X509_EXTENSION, OpensslFree<&X509_EXTENSION_free>>;
using X509StorePtr = std::unique_ptr<X509_STORE, OpensslFree<&X509_STORE_free>>;
using X509StoreCtxPtr = std::unique_ptr<X509_STORE_CTX, OpensslFree<&X509_STORE_CTX_free>>;
using EvpPkeyPtr = std::unique_ptr<EVP_PKEY, OpensslFree<&EVP_PKEY_free>>;
using BignumPtr = std::unique_ptr<BIGNUM, OpensslFree<&BN_free>>;

// A read-only memory BIO over `data` (which must outlive it), or nullptr on allocation failure.
[[nodiscard]] BioPtr make_memory_bio(std::string_view data);

// The text written so far to a memory BIO created with BIO_new(BIO_s_mem()).
[[nodiscard]] std::string memory_bio_text(BIO* bio);

// The reasons queued by failed OpenSSL calls on this thread, oldest first, joined with "; "
// ("no start line"), or `fallback` when the queue is empty. Clears the queue.
[[nodiscard]] std::string openssl_error_text(std::string_view fallback = "unknown OpenSSL error");

}  // namespace nmo::http::internal
