// The kubeconfig file model (clusters, users, contexts, current-context) and its YAML parser.
//
// parse_kubeconfig() turns one document into a Kubeconfig, checking the shape and decoding the
// `*-data` fields (like kubectl, a broken value anywhere fails the whole file). Keys it does not
// know are ignored, as kubectl does. Features we do not implement (auth-provider plugins, basic
// auth, impersonation, proxy-url) are recorded rather than rejected, so a file
// whose other users need them still works; choosing such an entry fails later, in
// kubeconfig_loader.h. File paths stay as written; the loader resolves relative ones.
//
// Threading: plain value types and a pure function; safe to use from any thread.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"

namespace nmo::kube {

// One entry of `clusters`: where the API server is and how to trust it.
struct KubeconfigCluster {
  std::string server;                      // as written
  std::string certificate_authority;       // a path
  std::string certificate_authority_data;  // decoded PEM
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name;
  std::string proxy_url;  // recorded to be refused when chosen
  std::string origin;     // the file it came from, for messages

  friend bool operator==(const KubeconfigCluster&, const KubeconfigCluster&) = default;
};

// `users[].user.exec`: a credential plugin (client-go's ExecConfig), as written. Its values are
// checked when the user is chosen (kubeconfig_loader.h), not here, so a file whose other users
// are fine still loads.
struct KubeconfigExec {
  std::string command;  // a name looked up on PATH, or a path (relative ones: see the loader)
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;  // added to the plugin's environment
  std::string api_version;            // client.authentication.k8s.io/v1 or /v1beta1
  std::string install_hint;           // shown when the command is not installed
  bool provide_cluster_info = false;  // pass the cluster in KUBERNETES_EXEC_INFO
  std::string interactive_mode;       // "Never", "IfAvailable", "Always", or "" (unset)

  friend bool operator==(const KubeconfigExec&, const KubeconfigExec&) = default;
};

// One entry of `users`: the client's credentials.
struct KubeconfigUser {
  std::string token;
  std::string token_file;               // a path
  std::string client_certificate;       // a path
  std::string client_certificate_data;  // decoded PEM
  std::string client_key;               // a path
  std::string client_key_data;          // decoded PEM
  std::optional<KubeconfigExec> exec;
  // The first field present that we do not support ("auth-provider", "username", "password",
  // "as", "as-uid", "as-groups", "as-user-extra"), or empty.
  std::string unsupported_field;
  std::string auth_provider_name;  // `auth-provider.name`, for the message refusing it
  std::string origin;              // the file it came from, for messages

  friend bool operator==(const KubeconfigUser&, const KubeconfigUser&) = default;
};

// One entry of `contexts`: a cluster, a user and a default namespace.
struct KubeconfigContext {
  std::string cluster;
  std::string user;            // empty: no credentials
  std::string namespace_name;  // `namespace`; empty: "default"
  std::string origin;          // the file it came from, for messages

  friend bool operator==(const KubeconfigContext&, const KubeconfigContext&) = default;
};

// A parsed kubeconfig, or the merge of several. std::map keeps names sorted for messages.
struct Kubeconfig {
  std::map<std::string, KubeconfigCluster, std::less<>> clusters;
  std::map<std::string, KubeconfigUser, std::less<>> users;
  std::map<std::string, KubeconfigContext, std::less<>> contexts;
  std::string current_context;
  std::string origin;  // the file, or the files joined with ':', for messages

  friend bool operator==(const Kubeconfig&, const Kubeconfig&) = default;
};

// Parses one kubeconfig document. `origin` (a path, or a label such as "<fuzz>") names the
// input in messages and is stored in every entry. An empty document is an empty Kubeconfig.
// Errors are kInvalid, each "kubeconfig <origin>: <where>: <problem>", e.g.
//   kubeconfig /tmp/x/config: line 7, column 3: <yaml-cpp message>
//   kubeconfig /tmp/x/config: users["admin"].client-key-data: not valid base64
//   kubeconfig /tmp/x/config: clusters["a"]: duplicate name
// Never throws.
[[nodiscard]] Result<Kubeconfig> parse_kubeconfig(std::string_view yaml, std::string_view origin);

// Merges `next` into `into` the way kubectl merges the KUBECONFIG list: a cluster, user or
// context keeps the definition of the first file that has the name; current-context comes from
// the first file that sets it. `into.origin` becomes "<into.origin>:<next.origin>".
void merge_kubeconfig(Kubeconfig& into, Kubeconfig next);

}  // namespace nmo::kube
