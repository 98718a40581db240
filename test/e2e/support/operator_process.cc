#include "test/e2e/support/operator_process.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string_view>
#include <thread>

#include <gtest/gtest.h>

#ifndef NMO_SOURCE_DIR
#error "NMO_SOURCE_DIR must be defined by the build (test/CMakeLists.txt)"
#endif
#ifndef NMO_BINARY_DIR
#error "NMO_BINARY_DIR must be defined by the build (test/CMakeLists.txt)"
#endif

extern char** environ;

namespace nmo::e2e {

using namespace std::chrono_literals;

std::filesystem::path source_dir() { return NMO_SOURCE_DIR; }

std::filesystem::path operator_binary() {
  if (const char* bin = std::getenv("NMO_OPERATOR_BIN"); bin != nullptr && *bin != '\0') {
    return bin;
  }
  return std::filesystem::path(NMO_BINARY_DIR) / "bin" / "node-maintenance-operator";
}

std::filesystem::path e2e_log_dir() {
  const std::filesystem::path dir = std::filesystem::path(NMO_BINARY_DIR) / "e2e-logs";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  return dir;
}

OperatorProcess::OperatorProcess(const std::string& log_name, const std::vector<std::string>& flags)
    : log_path_(e2e_log_dir() / (log_name + ".log")) {
  const std::filesystem::path binary = operator_binary();
  if (!std::filesystem::exists(binary)) {
    ADD_FAILURE() << "operator binary " << binary
                  << " not found: build it with `cmake --build --preset dev --target "
                     "node-maintenance-operator` or set NMO_OPERATOR_BIN";
    return;
  }
  std::vector<std::string> argv{binary.string()};
  // As its ServiceAccount when `make test` made a kubeconfig for it (the RBAC of deploy/ is then
  // exercised by every test), else as whoever KUBECONFIG names.
  const char* kubeconfig = std::getenv("NMO_OPERATOR_KUBECONFIG");
  if (kubeconfig == nullptr || *kubeconfig == '\0') kubeconfig = std::getenv("KUBECONFIG");
  const auto has_flag = [&flags](const char* name) {
    return std::any_of(flags.begin(), flags.end(),
                       [name](const std::string& flag) { return flag.rfind(name, 0) == 0; });
  };
  if (!has_flag("--kubeconfig") && kubeconfig != nullptr && *kubeconfig != '\0') {
    argv.insert(argv.end(), {"--kubeconfig", kubeconfig});
  }
  // Without certificates the webhook cannot serve; tests that want it pass --webhook-port.
  if (!has_flag("--webhook-port")) argv.insert(argv.end(), {"--webhook-port", "0"});
  // Tests serve on loopback only, on ports the kernel picks, so that two operators (a leader
  // and a standby) never compete for the default :8443 and :8081.
  if (!has_flag("--metrics-bind-address")) {
    argv.insert(argv.end(), {"--metrics-bind-address", "127.0.0.1:0"});
  }
  if (!has_flag("--health-probe-bind-address")) {
    argv.insert(argv.end(), {"--health-probe-bind-address", "127.0.0.1:0"});
  }
  argv.insert(argv.end(), flags.begin(), flags.end());
  spawn(argv, {});
}

OperatorProcess::OperatorProcess(const ForeignOperator& foreign, const std::string& log_name)
    : log_path_(e2e_log_dir() / (log_name + ".log")) {
  if (!std::filesystem::exists(foreign.binary)) {
    ADD_FAILURE() << "operator binary " << foreign.binary << " not found";
    return;
  }
  std::vector<std::string> argv{foreign.binary.string()};
  argv.insert(argv.end(), foreign.args.begin(), foreign.args.end());
  spawn(argv, foreign.env);
}

void OperatorProcess::spawn(const std::vector<std::string>& argv,
                            const std::vector<std::string>& env) {
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // The test's environment, an entry of `env` replacing the one of the same name.
  std::vector<std::string> environment(env.begin(), env.end());
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const std::string_view name = entry.substr(0, entry.find('='));
    const bool replaced = std::any_of(env.begin(), env.end(), [name](const std::string& mine) {
      return mine.size() > name.size() && mine.compare(0, name.size(), name) == 0 &&
             mine[name.size()] == '=';
    });
    if (!replaced) environment.emplace_back(entry);
  }
  std::vector<char*> envp;
  envp.reserve(environment.size() + 1);
  for (auto& e : environment) envp.push_back(e.data());
  envp.push_back(nullptr);

  const int log_fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (log_fd < 0 || null_fd < 0) {
    ADD_FAILURE() << "cannot open " << log_path_ << " or /dev/null: " << std::strerror(errno);
    if (log_fd >= 0) ::close(log_fd);
    if (null_fd >= 0) ::close(null_fd);
    return;
  }
  std::string header = "# started:";
  for (const auto& a : argv) header += ' ' + a;
  header += '\n';
  (void)!::write(log_fd, header.data(), header.size());

  // fork + exec rather than posix_spawn: only a forked child can ask for PR_SET_PDEATHSIG
  // before exec. Between fork and exec the child calls async-signal-safe functions only.
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the test died before prctl took effect
    ::dup2(null_fd, STDIN_FILENO);
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    ::execve(args[0], args.data(), envp.data());
    static constexpr char kExecFailed[] = "# exec failed\n";
    (void)!::write(STDERR_FILENO, kExecFailed, sizeof(kExecFailed) - 1);
    ::_exit(127);
  }
  ::close(log_fd);
  ::close(null_fd);
  if (pid < 0) {
    ADD_FAILURE() << "fork failed: " << std::strerror(errno);
    return;
  }
  pid_ = pid;
  exited_ = false;
}

OperatorProcess::~OperatorProcess() { (void)stop(); }

bool OperatorProcess::reap(std::chrono::milliseconds timeout) {
  if (exited_) return true;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exited_ = true;
      if (WIFEXITED(status)) {
        exit_status_ = WEXITSTATUS(status);
      } else if (WIFSIGNALED(status)) {
        exit_status_ = 128 + WTERMSIG(status);
      }
      return true;
    }
    if (r < 0 && errno != EINTR) {  // not our child any more: nothing left to wait for
      exited_ = true;
      return true;
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    // Polling interval of a child's exit, not a synchronisation sleep.
    std::this_thread::sleep_for(20ms);
  }
}

bool OperatorProcess::running() { return !reap(0ms); }

int OperatorProcess::stop(std::chrono::seconds deadline) {
  if (exited_) return exit_status_;
  ::kill(pid_, SIGTERM);
  if (!reap(deadline)) {
    ADD_FAILURE() << "the operator (pid " << pid_ << ") did not stop within " << deadline.count()
                  << " s of SIGTERM; killing it";
    ::kill(pid_, SIGKILL);
    (void)reap(10s);
  }
  return exit_status_;
}

int OperatorProcess::kill() {
  if (exited_) return exit_status_;
  ::kill(pid_, SIGKILL);
  (void)reap(10s);
  return exit_status_;
}

bool OperatorProcess::wait_for_log(const std::string& text, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (log().find(text) != std::string::npos) return true;
    if (!running() || std::chrono::steady_clock::now() >= deadline) return false;
    // Polling interval of a log file, not a synchronisation sleep.
    std::this_thread::sleep_for(50ms);
  }
}

std::string OperatorProcess::log() const {
  std::ifstream in(log_path_, std::ios::binary);
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

std::string OperatorProcess::log_tail(std::size_t lines) const {
  const std::string text = log();
  std::size_t pos = text.size();
  if (pos > 0 && text[pos - 1] == '\n') --pos;
  for (std::size_t seen = 0; pos > 0; --pos) {
    if (text[pos - 1] == '\n' && ++seen == lines) break;
  }
  return text.substr(pos);
}

}  // namespace nmo::e2e
