#include "http/client.h"

#include <utility>

#include "http/internal/client_impl.h"

namespace nmo::http {

Client::~Client() = default;

Result<std::unique_ptr<Client>> Client::create(asio::any_io_executor executor,
                                               ClientOptions options) {
  return internal::make_beast_client(std::move(executor), std::move(options));
}

}  // namespace nmo::http
