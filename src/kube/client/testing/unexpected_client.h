// UnexpectedClient: a kube::Client for unit tests whose every call fails with kInternal
// ("unexpected <call>"); a test's fake derives from it and overrides only the calls the code
// under test is meant to make, so a stray call fails the test instead of passing silently.
//
// Threading: as the fake that derives from it; the calls here touch no state.
#pragma once

#include <memory>
#include <string>

#include <boost/json/value.hpp>

#include "kube/client/client.h"

namespace nmo::kube::testing {

class UnexpectedClient : public Client {
 public:
  const RestConfig& config() const override { return config_; }
  asio::awaitable<Result<boost::json::value>> get_json(std::string /*path*/) override {
    co_return Error(ErrorCode::kInternal, "unexpected get");
  }
  asio::awaitable<Result<boost::json::value>> create(std::string /*path*/,
                                                     boost::json::value /*object*/,
                                                     WriteOptions /*options*/) override {
    co_return Error(ErrorCode::kInternal, "unexpected create");
  }
  asio::awaitable<Result<boost::json::value>> update(std::string /*path*/,
                                                     boost::json::value /*object*/,
                                                     WriteOptions /*options*/) override {
    co_return Error(ErrorCode::kInternal, "unexpected update");
  }
  asio::awaitable<Result<boost::json::value>> patch(std::string /*path*/, PatchType /*type*/,
                                                    std::string /*body*/,
                                                    WriteOptions /*options*/) override {
    co_return Error(ErrorCode::kInternal, "unexpected patch");
  }
  asio::awaitable<Result<void>> remove(std::string /*path*/, DeleteOptions /*options*/) override {
    co_return Error(ErrorCode::kInternal, "unexpected delete");
  }
  asio::awaitable<Result<EvictionResult>> evict(std::string /*namespace_*/, std::string /*name*/,
                                                EvictOptions /*options*/) override {
    co_return Error(ErrorCode::kInternal, "unexpected eviction");
  }
  asio::awaitable<Result<std::string>> list_raw(std::string /*path*/,
                                                ListOptions /*options*/) override {
    co_return Error(ErrorCode::kInternal, "unexpected list");
  }
  asio::awaitable<Result<std::unique_ptr<WatchStream>>> watch(std::string /*path*/,
                                                              WatchOptions /*options*/) override {
    co_return Error(ErrorCode::kInternal, "unexpected watch");
  }
  void shutdown() override {}

 private:
  RestConfig config_;
};

}  // namespace nmo::kube::testing
