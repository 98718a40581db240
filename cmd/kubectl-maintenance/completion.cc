#include "completion.h"

#include <cstdio>

#include "kube/api/node.h"
#include "operator/api/maintenance_plan.h"

namespace nmo::cli {

void print_candidates(const std::vector<std::string>& candidates, const std::string& prefix) {
  std::fputs(candidate_lines(candidates, prefix).c_str(), stdout);
}

void print_directive() {
  std::fputs(directive_line().c_str(), stdout);
  std::fflush(stdout);
}

asio::awaitable<int> print_cluster_candidates(Session& session, CompletionQuery query) {
  std::vector<std::string> names;
  if (query.kind == CompletionQuery::Kind::kNodes) {
    kube::ListOptions all;
    std::string cluster_scope;
    auto nodes = co_await session.client().list_all<kube::Node>(cluster_scope, all);
    if (nodes) names = node_candidates(nodes->items);
  } else if (query.kind == CompletionQuery::Kind::kPlans) {
    kube::ListOptions all;
    std::string cluster_scope;
    auto plans = co_await session.client().list_all<op::MaintenancePlan>(cluster_scope, all);
    if (plans) names = plan_candidates(plans->items);
  } else {
    auto all = co_await session.maintenances();
    if (all) names = maintenance_candidates(query.kind, all->items);
  }
  print_candidates(names, query.prefix);
  co_return 0;
}

}  // namespace nmo::cli
