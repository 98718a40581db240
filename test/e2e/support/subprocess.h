// Runs a child process and captures its output. Test support only: the operator itself
// never shells out.
//
// Threading: every function is safe to call from any thread; nothing is shared.
#pragma once

#include <string>
#include <vector>

namespace nmo::e2e {

/// What a finished child process left behind.
struct ProcessResult {
  int exit_code = -1;  ///< exit status, or 128 + signal number when killed by a signal
  std::string out;     ///< everything written to stdout
  std::string err;     ///< everything written to stderr

  [[nodiscard]] bool ok() const { return exit_code == 0; }
};

/// Runs `argv` (argv[0] looked up in PATH), feeds `input` to its stdin and waits for it.
/// A process that cannot be started yields exit code 127 and the reason in `err`.
ProcessResult run_process(const std::vector<std::string>& argv, const std::string& input = {});

}  // namespace nmo::e2e
