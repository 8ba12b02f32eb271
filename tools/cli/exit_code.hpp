#pragma once
// The CLI's exit codes: part of its interface (scripts test them), so they are
// documented in docs/cli.md and never renumbered.

#include <stdexcept>
#include <string>

namespace leasehold::cli {

enum ExitCode : int {
  exit_ok = 0,           ///< done: the lease was released or removed, every group is held
  exit_nothing = 1,      ///< nothing done or nothing held: not the holder, no such key, declined
  exit_usage = 2,        ///< bad command line: unknown flag, bad URL, bad group name, missing --force
  exit_unavailable = 3,  ///< Redis unreachable, refused us (auth, ACL) or answered with an error
};

/// An error that ends the command with `code` after printing `what()`.
class Failure : public std::runtime_error {
 public:
  Failure(ExitCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ExitCode code() const noexcept { return code_; }

 private:
  ExitCode code_;
};

}  // namespace leasehold::cli
