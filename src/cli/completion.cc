#include "cli/completion.h"

#include <functional>
#include <set>

#include <CLI/CLI.hpp>

#include "cli/maintenance_text.h"

namespace nmo::cli {
namespace {

// The flags that say which cluster to ask, passed on to the loader when names are needed.
const std::set<std::string, std::less<>> kConnectionFlags = {
    "--kubeconfig",     "--context", "--server",   "-s",
    "--token",          "--as",      "--as-group", "--insecure-skip-tls-verify",
    "--request-timeout"};

// The option of `app` (or, for a subcommand, of its parent, as fallthrough allows) named by
// `word` ("--reason", "--reason=x", "-o"), or null.
const CLI::Option* find_option(const CLI::App& app, std::string_view word) {
  const std::string name(word.substr(0, word.find('=')));
  for (const CLI::App* scope = &app; scope != nullptr; scope = scope->get_parent()) {
    for (const CLI::Option* option : scope->get_options()) {
      if (option->nonpositional() && option->check_name(name)) return option;
    }
  }
  return nullptr;
}

bool takes_value(const CLI::Option* option) {
  return option != nullptr && option->get_expected_min() > 0;
}

std::string with_description(const std::string& value, const std::string& description) {
  return description.empty() ? value : value + "\t" + description;
}

// "--reason\twhy (spec.reason)" for each named option of `app` and of its parents; a name both
// have (--help) once, as the subcommand's, which is the one the command line takes.
std::vector<std::string> flag_candidates(const CLI::App& app) {
  std::vector<std::string> out;
  std::set<std::string, std::less<>> offered;
  for (const CLI::App* scope = &app; scope != nullptr; scope = scope->get_parent()) {
    for (const CLI::Option* option : scope->get_options()) {
      if (!option->nonpositional()) continue;
      for (const std::string& name : option->get_lnames()) {
        if (!offered.insert(name).second) continue;
        out.push_back(with_description("--" + name, option->get_description()));
      }
    }
  }
  return out;
}

// The values of -o, read from its help text ("json|yaml|name: ...").
std::vector<std::string> output_candidates(const CLI::Option* option) {
  std::vector<std::string> out;
  const std::string description = option->get_description();
  const std::string formats = description.substr(0, description.find(':'));
  std::size_t start = 0;
  while (start <= formats.size()) {
    const std::size_t bar = formats.find('|', start);
    std::string format = formats.substr(start, bar == std::string::npos ? bar : bar - start);
    if (format.ends_with("TEMPLATE")) format = format.substr(0, format.size() - 8);
    if (!format.empty()) out.push_back(format);
    if (bar == std::string::npos) break;
    start = bar + 1;
  }
  return out;
}

// What the first positional argument of the subcommand `name` is.
CompletionQuery::Kind argument_kind(const std::string& name) {
  if (name == "start" || name == "plan") return CompletionQuery::Kind::kNodes;
  if (name == "status" || name == "watch" || name == "diagnose") {
    return CompletionQuery::Kind::kMaintenances;
  }
  if (name == "stop") return CompletionQuery::Kind::kStopTargets;
  if (name == "done") return CompletionQuery::Kind::kMaintenanceNodes;
  if (name == "plan-status" || name == "resume") return CompletionQuery::Kind::kPlans;
  return CompletionQuery::Kind::kNothing;
}

}  // namespace

CompletionQuery classify_completion(const CLI::App& app, const std::vector<std::string>& words) {
  CompletionQuery query;
  query.prefix = words.empty() ? std::string() : words.back();
  const CLI::App* sub = nullptr;
  std::size_t positionals = 0;
  const CLI::Option* pending = nullptr;  // the option whose value the next word is
  for (std::size_t i = 0; i + 1 < words.size(); ++i) {
    const std::string& word = words[i];
    const CLI::App& scope = sub != nullptr ? *sub : app;
    if (pending != nullptr) {
      if (kConnectionFlags.contains(words[i - 1])) {
        query.global_args.insert(query.global_args.end(), {words[i - 1], word});
      }
      pending = nullptr;
      continue;
    }
    if (word.starts_with("-")) {
      const CLI::Option* option = find_option(scope, word);
      const std::string name = word.substr(0, word.find('='));
      if (word.find('=') != std::string::npos || !takes_value(option)) {
        if (kConnectionFlags.contains(name)) query.global_args.push_back(word);
      } else {
        pending = option;
      }
      continue;
    }
    if (sub == nullptr) {
      for (const CLI::App* candidate : app.get_subcommands({})) {
        if (candidate->get_name() == word) sub = candidate;
      }
      if (sub == nullptr) return query;  // an unknown subcommand: nothing to offer
      continue;
    }
    ++positionals;
  }
  if (pending != nullptr) {
    if (pending->check_name("--output")) {
      query.kind = CompletionQuery::Kind::kStatic;
      query.candidates = output_candidates(pending);
    }
    return query;
  }
  if (query.prefix.starts_with("-")) {
    query.kind = CompletionQuery::Kind::kStatic;
    query.candidates = flag_candidates(sub != nullptr ? *sub : app);
    return query;
  }
  if (sub == nullptr) {
    query.kind = CompletionQuery::Kind::kStatic;
    for (const CLI::App* candidate : app.get_subcommands({})) {
      query.candidates.push_back(
          with_description(candidate->get_name(), candidate->get_description()));
    }
    return query;
  }
  if (positionals == 0) query.kind = argument_kind(sub->get_name());
  return query;
}

std::vector<std::string> node_candidates(const std::vector<kube::Node>& nodes) {
  std::vector<std::string> out;
  for (const auto& node : nodes) out.push_back(node.meta.name);
  return out;
}

std::vector<std::string> plan_candidates(const std::vector<op::MaintenancePlan>& plans) {
  std::vector<std::string> out;
  for (const auto& plan : plans) {
    const std::string phase =
        plan.status.phase ? std::string(op::to_string(*plan.status.phase)) : "not started";
    out.push_back(with_description(plan.meta.name, "MaintenancePlan, " + phase));
  }
  return out;
}

std::vector<std::string> maintenance_candidates(
    CompletionQuery::Kind kind, const std::vector<op::NodeMaintenance>& maintenances) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& nm : maintenances) {
    if (kind == CompletionQuery::Kind::kMaintenanceNodes) {
      if (!seen.insert(nm.spec.node_name).second) continue;
      out.push_back(with_description(nm.spec.node_name,
                                     "NodeMaintenance " + nm.meta.name + ", " + phase_text(nm)));
      continue;
    }
    out.push_back(with_description(nm.meta.name, "NodeMaintenance of " + nm.spec.node_name));
    if (kind == CompletionQuery::Kind::kStopTargets && seen.insert(nm.spec.node_name).second) {
      out.push_back(with_description(nm.spec.node_name, "node under maintenance"));
    }
  }
  return out;
}

std::string candidate_lines(const std::vector<std::string>& candidates, std::string_view prefix) {
  std::string out;
  for (const std::string& candidate : candidates) {
    if (candidate.starts_with(prefix)) out += candidate + "\n";
  }
  return out;
}

std::string directive_line() { return ":" + std::to_string(kNoFileCompletion) + "\n"; }

}  // namespace nmo::cli
