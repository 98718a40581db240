// The operator binary run as a child process by end-to-end tests, the way `make run` runs it:
// against the local cluster as the operator's ServiceAccount (or the admin kubeconfig), with its
// stdout and stderr in a log file under the build tree (`<build>/e2e-logs/<name>.log`) that a
// failing test prints the tail of.
//
// The child dies with the test process (PR_SET_PDEATHSIG), so a test binary that crashes or is
// killed by ctest's timeout never leaves an operator behind to reconcile alongside the next
// test's one.
//
// Threading: an OperatorProcess belongs to the thread that created it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace nmo::e2e {

/// The checkout's root directory (compiled in).
std::filesystem::path source_dir();

/// The operator binary: $NMO_OPERATOR_BIN, else `<build>/bin/node-maintenance-operator`.
std::filesystem::path operator_binary();

/// Where operator logs of end-to-end tests go: `<build>/e2e-logs/` (created on demand).
std::filesystem::path e2e_log_dir();

/// Another operator binary (upstream medik8s NMO's manager, for the upgrade tests) run as it is:
/// exactly `args` (no flag added), with `env` ("NAME=value") added to the test's environment.
struct ForeignOperator {
  std::filesystem::path binary;
  std::vector<std::string> args;
  std::vector<std::string> env;
};

/// A running operator. Starts in the constructor; stopped (SIGTERM) by the destructor.
class OperatorProcess {
 public:
  /// Starts the binary with `--kubeconfig $NMO_OPERATOR_KUBECONFIG` (the operator's
  /// ServiceAccount, as `make test` sets it up) or else `$KUBECONFIG` (unless `flags` has its
  /// own --kubeconfig), and `flags`, logging to
  /// `e2e_log_dir()/<log_name>.log` (truncated first). Records a test failure when it cannot
  /// start; running() is then false.
  OperatorProcess(const std::string& log_name, const std::vector<std::string>& flags);
  /// Starts `foreign` the same way, logging to `e2e_log_dir()/<log_name>.log`.
  OperatorProcess(const ForeignOperator& foreign, const std::string& log_name);
  OperatorProcess(const OperatorProcess&) = delete;
  OperatorProcess& operator=(const OperatorProcess&) = delete;
  ~OperatorProcess();

  /// True while the child has not exited (reaps it when it has).
  [[nodiscard]] bool running();

  /// SIGTERM, then waits up to `deadline` for a clean exit, then SIGKILL. Returns the exit
  /// status (128 + signal number when a signal ended it); the last status when already ended.
  int stop(std::chrono::seconds deadline = std::chrono::seconds(30));

  /// SIGKILL at once (a crash, as far as the cluster can tell) and reaps the child.
  int kill();

  /// Waits until the log contains `text`; false (without recording a failure) on timeout or
  /// when the process has exited.
  bool wait_for_log(const std::string& text, std::chrono::milliseconds timeout);

  /// Everything the process has written so far.
  [[nodiscard]] std::string log() const;

  /// The last `lines` lines of the log.
  [[nodiscard]] std::string log_tail(std::size_t lines) const;

  [[nodiscard]] const std::filesystem::path& log_path() const { return log_path_; }
  [[nodiscard]] pid_t pid() const { return pid_; }

 private:
  // Forks and execs `argv` with `env` added to (or replacing entries of) the environment.
  void spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env);

  // Waits for the child for at most `timeout`; true once it has been reaped.
  bool reap(std::chrono::milliseconds timeout);

  std::filesystem::path log_path_;
  pid_t pid_ = -1;
  bool exited_ = true;
  int exit_status_ = -1;
};

}  // namespace nmo::e2e
