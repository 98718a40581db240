// Loading a RestConfig from kubeconfig files, with kubectl's rules (client-go clientcmd):
//   - which files: --kubeconfig when given (it must exist); else the KUBECONFIG list
//     (colon-separated, merged in order, missing entries skipped, at least one must exist);
//     else $HOME/.kube/config;
//   - merging: for clusters, users and contexts the first file that defines a name wins;
//     current-context comes from the first file that sets it;
//   - relative paths in a file (certificate-authority, client-certificate, client-key, tokenFile)
//     are relative to that file's directory;
//   - `*-data` wins over the matching path, tokenFile over token (the file is re-read as it
//     rotates, see token_source.h).
// Certificate and key files are read once, at load time.
//
// Threading: the functions share no state; load_kubeconfig() reads the environment (KUBECONFIG,
// HOME), so do not call setenv() concurrently.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"
#include "kube/config/kubeconfig.h"
#include "kube/config/rest_config.h"

namespace nmo::kube {

// Where to find the kubeconfig and which context to use (kubectl's flags).
struct KubeconfigOptions {
  std::string path;     // --kubeconfig; empty: $KUBECONFIG, else $HOME/.kube/config
  std::string context;  // --context; empty: current-context
};

// Loads the kubeconfig files named by `options` and resolves the chosen context. Errors name the
// file, the entry and the problem, e.g.
//   kubeconfig /tmp/x/config: context "prod" not found (available: "local", "staging")
//   kubeconfig /tmp/x/config: clusters["local"].certificate-authority: cannot read /tmp/x/ca.crt:
//     No such file or directory
// kNotFound when a required file is missing, kInvalid for bad content.
[[nodiscard]] Result<RestConfig> load_kubeconfig(const KubeconfigOptions& options);

// Reads and parses one kubeconfig file, with relative paths resolved against its directory.
// The message names the path: "kubeconfig <path>: cannot read <path>: <reason>".
[[nodiscard]] Result<Kubeconfig> load_kubeconfig_file(const std::string& path);

// Resolves `context` (empty: config.current_context) of an already loaded config into a
// RestConfig: finds the context, its cluster and user, parses the server URL, reads the
// certificate files and sets up the token source. Refuses unsupported features of the chosen
// entries, e.g. `users["x"]: exec credential plugins are not supported`.
[[nodiscard]] Result<RestConfig> resolve_kubeconfig(const Kubeconfig& config,
                                                    std::string_view context);

}  // namespace nmo::kube
