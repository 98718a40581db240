// The Boost.Beast + OpenSSL implementation of http::Client, created by Client::create().
//
// Threading: see client.h.
#pragma once

#include <memory>

#include "base/result.h"
#include "http/asio.h"
#include "http/client.h"
#include "http/client_options.h"

namespace nmo::http::internal {

// Validates `options` (host, port, TLS material) and returns a client running on a strand of
// `executor`. kInvalid on unusable options, with a message naming the field.
[[nodiscard]] Result<std::unique_ptr<Client>> make_beast_client(asio::any_io_executor executor,
                                                                ClientOptions options);

}  // namespace nmo::http::internal
