#include "kube/config/internal/process.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <system_error>

namespace nmo::kube::internal {
namespace {

// Closes a file descriptor when it goes out of scope.
class Fd {
 public:
  Fd() = default;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }

  [[nodiscard]] int get() const { return fd_; }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// A pipe whose ends close themselves; both are close-on-exec, so only the ends dup2()ed onto
// the child's standard streams reach it.
struct Pipe {
  Fd read;
  Fd write;
};

Result<void> make_pipe(Pipe& pipe) {
  std::array<int, 2> fds{-1, -1};
  if (::pipe2(fds.data(), O_CLOEXEC) != 0) {
    return Error(ErrorCode::kInternal, std::generic_category().message(errno));
  }
  pipe.read.reset(fds[0]);
  pipe.write.reset(fds[1]);
  return {};
}

ErrorCode spawn_error_code(int error) {
  if (error == ENOENT || error == ENOTDIR) return ErrorCode::kNotFound;
  if (error == EACCES || error == EPERM) return ErrorCode::kForbidden;
  return ErrorCode::kInternal;
}

// Reads `fd` until EOF into `out`, keeping at most kMaxProcessOutput bytes.
bool read_some(int fd, std::string& out) {
  std::array<char, 16384> buffer{};
  const ssize_t n = ::read(fd, buffer.data(), buffer.size());
  if (n < 0) return errno == EINTR || errno == EAGAIN;
  if (n == 0) return false;
  const std::size_t room = kMaxProcessOutput - std::min(out.size(), kMaxProcessOutput);
  out.append(buffer.data(), std::min(room, static_cast<std::size_t>(n)));
  return true;
}

}  // namespace

Result<ProcessOutput> run_process(const std::vector<std::string>& argv,
                                  const std::vector<std::string>& env, ProcessStdio stdio) {
  if (argv.empty() || argv[0].empty()) {
    return Error(ErrorCode::kInvalid, "no command");
  }
  Pipe out;
  Pipe err;
  NMO_TRY(make_pipe(out));
  if (!stdio.interactive) NMO_TRY(make_pipe(err));

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!stdio.interactive) {
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, err.write.get(), STDERR_FILENO);
  }
  posix_spawn_file_actions_adddup2(&actions, out.write.get(), STDOUT_FILENO);

  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  std::vector<char*> envp;
  envp.reserve(env.size() + 1);
  for (const auto& entry : env) envp.push_back(const_cast<char*>(entry.c_str()));
  envp.push_back(nullptr);

  pid_t pid = 0;
  // glibc's posix_spawnp reports a failed exec (a missing or non-executable command) here.
  const int rc = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    return Error(spawn_error_code(rc), std::generic_category().message(rc));
  }
  out.write.reset();
  err.write.reset();

  ProcessOutput result;
  // Drain stdout and stderr together so a chatty plugin never blocks on a full pipe.
  std::array<pollfd, 2> fds{{{out.read.get(), POLLIN, 0}, {err.read.get(), POLLIN, 0}}};
  while (fds[0].fd >= 0 || fds[1].fd >= 0) {
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      if (!read_some(fds[i].fd, i == 0 ? result.out : result.err)) fds[i].fd = -1;
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) result.exit_status = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  return result;
}

}  // namespace nmo::kube::internal
