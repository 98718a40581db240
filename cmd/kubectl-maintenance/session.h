// Session: one API server connection of kubectl-maintenance and the reads its commands share,
// with every failure already turned into a one-line message and an exit status (cli::Failure).
//
// Threading: used by one command coroutine on the io_context's single thread.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/json/value.hpp>

#include "cli/api_error.h"
#include "cli/outcome.h"
#include "http/asio.h"
#include "kube/client/client.h"
#include "operator/api/maintenance_plan.h"
#include "operator/api/node_maintenance.h"

namespace nmo::cli {

class Session {
 public:
  Session(kube::Client& client, std::string server) : client_(client), server_(std::move(server)) {}

  [[nodiscard]] kube::Client& client() { return client_; }
  [[nodiscard]] const std::string& server() const { return server_; }
  [[nodiscard]] Failure failure(const Error& error) const {
    return describe_api_error(error, server_);
  }

  // GET `path`; std::nullopt when it answers 404.
  asio::awaitable<Outcome<std::optional<boost::json::value>>> get_optional(std::string path);
  // True when GET `path` (an API group/version root) answers, false on 404.
  asio::awaitable<Outcome<bool>> served(std::string path);

  // The NodeMaintenance `name` (raw and decoded); a missing one is exit 3
  // (`NodeMaintenance "x" not found`), a missing API exit 4.
  struct Maintenance {
    boost::json::value raw;
    op::NodeMaintenance nm;
  };
  asio::awaitable<Outcome<Maintenance>> maintenance(std::string name);
  // The NodeMaintenance `name`, std::nullopt when it does not exist.
  asio::awaitable<Outcome<std::optional<Maintenance>>> find_maintenance(std::string name);
  // Every NodeMaintenance: the raw list and the decoded items, oldest first.
  struct Maintenances {
    boost::json::value raw;
    std::vector<op::NodeMaintenance> items;
  };
  asio::awaitable<Outcome<Maintenances>> maintenances();

  // The MaintenancePlan `name` (raw and decoded); a missing one is exit 3
  // (`MaintenancePlan "x" not found`), a missing MaintenancePlan API exit 4.
  struct Plan {
    boost::json::value raw;
    op::MaintenancePlan plan;
  };
  asio::awaitable<Outcome<Plan>> maintenance_plan(std::string name);

 private:
  // Whether the NodeMaintenance API is served (a 404 on it means the CRD is missing).
  asio::awaitable<Outcome<Done>> require_api();

  kube::Client& client_;
  std::string server_;
};

// The URL path of the NodeMaintenance collection, or of one object.
[[nodiscard]] std::string maintenance_path(const std::string& name = {});

}  // namespace nmo::cli
