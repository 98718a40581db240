// Running a credential plugin: one child process with an environment of our choosing, its
// stdout captured and its stderr captured or shown (private to nmo::kube_config).
//
// Threading: no shared state; safe to call from any thread. The call blocks until the child
// exits.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "base/result.h"

namespace nmo::kube::internal {

// How the child's standard streams are connected.
struct ProcessStdio {
  // The child reads our stdin and writes its stderr to ours (a plugin prompting for a login);
  // otherwise stdin is /dev/null and stderr is captured.
  bool interactive = false;
};

// What a finished child left behind.
struct ProcessOutput {
  int exit_status = 0;  // the exit status, when the child exited
  int signal = 0;       // the signal that killed it, or 0
  std::string out;      // stdout
  std::string err;      // stderr (empty when interactive)
};

// Larger output is cut off: an ExecCredential is a few kB, and the cap keeps a runaway plugin
// from exhausting memory.
inline constexpr std::size_t kMaxProcessOutput = std::size_t{4} << 20U;

// Runs argv[0] (a name looked up on PATH unless it holds a '/') with `argv` and exactly the
// environment `env` ("NAME=value" entries), and waits for it. A child that cannot be started is
// an Error whose message is the system's reason ("No such file or directory"): kNotFound for
// ENOENT, kForbidden for EACCES, kInternal otherwise. A child that ran is a ProcessOutput,
// whatever its status.
[[nodiscard]] Result<ProcessOutput> run_process(const std::vector<std::string>& argv,
                                                const std::vector<std::string>& env,
                                                ProcessStdio stdio);

}  // namespace nmo::kube::internal
