#include "failover/member_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <thread>

namespace leasehold::bench {

namespace {

// After fork(): async-signal-safe calls only.
[[noreturn]] void exec_child(pid_t parent, int stdin_fd, const char* log_file, char* const* argv) {
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) ::_exit(127);
  ::signal(SIGPIPE, SIG_DFL);  // the benchmark ignores SIGPIPE; exec would keep that
  const int out = ::open(log_file, O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (out < 0 || ::dup2(stdin_fd, STDIN_FILENO) < 0 || ::dup2(out, STDOUT_FILENO) < 0 ||
      ::dup2(out, STDERR_FILENO) < 0) {
    ::_exit(127);
  }
  ::close_range(3, ~0U, 0);
  ::execv(argv[0], argv);
  ::_exit(127);
}

}  // namespace

MemberProcess::MemberProcess(std::vector<std::string> argv, const std::string& log_file) {
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::system_error(err, std::generic_category(), "fork");
  }
  if (pid == 0) exec_child(parent, fds[0], log_file.c_str(), cargv.data());
  ::close(fds[0]);
  pid_ = pid;
  stdin_fd_ = fds[1];
}

MemberProcess::~MemberProcess() {
  kill();
  if (stdin_fd_ >= 0) ::close(stdin_fd_);
}

bool MemberProcess::send(std::string_view line) const {
  const std::string l = std::string(line) + "\n";
  return ::write(stdin_fd_, l.data(), l.size()) == static_cast<ssize_t>(l.size());
}

void MemberProcess::kill() {
  if (pid_ <= 0 || reaped_) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
}

bool MemberProcess::running() {
  if (pid_ <= 0 || reaped_) return false;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_ || (r < 0 && errno == ECHILD)) reaped_ = true;
  return !reaped_;
}

bool MemberProcess::wait_exit(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return !running();
}

}  // namespace leasehold::bench
