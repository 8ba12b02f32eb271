#pragma once
// A child process for tests: spawned with an argv, its stdout and stderr
// appended to a log file, and killed and reaped when the handle goes away.

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace leasehold::test {

class Process {
 public:
  /// Starts argv[0] (looked up in PATH when it has no '/') with the given
  /// arguments. stdin is /dev/null; stdout and stderr are appended to
  /// log_file (created if missing; empty: /dev/null). The child gets
  /// PR_SET_PDEATHSIG=SIGKILL, so it dies with the thread that spawned it
  /// (and so with a crashed test), and inherits no descriptor besides 0-2.
  /// Throws std::system_error if the fork fails, std::runtime_error if the
  /// program cannot be found or executed. `environment` ("NAME=value")
  /// is added to (and wins over) the parent's environment.
  Process(std::vector<std::string> argv, std::string log_file, std::vector<std::string> environment = {});

  Process(Process&& other) noexcept;
  Process& operator=(Process&& other) noexcept;
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  /// SIGKILLs the child if still running and reaps it.
  ~Process();

  pid_t pid() const noexcept { return pid_; }
  const std::string& log_file() const noexcept { return log_file_; }

  /// Sends sig to the child; false if it has already been reaped or kill(2)
  /// failed.
  bool signal(int sig) const;

  /// SIGKILL and reap (waitpid). No-op once reaped.
  void kill();
  /// SIGSTOP: the child stays alive but frozen.
  void stop() const;
  /// SIGCONT.
  void cont() const;

  /// True until the child has exited (reaps it if it has: waitpid WNOHANG).
  /// A stopped child counts as running.
  bool running() const;

  /// Waits up to timeout for the child to exit and reaps it. Returns the raw
  /// waitpid status (use WIFEXITED/WEXITSTATUS/WTERMSIG), or nullopt if it
  /// is still running at the deadline.
  std::optional<int> wait_exit(std::chrono::milliseconds timeout) const;

  /// The raw waitpid status once reaped.
  std::optional<int> exit_status() const noexcept { return status_; }

 private:
  void reap_blocking() const;
  void release() noexcept;

  pid_t pid_ = -1;
  std::string log_file_;
  mutable std::optional<int> status_;  // set once reaped
};

/// "exited with 3", "killed by signal 9 (Killed)", ...
std::string describe_wait_status(int status);

}  // namespace leasehold::test
