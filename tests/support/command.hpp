#pragma once
// A command-line program run as a child for a test that checks what it
// prints and how it exits: stdout and stderr kept apart (for parsing one and
// matching messages in the other), the environment adjusted, and the test's
// own io_context kept running meanwhile (electors in the test process must
// keep renewing while the child works).

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace leasehold::test {

struct CommandResult {
  std::optional<int> exit_code;  ///< nullopt: killed (timeout or signal)
  std::string out;               ///< everything written to stdout
  std::string err;               ///< everything written to stderr

  /// "exit 3; stdout: ...; stderr: ..." for assertion messages.
  std::string describe() const;
};

class Command {
 public:
  /// Starts argv[0] (a path) with stdin from /dev/null. `env` adjusts the
  /// inherited environment: "NAME=value" sets, a bare "NAME" removes. The
  /// child dies with the test (PR_SET_PDEATHSIG). Throws std::runtime_error
  /// if it cannot be started.
  Command(const std::vector<std::string>& argv, const std::vector<std::string>& env = {});
  /// Kills the child if still running, reaps it and removes its output files.
  ~Command();
  Command(const Command&) = delete;
  Command& operator=(const Command&) = delete;

  pid_t pid() const noexcept { return pid_; }
  bool running();
  void signal(int sig) const;
  /// What the child wrote so far.
  std::string out() const;
  std::string err() const;

  /// Waits for the child to exit, calling `pump` in between (or sleeping a
  /// millisecond when empty); kills it after `timeout`.
  CommandResult wait(std::chrono::milliseconds timeout, const std::function<void()>& pump = {});

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
  std::string dir_;
};

/// Runs a command to completion (see Command).
CommandResult run_command(const std::vector<std::string>& argv, const std::vector<std::string>& env = {},
                          const std::function<void()>& pump = {},
                          std::chrono::milliseconds timeout = std::chrono::seconds(30));

}  // namespace leasehold::test
