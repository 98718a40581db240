// Exec credential plugins (`users[].user.exec`, client-go's client.authentication.k8s.io API):
// the way EKS (`aws eks get-token`), GKE (`gke-gcloud-auth-plugin`), AKS (`kubelogin`) and OIDC
// helpers hand out credentials.
//
// ExecCredentialSource runs the plugin with its args and env plus KUBERNETES_EXEC_INFO (an
// ExecCredential whose spec says whether the plugin may talk to the user, and the cluster when
// provideClusterInfo is set), parses the ExecCredential it prints (a bearer token, or a client
// certificate and key), keeps it until its expirationTimestamp (for ever when it has none), and
// runs the plugin again when the API server refused it (invalidate(), after a 401).
//
// Threading: ExecCredentialSource is thread-safe. credential() runs the plugin on the calling
// thread while holding the source's lock, so concurrent callers wait for one run instead of
// starting several; a plugin that waits for a browser login blocks its caller as long.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "kube/config/kubeconfig.h"

namespace nmo::kube {

inline constexpr std::string_view kExecApiV1 = "client.authentication.k8s.io/v1";
inline constexpr std::string_view kExecApiV1Beta1 = "client.authentication.k8s.io/v1beta1";

// What a plugin handed out: a bearer token, a client certificate with its key, or both.
struct ExecCredential {
  std::string token;
  std::string client_cert_pem;
  std::string client_key_pem;
  // status.expirationTimestamp (in microseconds: nanoseconds since 1970 overflow in 2262, and
  // plugins write far-future dates); std::nullopt: valid until the API server refuses it.
  std::optional<std::chrono::sys_time<std::chrono::microseconds>> expiry;

  friend bool operator==(const ExecCredential&, const ExecCredential&) = default;
};

// The cluster a plugin is told about when the kubeconfig sets provideClusterInfo.
struct ExecClusterInfo {
  std::string server;
  std::string ca_pem;
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name;
};

// The KUBERNETES_EXEC_INFO value: an ExecCredential of `api_version` whose spec carries
// `interactive` and, when given, the cluster (certificate-authority-data base64-encoded).
[[nodiscard]] std::string exec_info_json(std::string_view api_version, bool interactive,
                                         const std::optional<ExecClusterInfo>& cluster);

// Parses what a plugin printed. `api_version` is the version the kubeconfig asked for; the
// plugin must answer with the same one. Errors (kInvalid) say what is wrong without naming the
// plugin, which the caller does:
//   printed no valid ExecCredential: <JSON error>
//   returned apiVersion "client.authentication.k8s.io/v1beta1", but the kubeconfig asks for
//     "client.authentication.k8s.io/v1"
//   returned kind "Secret", not ExecCredential
//   returned no status
//   returned neither a token nor a client certificate and key
//   returned a client certificate without its key (or a key without its certificate)
//   returned status.expirationTimestamp "soon": invalid RFC 3339 time "soon": ...
[[nodiscard]] Result<ExecCredential> parse_exec_credential(std::string_view text,
                                                           std::string_view api_version);

// Everything an ExecCredentialSource needs; resolve_kubeconfig() fills it in.
struct ExecPluginOptions {
  KubeconfigExec exec;  // exec.command already resolved against the kubeconfig's directory
  std::string where;    // names the user in messages: `kubeconfig /p/config: users["eks"]`
  std::optional<ExecClusterInfo> cluster;  // set when exec.provide_cluster_info
  // The wall clock expirationTimestamp is compared with; empty: std::chrono::system_clock.
  std::function<std::chrono::system_clock::time_point()> now;
  // Whether our stdin is a terminal (interactiveMode IfAvailable/Always); empty: isatty(0).
  std::optional<bool> stdin_is_terminal;
};

class ExecCredentialSource {
 public:
  // Checks the plugin's configuration. Errors (kInvalid) name the field, e.g.
  //   kubeconfig /p/config: users["eks"].exec.apiVersion: "client.authentication.k8s.io/v1alpha1"
  //     is not supported (use client.authentication.k8s.io/v1 or v1beta1)
  //   kubeconfig /p/config: users["eks"].exec.interactiveMode: is not set (required by v1)
  [[nodiscard]] static Result<std::shared_ptr<ExecCredentialSource>> create(
      ExecPluginOptions options);

  // The cached credential while it has not expired; otherwise runs the plugin. Errors are
  // ErrorCode::kUnauthorized (no usable credentials) with one line naming the user and the
  // command, e.g.
  //   kubeconfig /p/config: users["eks"]: exec plugin "aws" is not installed (not found on
  //     PATH): <installHint, on one line>
  //   kubeconfig /p/config: users["eks"]: exec plugin "aws" exited with status 255: <stderr>
  //   kubeconfig /p/config: users["eks"]: exec plugin "aws" printed no valid ExecCredential: ...
  [[nodiscard]] Result<std::shared_ptr<const ExecCredential>> credential();

  // The API server refused `rejected` (401): the next credential() runs the plugin again,
  // unless a newer credential has replaced it meanwhile.
  void invalidate(const std::shared_ptr<const ExecCredential>& rejected);

  [[nodiscard]] const ExecPluginOptions& options() const { return options_; }

 private:
  ExecCredentialSource(ExecPluginOptions options, bool interactive_allowed);
  Result<std::shared_ptr<const ExecCredential>> run_plugin();

  const ExecPluginOptions options_;
  const bool interactive_allowed_;  // interactiveMode is not Never

  std::mutex mu_;
  std::shared_ptr<const ExecCredential> cached_;  // guarded by mu_
};

}  // namespace nmo::kube
