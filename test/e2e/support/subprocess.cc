#include "test/e2e/support/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>

extern char** environ;

namespace nmo::e2e {
namespace {

// Owns one pipe; closes whatever ends are still open.
class Pipe {
 public:
  Pipe() {
    if (::pipe2(fds_.data(), O_CLOEXEC) != 0) fds_ = {-1, -1};
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  ~Pipe() {
    close_read();
    close_write();
  }
  [[nodiscard]] bool valid() const { return fds_[0] >= 0; }
  [[nodiscard]] int read_end() const { return fds_[0]; }
  [[nodiscard]] int write_end() const { return fds_[1]; }
  void close_read() { close_fd(0); }
  void close_write() { close_fd(1); }

 private:
  void close_fd(std::size_t i) {
    if (fds_[i] >= 0) ::close(fds_[i]);
    fds_[i] = -1;
  }
  std::array<int, 2> fds_{-1, -1};
};

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv, const std::string& input) {
  // A child that exits without reading its stdin must not kill us with SIGPIPE.
  static const bool kSigpipeIgnored = [] { return std::signal(SIGPIPE, SIG_IGN) != SIG_ERR; }();
  (void)kSigpipeIgnored;
  ProcessResult result;
  Pipe in, out, err;
  if (argv.empty() || !in.valid() || !out.valid() || !err.valid()) {
    result.exit_code = 127;
    result.err = "cannot start process: no command or no pipes";
    return result;
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in.read_end(), STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out.write_end(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err.write_end(), STDERR_FILENO);

  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    result.exit_code = 127;
    result.err = "cannot start " + argv[0] + ": " + std::strerror(rc);
    return result;
  }
  in.close_read();
  out.close_write();
  err.close_write();

  // Feed stdin and drain stdout/stderr together so a chatty child never blocks on a full pipe.
  std::size_t written = 0;
  if (input.empty()) in.close_write();
  std::array<char, 65536> buf{};
  for (;;) {
    std::array<pollfd, 3> fds{
        {{out.read_end(), POLLIN, 0}, {err.read_end(), POLLIN, 0}, {in.write_end(), POLLOUT, 0}}};
    const bool any_open = fds[0].fd >= 0 || fds[1].fd >= 0;
    if (!any_open) break;
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (std::size_t i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buf.data(), buf.size());
      if (n > 0) {
        (i == 0 ? result.out : result.err).append(buf.data(), static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        (i == 0 ? out : err).close_read();
      }
    }
    if (fds[2].fd >= 0 && fds[2].revents != 0) {
      const ssize_t n = ::write(fds[2].fd, input.data() + written, input.size() - written);
      if (n > 0) written += static_cast<std::size_t>(n);
      if (n < 0 && errno != EINTR) written = input.size();
      if (written == input.size()) in.close_write();
    }
  }

  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.exit_code = 128 + WTERMSIG(status);
  }
  return result;
}

}  // namespace nmo::e2e
