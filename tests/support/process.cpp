#include "support/process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>

extern char** environ;

namespace leasehold::test {

namespace {

// Finds the program the way execvp would, but in the parent, so that the
// child only has async-signal-safe work left to do after fork().
std::string resolve_program(const std::string& name) {
  if (name.empty()) throw std::runtime_error("Process: empty argv[0]");
  if (name.find('/') != std::string::npos) return name;
  const char* path_env = std::getenv("PATH");
  std::string_view path = path_env != nullptr ? path_env : "/usr/local/bin:/usr/bin:/bin";
  while (true) {
    const auto colon = path.find(':');
    std::string dir(path.substr(0, colon));
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    if (colon == std::string_view::npos) break;
    path.remove_prefix(colon + 1);
  }
  throw std::runtime_error("Process: program not found in PATH: " + name);
}

// Child side of fork(): reports errno to the parent and exits.
[[noreturn]] void child_fail(int error_fd) {
  const int err = errno;
  [[maybe_unused]] auto n = ::write(error_fd, &err, sizeof err);
  ::_exit(127);
}

// Child side of fork(): async-signal-safe calls only.
[[noreturn]] void child_exec(pid_t parent, const char* program, char* const* argv, char* const* envp,
                             const char* log_file, int error_fd, int max_fd) {
  auto fail = [error_fd]() { child_fail(error_fd); };

  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) fail();
  // The parent may have died between fork() and prctl().
  if (::getppid() != parent) ::_exit(127);

  // Start from a clean signal state: ignored dispositions (e.g. SIGPIPE) and
  // the blocked mask survive exec otherwise.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    ::sigaction(sig, &dfl, nullptr);
  }
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);

  const int in = ::open("/dev/null", O_RDONLY);
  if (in < 0 || ::dup2(in, STDIN_FILENO) < 0) fail();
  const int out = ::open(log_file, O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (out < 0 || ::dup2(out, STDOUT_FILENO) < 0 || ::dup2(out, STDERR_FILENO) < 0) fail();

  // Leak nothing into the child (sockets of other test fixtures especially:
  // a child holding a copy would keep them open after the test closes them).
  // error_fd is close-on-exec and must stay usable until execve.
  const auto lo = static_cast<unsigned>(error_fd);
  bool closed = true;
  if (error_fd > 3 && ::close_range(3, lo - 1, 0) != 0) closed = false;
  if (closed && ::close_range(lo + 1, ~0U, 0) != 0) closed = false;
  if (!closed) {
    for (int fd = 3; fd < max_fd; ++fd) {
      if (fd != error_fd) ::close(fd);
    }
  }

  ::execve(program, argv, envp);
  child_fail(error_fd);
}

}  // namespace

Process::Process(std::vector<std::string> argv, std::string log_file, std::vector<std::string> environment)
    : log_file_(std::move(log_file)) {
  if (argv.empty()) throw std::runtime_error("Process: empty argv");
  const std::string program = resolve_program(argv[0]);
  const std::string log_path = log_file_.empty() ? std::string("/dev/null") : log_file_;

  std::vector<char*> cargv;
  cargv.reserve(argv.size() + 1);
  for (auto& arg : argv) cargv.push_back(arg.data());
  cargv.push_back(nullptr);

  // The child's environment, built here: after fork() it may not allocate.
  std::vector<char*> cenv;
  for (auto& entry : environment) cenv.push_back(entry.data());
  for (char** e = environ; *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    const std::string_view name(*e, eq != nullptr ? static_cast<std::size_t>(eq - *e) : std::strlen(*e));
    const bool overridden = std::any_of(environment.begin(), environment.end(), [&](const std::string& entry) {
      return entry.size() > name.size() && entry.compare(0, name.size(), name) == 0 && entry[name.size()] == '=';
    });
    if (!overridden) cenv.push_back(*e);
  }
  cenv.push_back(nullptr);

  rlimit lim{};
  int max_fd = 65536;
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY &&
      lim.rlim_cur < static_cast<rlim_t>(INT_MAX)) {
    max_fd = static_cast<int>(lim.rlim_cur);
  }

  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    throw std::system_error(errno, std::generic_category(), "Process: pipe2");
  }

  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    throw std::system_error(err, std::generic_category(), "Process: fork");
  }
  if (pid == 0) {
    ::close(pipe_fds[0]);
    child_exec(parent, program.c_str(), cargv.data(), cenv.data(), log_path.c_str(), pipe_fds[1], max_fd);
  }

  ::close(pipe_fds[1]);
  pid_ = pid;
  // EOF: execve succeeded (the close-on-exec write end went away).
  // An int: the errno of the step that failed.
  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(pipe_fds[0], &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  ::close(pipe_fds[0]);
  if (n > 0) {
    reap_blocking();
    pid_ = -1;
    throw std::runtime_error("Process: cannot start " + program + ": " +
                             std::strerror(child_errno));
  }
}

Process::Process(Process&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      log_file_(std::move(other.log_file_)),
      status_(std::exchange(other.status_, std::nullopt)) {}

Process& Process::operator=(Process&& other) noexcept {
  if (this != &other) {
    release();
    pid_ = std::exchange(other.pid_, -1);
    log_file_ = std::move(other.log_file_);
    status_ = std::exchange(other.status_, std::nullopt);
  }
  return *this;
}

Process::~Process() { release(); }

void Process::release() noexcept {
  if (pid_ > 0 && !status_) {
    ::kill(pid_, SIGKILL);
    reap_blocking();
  }
}

void Process::reap_blocking() const {
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &status, 0);
  } while (r < 0 && errno == EINTR);
  // ECHILD (someone else reaped it): record something so we never wait again.
  status_ = r == pid_ ? status : -1;
}

bool Process::signal(int sig) const {
  if (pid_ <= 0 || status_) return false;
  return ::kill(pid_, sig) == 0;
}

void Process::kill() {
  if (pid_ <= 0 || status_) return;
  ::kill(pid_, SIGKILL);
  reap_blocking();
}

void Process::stop() const { signal(SIGSTOP); }

void Process::cont() const { signal(SIGCONT); }

bool Process::running() const {
  if (pid_ <= 0 || status_) return false;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    status_ = status;
    return false;
  }
  if (r < 0 && errno == ECHILD) {
    status_ = -1;
    return false;
  }
  return true;
}

std::optional<int> Process::wait_exit(std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (running()) {
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return status_;
}

std::string describe_wait_status(int status) {
  if (status == -1) return "reaped elsewhere";
  if (WIFEXITED(status)) return "exited with " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = ::strsignal(sig);
    return "killed by signal " + std::to_string(sig) + " (" + (name ? name : "?") + ")";
  }
  return "status " + std::to_string(status);
}

}  // namespace leasehold::test
