#include "kube/config/kubeconfig_loader.h"

#include <cstdlib>
#include <filesystem>
#include <set>
#include <utility>
#include <vector>

#include "base/strings.h"
#include "kube/config/internal/errors.h"
#include "kube/config/internal/file.h"
#include "kube/config/internal/server_url.h"

namespace nmo::kube {
namespace {

using internal::quote;
using internal::with_prefix;

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): see the header
  return value == nullptr ? std::string() : std::string(value);
}

// `path` relative to `dir` unless it is empty or absolute (client-go's ResolvePath).
std::string resolve_path(const std::filesystem::path& dir, const std::string& path) {
  if (path.empty() || path.front() == '/' || dir.empty()) {
    return path;
  }
  return (dir / path).lexically_normal().string();
}

void resolve_relative_paths(Kubeconfig& config, const std::filesystem::path& dir) {
  for (auto& [name, cluster] : config.clusters) {
    cluster.certificate_authority = resolve_path(dir, cluster.certificate_authority);
  }
  for (auto& [name, user] : config.users) {
    user.token_file = resolve_path(dir, user.token_file);
    user.client_certificate = resolve_path(dir, user.client_certificate);
    user.client_key = resolve_path(dir, user.client_key);
    // A command with a '/' is a path (relative to the file); a bare name is looked up on PATH
    // (client-go's rule).
    if (user.exec.has_value() && user.exec->command.find('/') != std::string::npos) {
      user.exec->command = resolve_path(dir, user.exec->command);
    }
  }
}

// The inline `data`, else the contents of the file at `path` (errors prefixed with `where`),
// else an empty string.
Result<std::string> data_or_file(const std::string& data, const std::string& path,
                                 const std::string& where) {
  if (!data.empty() || path.empty()) {
    return data;
  }
  Result<std::string> contents = internal::read_file(path);
  if (!contents.has_value()) {
    return with_prefix(std::move(contents).error(), where);
  }
  return contents;
}

std::string unsupported_user_problem(const KubeconfigUser& user) {
  const std::string_view field = user.unsupported_field;
  if (field == "auth-provider") {
    // kubectl itself dropped the built-in gcp and azure providers in 1.26; their replacements
    // (gke-gcloud-auth-plugin, kubelogin) are exec plugins.
    return "auth-provider " + quote(user.auth_provider_name) +
           " is not supported: use an exec credential plugin instead (users[].user.exec, e.g. "
           "gke-gcloud-auth-plugin, kubelogin, kubectl oidc-login)";
  }
  if (field == "username" || field == "password") {
    return "username/password (basic authentication) is not supported";
  }
  return "impersonation (" + std::string(field) + ") is not supported";
}

void set_server(RestConfig& rest, const std::string& server, internal::ServerUrl url) {
  rest.server = server;
  rest.scheme = std::move(url.scheme);
  rest.host = std::move(url.host);
  rest.port = std::move(url.port);
  rest.path_prefix = std::move(url.path_prefix);
}

Result<void> apply_cluster(const KubeconfigCluster& cluster, const std::string& name,
                           RestConfig& rest) {
  const std::string where = "kubeconfig " + cluster.origin + ": clusters[" + quote(name) + "]";
  if (!cluster.proxy_url.empty()) {
    return Error(ErrorCode::kInvalid, where + ".proxy-url: not supported");
  }
  if (cluster.server.empty()) {
    return Error(ErrorCode::kInvalid, where + ".server: is not set");
  }
  Result<internal::ServerUrl> url = internal::parse_server_url(cluster.server);
  if (!url.has_value()) {
    return with_prefix(std::move(url).error(), where + ".server");
  }
  set_server(rest, cluster.server, std::move(*url));
  const bool has_ca =
      !cluster.certificate_authority_data.empty() || !cluster.certificate_authority.empty();
  if (cluster.insecure_skip_tls_verify && has_ca) {
    // kubectl refuses the same combination ("specifying a root certificates file with the
    // insecure flag is not allowed").
    return Error(
        ErrorCode::kInvalid,
        where + ": insecure-skip-tls-verify cannot be combined with certificate-authority");
  }
  NMO_TRY_ASSIGN(rest.ca_pem,
                 data_or_file(cluster.certificate_authority_data, cluster.certificate_authority,
                              where + ".certificate-authority"));
  rest.insecure_skip_tls_verify = cluster.insecure_skip_tls_verify;
  rest.tls_server_name = cluster.tls_server_name;
  return {};
}

// The cluster an exec plugin with provideClusterInfo is told about: the one `rest` talks to.
ExecClusterInfo exec_cluster_info(const RestConfig& rest) {
  return ExecClusterInfo{.server = rest.server,
                         .ca_pem = rest.ca_pem,
                         .insecure_skip_tls_verify = rest.insecure_skip_tls_verify,
                         .tls_server_name = rest.tls_server_name};
}

Result<void> apply_user(const KubeconfigUser& user, const std::string& name, RestConfig& rest) {
  const std::string where = "kubeconfig " + user.origin + ": users[" + quote(name) + "]";
  if (!user.unsupported_field.empty()) {
    return Error(ErrorCode::kInvalid, where + ": " + unsupported_user_problem(user));
  }
  if (user.exec.has_value()) {
    ExecPluginOptions plugin{
        .exec = *user.exec, .where = where, .cluster = {}, .now = {}, .stdin_is_terminal = {}};
    if (user.exec->provide_cluster_info) plugin.cluster = exec_cluster_info(rest);
    NMO_TRY_ASSIGN(rest.exec, ExecCredentialSource::create(std::move(plugin)));
  }
  NMO_TRY_ASSIGN(rest.client_cert_pem,
                 data_or_file(user.client_certificate_data, user.client_certificate,
                              where + ".client-certificate"));
  NMO_TRY_ASSIGN(rest.client_key_pem,
                 data_or_file(user.client_key_data, user.client_key, where + ".client-key"));
  if (!rest.client_cert_pem.empty() && rest.client_key_pem.empty()) {
    return Error(ErrorCode::kInvalid,
                 where + ": has a client certificate but no client-key or client-key-data");
  }
  if (rest.client_cert_pem.empty() && !rest.client_key_pem.empty()) {
    return Error(ErrorCode::kInvalid, where +
                                          ": has a client key but no client-certificate or "
                                          "client-certificate-data");
  }
  if (!user.token_file.empty()) {
    // Read once now so a wrong path fails at start-up, not on the first request.
    rest.token = file_token(user.token_file);
    Result<std::string> first = rest.token->token();
    if (!first.has_value()) {
      return with_prefix(std::move(first).error(), where + ".tokenFile");
    }
  } else if (!user.token.empty()) {
    rest.token = static_token(user.token);
  }
  return {};
}

std::string available_contexts(const Kubeconfig& config) {
  if (config.contexts.empty()) {
    return "no contexts are defined";
  }
  std::string out = "available: ";
  bool first = true;
  for (const auto& [name, context] : config.contexts) {
    if (!first) {
      out += ", ";
    }
    first = false;
    out += quote(name);
  }
  return out;
}

// Loads the KUBECONFIG list: entries in order, duplicates and missing files skipped.
Result<Kubeconfig> load_kubeconfig_list(const std::string& list) {
  Kubeconfig merged;
  std::set<std::string_view, std::less<>> seen;
  bool found_any = false;
  for (const std::string_view entry : split(list, ':')) {
    if (entry.empty() || !seen.insert(entry).second) {
      continue;
    }
    Result<Kubeconfig> file = load_kubeconfig_file(std::string(entry));
    if (!file.has_value()) {
      if (is_not_found(file.error())) {
        continue;  // kubectl skips missing files in the list
      }
      return std::move(file).error();
    }
    merge_kubeconfig(merged, std::move(*file));
    found_any = true;
  }
  if (!found_any) {
    return Error(ErrorCode::kNotFound,
                 "kubeconfig KUBECONFIG=" + list + ": none of the listed files exists");
  }
  return merged;
}

}  // namespace

Result<Kubeconfig> load_kubeconfig_file(const std::string& path) {
  Result<std::string> contents = internal::read_file(path);
  if (!contents.has_value()) {
    return with_prefix(std::move(contents).error(), "kubeconfig " + path);
  }
  NMO_TRY_ASSIGN(Kubeconfig config, parse_kubeconfig(*contents, path));
  resolve_relative_paths(config, std::filesystem::path(path).parent_path());
  return config;
}

Result<RestConfig> resolve_kubeconfig(const Kubeconfig& config, std::string_view context) {
  const std::string name(context.empty() ? std::string_view(config.current_context) : context);
  if (name.empty()) {
    return Error(
        ErrorCode::kInvalid,
        "kubeconfig " + config.origin + ": current-context is not set and no --context was given");
  }
  const auto context_it = config.contexts.find(name);
  if (context_it == config.contexts.end()) {
    return Error(ErrorCode::kInvalid, "kubeconfig " + config.origin + ": context " + quote(name) +
                                          " not found (" + available_contexts(config) + ")");
  }
  const KubeconfigContext& chosen = context_it->second;
  const std::string where = "kubeconfig " + chosen.origin + ": contexts[" + quote(name) + "]";
  if (chosen.cluster.empty()) {
    return Error(ErrorCode::kInvalid, where + ".cluster: is not set");
  }
  const auto cluster_it = config.clusters.find(chosen.cluster);
  if (cluster_it == config.clusters.end()) {
    return Error(ErrorCode::kInvalid,
                 where + ".cluster: cluster " + quote(chosen.cluster) + " not found");
  }
  RestConfig rest;
  NMO_TRY(apply_cluster(cluster_it->second, cluster_it->first, rest));
  if (!chosen.user.empty()) {
    const auto user_it = config.users.find(chosen.user);
    if (user_it == config.users.end()) {
      return Error(ErrorCode::kInvalid, where + ".user: user " + quote(chosen.user) + " not found");
    }
    NMO_TRY(apply_user(user_it->second, user_it->first, rest));
  }
  if (!chosen.namespace_name.empty()) {
    rest.default_namespace = chosen.namespace_name;
  }
  rest.origin = "kubeconfig " + chosen.origin + " (context " + quote(name) + ")";
  return rest;
}

Result<void> apply_overrides(RestConfig& rest, const ConfigOverrides& overrides) {
  if (!overrides.server.empty()) {
    Result<internal::ServerUrl> url = internal::parse_server_url(overrides.server);
    if (!url.has_value()) {
      return with_prefix(std::move(url).error(), "--server " + quote(overrides.server));
    }
    set_server(rest, overrides.server, std::move(*url));
  }
  if (overrides.insecure_skip_tls_verify) {
    rest.insecure_skip_tls_verify = true;
    rest.ca_pem.clear();
  }
  if (!overrides.token.empty()) {
    rest.token = static_token(overrides.token);
    rest.exec = nullptr;
  }
  if (!overrides.impersonate_groups.empty() && overrides.impersonate_user.empty()) {
    return Error(ErrorCode::kInvalid, "--as-group needs --as (the user to impersonate)");
  }
  if (!overrides.impersonate_user.empty()) {
    rest.impersonate_user = overrides.impersonate_user;
    rest.impersonate_groups = overrides.impersonate_groups;
  }
  // A plugin told about the cluster is told about the one the flags chose.
  if (rest.exec != nullptr && rest.exec->options().cluster.has_value() &&
      (!overrides.server.empty() || overrides.insecure_skip_tls_verify)) {
    ExecPluginOptions plugin = rest.exec->options();
    plugin.cluster = exec_cluster_info(rest);
    NMO_TRY_ASSIGN(rest.exec, ExecCredentialSource::create(std::move(plugin)));
  }
  return {};
}

Result<RestConfig> load_kubeconfig(const KubeconfigOptions& options) {
  Kubeconfig config;
  if (!options.path.empty()) {
    NMO_TRY_ASSIGN(config, load_kubeconfig_file(options.path));
  } else if (const std::string list = env_or_empty("KUBECONFIG"); !list.empty()) {
    NMO_TRY_ASSIGN(config, load_kubeconfig_list(list));
  } else {
    const std::string home = env_or_empty("HOME");
    if (home.empty()) {
      return Error(ErrorCode::kNotFound,
                   "kubeconfig: no --kubeconfig given and neither KUBECONFIG nor HOME is set");
    }
    NMO_TRY_ASSIGN(config, load_kubeconfig_file(home + "/.kube/config"));
  }
  NMO_TRY_ASSIGN(RestConfig rest, resolve_kubeconfig(config, options.context));
  NMO_TRY(apply_overrides(rest, options.overrides));
  return rest;
}

}  // namespace nmo::kube
