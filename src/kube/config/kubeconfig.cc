#include "kube/config/kubeconfig.h"

#include <array>
#include <exception>
#include <optional>
#include <utility>

#include <yaml-cpp/yaml.h>

#include "kube/config/base64.h"
#include "kube/config/internal/errors.h"

namespace nmo::kube {
namespace {

using internal::quote;

// User fields we recognise but do not implement, in the order they are reported.
constexpr std::array<std::string_view, 7> kUnsupportedUserFields = {
    "auth-provider", "username", "password", "as", "as-uid", "as-groups", "as-user-extra",
};

// "<where>.<key>", or just the key at the top level.
std::string join(std::string_view where, std::string_view key) {
  std::string out(where);
  if (!out.empty()) {
    out += '.';
  }
  out += key;
  return out;
}

// Walks the YAML tree of one document. Every method returns an Error naming the origin and the
// place in the document; yaml-cpp calls that may throw are only made on nodes whose type was
// checked first, and parse_kubeconfig() still catches anything yaml-cpp throws.
class Decoder {
 public:
  explicit Decoder(std::string_view origin) : origin_(origin) {}

  Result<Kubeconfig> decode(const YAML::Node& root) {
    Kubeconfig config;
    config.origin = origin_;
    if (!root.IsDefined() || root.IsNull()) {
      return config;  // an empty file: kubectl treats it as an empty config
    }
    if (!root.IsMap()) {
      return invalid("", "expected a mapping at the top level");
    }
    NMO_TRY(decode_list(root, "clusters", "cluster", config.clusters,
                        [this](const YAML::Node& body, const std::string& where) {
                          return decode_cluster(body, where);
                        }));
    NMO_TRY(decode_list(root, "users", "user", config.users,
                        [this](const YAML::Node& body, const std::string& where) {
                          return decode_user(body, where);
                        }));
    NMO_TRY(decode_list(root, "contexts", "context", config.contexts,
                        [this](const YAML::Node& body, const std::string& where) {
                          return decode_context(body, where);
                        }));
    NMO_TRY_ASSIGN(config.current_context, string_field(root, "", "current-context"));
    return config;
  }

 private:
  Error invalid(std::string_view where, std::string_view problem) const {
    std::string message = "kubeconfig " + origin_ + ": ";
    if (!where.empty()) {
      message += where;
      message += ": ";
    }
    message += problem;
    return Error(ErrorCode::kInvalid, std::move(message));
  }

  // The value of `key` in `map` (a checked mapping), or std::nullopt when absent or null.
  // A key written twice is an error: which one wins would otherwise depend on the parser.
  Result<std::optional<YAML::Node>> find(const YAML::Node& map, std::string_view where,
                                         std::string_view key) const {
    std::optional<YAML::Node> found;
    for (const auto& entry : map) {
      if (!entry.first.IsScalar() || entry.first.Scalar() != key) {
        continue;
      }
      if (found.has_value()) {
        return invalid(where.empty() ? "top level" : where, "duplicate key " + quote(key));
      }
      found = entry.second;
    }
    if (found.has_value() && found->IsNull()) {
      return std::optional<YAML::Node>();
    }
    return found;
  }

  Result<std::string> string_field(const YAML::Node& map, std::string_view where,
                                   std::string_view key) const {
    NMO_TRY_ASSIGN(const std::optional<YAML::Node> node, find(map, where, key));
    if (!node.has_value()) {
      return std::string();
    }
    if (!node->IsScalar()) {
      return invalid(join(where, key), "expected a string");
    }
    return node->Scalar();
  }

  Result<bool> bool_field(const YAML::Node& map, std::string_view where,
                          std::string_view key) const {
    NMO_TRY_ASSIGN(const std::optional<YAML::Node> node, find(map, where, key));
    if (!node.has_value()) {
      return false;
    }
    if (node->IsScalar()) {
      const std::string& text = node->Scalar();
      if (text == "true" || text == "True" || text == "TRUE") {
        return true;
      }
      if (text == "false" || text == "False" || text == "FALSE") {
        return false;
      }
    }
    return invalid(join(where, key), "expected true or false");
  }

  Result<std::string> data_field(const YAML::Node& map, std::string_view where,
                                 std::string_view key) const {
    NMO_TRY_ASSIGN(const std::string text, string_field(map, where, key));
    std::optional<std::string> bytes = base64_decode(text);
    if (!bytes.has_value()) {
      return invalid(join(where, key), "not valid base64");
    }
    return std::move(*bytes);
  }

  // Decodes the list `list_key` of named entries ({name: ..., <body_key>: {...}}) into `out`.
  template <typename Entry, typename DecodeBody>
  Result<void> decode_list(const YAML::Node& root, std::string_view list_key,
                           std::string_view body_key,
                           std::map<std::string, Entry, std::less<>>& out,
                           DecodeBody decode_body) const {
    NMO_TRY_ASSIGN(const std::optional<YAML::Node> list, find(root, "", list_key));
    if (!list.has_value()) {
      return {};
    }
    if (!list->IsSequence()) {
      return invalid(list_key, "expected a list");
    }
    std::size_t index = 0;
    for (const YAML::Node& item : *list) {
      const std::string position = std::string(list_key) + "[" + std::to_string(index++) + "]";
      if (!item.IsMap()) {
        return invalid(position, "expected a mapping");
      }
      NMO_TRY_ASSIGN(std::string name, string_field(item, position, "name"));
      if (name.empty()) {
        return invalid(join(position, "name"), "is not set");
      }
      const std::string where = std::string(list_key) + "[" + quote(name) + "]";
      if (out.contains(name)) {
        return invalid(where, "duplicate name");
      }
      NMO_TRY_ASSIGN(const std::optional<YAML::Node> body, find(item, where, body_key));
      YAML::Node empty_body(YAML::NodeType::Map);
      if (body.has_value() && !body->IsMap()) {
        return invalid(join(where, body_key), "expected a mapping");
      }
      NMO_TRY_ASSIGN(Entry entry, decode_body(body.has_value() ? *body : empty_body, where));
      entry.origin = origin_;
      out.emplace(std::move(name), std::move(entry));
    }
    return {};
  }

  Result<KubeconfigCluster> decode_cluster(const YAML::Node& body, const std::string& where) const {
    KubeconfigCluster cluster;
    NMO_TRY_ASSIGN(cluster.server, string_field(body, where, "server"));
    NMO_TRY_ASSIGN(cluster.certificate_authority,
                   string_field(body, where, "certificate-authority"));
    NMO_TRY_ASSIGN(cluster.certificate_authority_data,
                   data_field(body, where, "certificate-authority-data"));
    NMO_TRY_ASSIGN(cluster.insecure_skip_tls_verify,
                   bool_field(body, where, "insecure-skip-tls-verify"));
    NMO_TRY_ASSIGN(cluster.tls_server_name, string_field(body, where, "tls-server-name"));
    NMO_TRY_ASSIGN(cluster.proxy_url, string_field(body, where, "proxy-url"));
    return cluster;
  }

  Result<KubeconfigUser> decode_user(const YAML::Node& body, const std::string& where) const {
    KubeconfigUser user;
    NMO_TRY_ASSIGN(user.token, string_field(body, where, "token"));
    NMO_TRY_ASSIGN(user.token_file, string_field(body, where, "tokenFile"));
    NMO_TRY_ASSIGN(user.client_certificate, string_field(body, where, "client-certificate"));
    NMO_TRY_ASSIGN(user.client_certificate_data,
                   data_field(body, where, "client-certificate-data"));
    NMO_TRY_ASSIGN(user.client_key, string_field(body, where, "client-key"));
    NMO_TRY_ASSIGN(user.client_key_data, data_field(body, where, "client-key-data"));
    NMO_TRY_ASSIGN(const std::optional<YAML::Node> exec, find(body, where, "exec"));
    if (exec.has_value()) {
      NMO_TRY_ASSIGN(user.exec, decode_exec(*exec, join(where, "exec")));
    }
    NMO_TRY_ASSIGN(const std::optional<YAML::Node> provider, find(body, where, "auth-provider"));
    if (provider.has_value() && provider->IsMap()) {
      NMO_TRY_ASSIGN(user.auth_provider_name,
                     string_field(*provider, join(where, "auth-provider"), "name"));
    }
    for (const std::string_view field : kUnsupportedUserFields) {
      NMO_TRY_ASSIGN(const std::optional<YAML::Node> node, find(body, where, field));
      // An empty string counts as unset, as in kubectl (`username: ""`).
      if (node.has_value() && !(node->IsScalar() && node->Scalar().empty())) {
        user.unsupported_field = std::string(field);
        break;
      }
    }
    return user;
  }

  Result<std::vector<std::string>> string_list(const YAML::Node& map, std::string_view where,
                                               std::string_view key) const {
    NMO_TRY_ASSIGN(const std::optional<YAML::Node> node, find(map, where, key));
    std::vector<std::string> out;
    if (!node.has_value()) {
      return out;
    }
    if (!node->IsSequence()) {
      return invalid(join(where, key), "expected a list of strings");
    }
    for (const YAML::Node& item : *node) {
      if (!item.IsScalar()) {
        return invalid(join(where, key), "expected a list of strings");
      }
      out.push_back(item.Scalar());
    }
    return out;
  }

  Result<KubeconfigExec> decode_exec(const YAML::Node& body, const std::string& where) const {
    if (!body.IsMap()) {
      return invalid(where, "expected a mapping");
    }
    KubeconfigExec exec;
    NMO_TRY_ASSIGN(exec.command, string_field(body, where, "command"));
    NMO_TRY_ASSIGN(exec.args, string_list(body, where, "args"));
    NMO_TRY_ASSIGN(exec.api_version, string_field(body, where, "apiVersion"));
    NMO_TRY_ASSIGN(exec.install_hint, string_field(body, where, "installHint"));
    NMO_TRY_ASSIGN(exec.provide_cluster_info, bool_field(body, where, "provideClusterInfo"));
    NMO_TRY_ASSIGN(exec.interactive_mode, string_field(body, where, "interactiveMode"));
    NMO_TRY_ASSIGN(const std::optional<YAML::Node> env, find(body, where, "env"));
    if (env.has_value()) {
      const std::string env_where = join(where, "env");
      if (!env->IsSequence()) {
        return invalid(env_where, "expected a list");
      }
      std::size_t index = 0;
      for (const YAML::Node& item : *env) {
        const std::string position = env_where + "[" + std::to_string(index++) + "]";
        if (!item.IsMap()) {
          return invalid(position, "expected a mapping with name and value");
        }
        NMO_TRY_ASSIGN(std::string name, string_field(item, position, "name"));
        NMO_TRY_ASSIGN(std::string value, string_field(item, position, "value"));
        if (name.empty()) {
          return invalid(join(position, "name"), "is not set");
        }
        exec.env.emplace_back(std::move(name), std::move(value));
      }
    }
    return exec;
  }

  Result<KubeconfigContext> decode_context(const YAML::Node& body, const std::string& where) const {
    KubeconfigContext context;
    NMO_TRY_ASSIGN(context.cluster, string_field(body, where, "cluster"));
    NMO_TRY_ASSIGN(context.user, string_field(body, where, "user"));
    NMO_TRY_ASSIGN(context.namespace_name, string_field(body, where, "namespace"));
    return context;
  }

  std::string origin_;
};

}  // namespace

Result<Kubeconfig> parse_kubeconfig(std::string_view yaml, std::string_view origin) {
  const std::string prefix = "kubeconfig " + std::string(origin) + ": ";
  try {
    const YAML::Node root = YAML::Load(std::string(yaml));
    return Decoder(origin).decode(root);
  } catch (const YAML::Exception& e) {
    std::string message = prefix;
    if (!e.mark.is_null()) {
      message += "line " + std::to_string(e.mark.line + 1) + ", column " +
                 std::to_string(e.mark.column + 1) + ": ";
    }
    message += e.msg;
    return Error(ErrorCode::kInvalid, std::move(message));
  } catch (const std::exception& e) {
    return Error(ErrorCode::kInvalid, prefix + e.what());
  }
}

void merge_kubeconfig(Kubeconfig& into, Kubeconfig next) {
  for (auto& [name, cluster] : next.clusters) {
    into.clusters.try_emplace(name, std::move(cluster));
  }
  for (auto& [name, user] : next.users) {
    into.users.try_emplace(name, std::move(user));
  }
  for (auto& [name, context] : next.contexts) {
    into.contexts.try_emplace(name, std::move(context));
  }
  if (into.current_context.empty()) {
    into.current_context = std::move(next.current_context);
  }
  if (!into.origin.empty()) {
    into.origin += ':';
  }
  into.origin += next.origin;
}

}  // namespace nmo::kube
