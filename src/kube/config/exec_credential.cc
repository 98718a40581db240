#include "kube/config/exec_credential.h"

#include <unistd.h>

#include <utility>
#include <vector>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include "base/log.h"
#include "base/strings.h"
#include "kube/api/time.h"
#include "kube/config/base64.h"
#include "kube/config/internal/errors.h"
#include "kube/config/internal/process.h"

extern char** environ;  // NOLINT(readability-redundant-declaration): the plugin inherits it

namespace nmo::kube {
namespace {

namespace json = boost::json;
using internal::quote;

// The longest piece of a plugin's stderr quoted in an error: enough for its last message.
constexpr std::size_t kMaxStderrInMessage = 400;

Error invalid(std::string message) { return Error(ErrorCode::kInvalid, std::move(message)); }

// The last kMaxStderrInMessage bytes of `err`, printable and on one line: a plugin's final
// message is last.
std::string stderr_summary(std::string_view err) {
  const std::string_view text = trim(err);
  if (text.size() <= kMaxStderrInMessage) return printable_prefix(text, kMaxStderrInMessage);
  return "..." +
         printable_prefix(text.substr(text.size() - kMaxStderrInMessage), kMaxStderrInMessage);
}

Result<std::string> optional_string(const json::object& object, std::string_view key,
                                    std::string_view where) {
  const json::value* value = object.if_contains(key);
  if (value == nullptr || value->is_null()) return std::string();
  if (!value->is_string())
    return invalid("returned " + std::string(where) + " that is not a string");
  return std::string(value->get_string());
}

// The environment of the plugin: ours, then the kubeconfig's entries (which win), then
// KUBERNETES_EXEC_INFO.
std::vector<std::string> plugin_environment(const KubeconfigExec& exec, const std::string& info) {
  std::vector<std::string> env;
  auto overridden = [&exec](std::string_view entry) {
    const std::string_view name = entry.substr(0, entry.find('='));
    if (name == "KUBERNETES_EXEC_INFO") return true;
    for (const auto& [key, value] : exec.env) {
      if (key == name) return true;
    }
    return false;
  };
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    if (!overridden(*entry)) env.emplace_back(*entry);
  }
  for (const auto& [key, value] : exec.env) env.push_back(key + "=" + value);
  env.push_back("KUBERNETES_EXEC_INFO=" + info);
  return env;
}

}  // namespace

std::string exec_info_json(std::string_view api_version, bool interactive,
                           const std::optional<ExecClusterInfo>& cluster) {
  json::object spec{{"interactive", interactive}};
  if (cluster.has_value()) {
    json::object info{{"server", cluster->server}};
    if (!cluster->tls_server_name.empty()) info["tls-server-name"] = cluster->tls_server_name;
    if (cluster->insecure_skip_tls_verify) info["insecure-skip-tls-verify"] = true;
    if (!cluster->ca_pem.empty()) {
      info["certificate-authority-data"] = base64_encode(cluster->ca_pem);
    }
    spec["cluster"] = std::move(info);
  }
  return json::serialize(json::object{
      {"apiVersion", api_version}, {"kind", "ExecCredential"}, {"spec", std::move(spec)}});
}

Result<ExecCredential> parse_exec_credential(std::string_view text, std::string_view api_version) {
  boost::system::error_code ec;
  const json::value root = json::parse(text, ec);
  if (ec) return invalid("printed no valid ExecCredential: " + ec.message());
  if (!root.is_object()) return invalid("printed no valid ExecCredential: not a JSON object");
  const json::object& object = root.get_object();
  NMO_TRY_ASSIGN(const std::string version, optional_string(object, "apiVersion", "an apiVersion"));
  if (version != api_version) {
    return invalid("returned apiVersion " + quote(version) + ", but the kubeconfig asks for " +
                   quote(api_version));
  }
  NMO_TRY_ASSIGN(const std::string kind, optional_string(object, "kind", "a kind"));
  if (kind != "ExecCredential")
    return invalid("returned kind " + quote(kind) + ", not ExecCredential");
  const json::value* status = object.if_contains("status");
  if (status == nullptr || status->is_null()) return invalid("returned no status");
  if (!status->is_object()) return invalid("returned a status that is not an object");
  const json::object& fields = status->get_object();
  ExecCredential credential;
  NMO_TRY_ASSIGN(credential.token, optional_string(fields, "token", "a token"));
  NMO_TRY_ASSIGN(credential.client_cert_pem,
                 optional_string(fields, "clientCertificateData", "a clientCertificateData"));
  NMO_TRY_ASSIGN(credential.client_key_pem,
                 optional_string(fields, "clientKeyData", "a clientKeyData"));
  if (credential.client_cert_pem.empty() != credential.client_key_pem.empty()) {
    return invalid(credential.client_key_pem.empty()
                       ? "returned a client certificate without its key"
                       : "returned a client key without its certificate");
  }
  if (credential.token.empty() && credential.client_cert_pem.empty()) {
    return invalid("returned neither a token nor a client certificate and key");
  }
  NMO_TRY_ASSIGN(const std::string expiry,
                 optional_string(fields, "expirationTimestamp", "an expirationTimestamp"));
  if (!expiry.empty()) {
    Result<Time> parsed = parse_time(expiry);
    if (!parsed) {
      return invalid("returned status.expirationTimestamp " + quote(expiry) + ": " +
                     parsed.error().message);
    }
    credential.expiry = *parsed;
  }
  return credential;
}

Result<std::shared_ptr<ExecCredentialSource>> ExecCredentialSource::create(
    ExecPluginOptions options) {
  const std::string field = options.where + ".exec.";
  const KubeconfigExec& exec = options.exec;
  if (exec.command.empty()) return invalid(field + "command: is not set");
  if (exec.api_version.empty()) {
    return invalid(field + "apiVersion: is not set (use " + std::string(kExecApiV1) + ")");
  }
  if (exec.api_version != kExecApiV1 && exec.api_version != kExecApiV1Beta1) {
    return invalid(field + "apiVersion: " + quote(exec.api_version) + " is not supported (use " +
                   std::string(kExecApiV1) + " or v1beta1)");
  }
  std::string mode = exec.interactive_mode;
  if (mode.empty()) {
    if (exec.api_version == kExecApiV1) {
      return invalid(field + "interactiveMode: is not set (required by " + std::string(kExecApiV1) +
                     ": Never, IfAvailable or Always)");
    }
    mode = "IfAvailable";  // v1beta1's default
  }
  if (mode != "Never" && mode != "IfAvailable" && mode != "Always") {
    return invalid(field + "interactiveMode: " + quote(mode) +
                   " is not one of Never, IfAvailable, Always");
  }
  if (!options.now) options.now = [] { return std::chrono::system_clock::now(); };
  if (!options.stdin_is_terminal.has_value()) {
    options.stdin_is_terminal = ::isatty(STDIN_FILENO) == 1;
  }
  const bool interactive_allowed = mode != "Never";
  if (mode == "Always" && !*options.stdin_is_terminal) {
    return invalid(options.where + ": exec plugin " + quote(exec.command) +
                   " needs a terminal (interactiveMode Always) but standard input is not one");
  }
  return std::shared_ptr<ExecCredentialSource>(
      new ExecCredentialSource(std::move(options), interactive_allowed));
}

ExecCredentialSource::ExecCredentialSource(ExecPluginOptions options, bool interactive_allowed)
    : options_(std::move(options)), interactive_allowed_(interactive_allowed) {}

Result<std::shared_ptr<const ExecCredential>> ExecCredentialSource::credential() {
  const std::lock_guard lock(mu_);
  if (cached_ && (!cached_->expiry.has_value() ||
                  std::chrono::time_point_cast<std::chrono::microseconds>(options_.now()) <
                      *cached_->expiry)) {
    return cached_;
  }
  cached_.reset();
  NMO_TRY_ASSIGN(cached_, run_plugin());
  return cached_;
}

void ExecCredentialSource::invalidate(const std::shared_ptr<const ExecCredential>& rejected) {
  const std::lock_guard lock(mu_);
  if (cached_ == rejected) cached_.reset();
}

Result<std::shared_ptr<const ExecCredential>> ExecCredentialSource::run_plugin() {
  const KubeconfigExec& exec = options_.exec;
  const std::string plugin = options_.where + ": exec plugin " + quote(exec.command);
  auto unauthorized = [](std::string message) {
    return Error(ErrorCode::kUnauthorized, std::move(message));
  };
  const bool interactive = interactive_allowed_ && options_.stdin_is_terminal.value_or(false);
  std::vector<std::string> argv{exec.command};
  argv.insert(argv.end(), exec.args.begin(), exec.args.end());
  const std::string info = exec_info_json(exec.api_version, interactive, options_.cluster);
  Result<internal::ProcessOutput> ran = internal::run_process(
      argv, plugin_environment(exec, info), internal::ProcessStdio{.interactive = interactive});
  if (!ran) {
    if (is_not_found(ran.error())) {
      std::string message =
          plugin + " is not installed (" +
          (exec.command.find('/') == std::string::npos ? "not found on PATH" : "no such file") +
          ")";
      if (const std::string hint =
              printable_prefix(trim(exec.install_hint), exec.install_hint.size());
          !hint.empty()) {
        message += ": " + hint;
      }
      return unauthorized(std::move(message));
    }
    return unauthorized(plugin + " cannot be run: " + ran.error().message);
  }
  if (ran->signal != 0 || ran->exit_status != 0) {
    std::string message =
        plugin + (ran->signal != 0 ? " was killed by signal " + std::to_string(ran->signal)
                                   : " exited with status " + std::to_string(ran->exit_status));
    if (const std::string err = stderr_summary(ran->err); !err.empty()) message += ": " + err;
    return unauthorized(std::move(message));
  }
  Result<ExecCredential> parsed = parse_exec_credential(ran->out, exec.api_version);
  if (!parsed) return unauthorized(plugin + " " + parsed.error().message);
  if (!ran->err.empty()) {
    log::root().warn("the exec credential plugin wrote to stderr",
                     {{"command", exec.command}, {"stderr", stderr_summary(ran->err)}});
  }
  return std::shared_ptr<const ExecCredential>(
      std::make_shared<const ExecCredential>(std::move(*parsed)));
}

}  // namespace nmo::kube
