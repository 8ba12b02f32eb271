#pragma once
// One leasehold_member child process with a pipe to its stdin, so that the
// benchmark can send it "step_down <group>" and "stop" commands. (The test
// harness's Process gives children /dev/null as stdin.)

#include <sys/types.h>

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

namespace leasehold::bench {

class MemberProcess {
 public:
  /// Starts `argv` (argv[0] a path) with stdout and stderr appended to
  /// `log_file`. The child gets PR_SET_PDEATHSIG=SIGKILL, so it never
  /// outlives the benchmark. Throws std::system_error if it cannot start.
  MemberProcess(std::vector<std::string> argv, const std::string& log_file);
  /// SIGKILL and reap if still running.
  ~MemberProcess();
  MemberProcess(const MemberProcess&) = delete;
  MemberProcess& operator=(const MemberProcess&) = delete;

  pid_t pid() const noexcept { return pid_; }
  /// Writes `line` and a newline to the child's stdin (false if it is gone).
  bool send(std::string_view line) const;
  /// SIGKILL, then reap. No-op once reaped.
  void kill();
  /// Waits up to `timeout` for the child to exit; true once reaped.
  bool wait_exit(std::chrono::milliseconds timeout);
  bool running();

 private:
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  bool reaped_ = false;
};

}  // namespace leasehold::bench
