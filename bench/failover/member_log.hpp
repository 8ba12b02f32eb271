#pragma once
// Reads a leasehold_member --out file as it grows: one event per complete
// line. Times are steady_clock nanoseconds (CLOCK_MONOTONIC, shared by every
// process on the machine), directly comparable with the benchmark's own.

#include <cstdint>
#include <string>
#include <vector>

namespace leasehold::bench {

struct MemberEvent {
  enum class Kind {
    ready, elected, revoked, step_down, join, began, extended, ended, stopped, error, log,
    background_led,      ///< --background-groups: the member led all of its own groups
    background_revoked,  ///< one of them was lost (group, detail: the reason)
    other
  };
  Kind kind = Kind::other;
  std::string group;
  std::int64_t token = 0;
  std::int64_t at = 0;        ///< when it happened (the line's own instant)
  std::int64_t sent_at = 0;   ///< audit: send instant of the confirming command
  std::int64_t deadline = 0;  ///< audit began/extended: the local deadline
  std::string detail;         ///< revoked: the reason; error, log: the message (log: after its level)
};

class MemberLog {
 public:
  explicit MemberLog(std::string path) : path_(std::move(path)) {}

  /// Parses whatever complete lines were appended since the last call.
  void poll();
  const std::vector<MemberEvent>& events() const noexcept { return events_; }
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
  std::uint64_t offset_ = 0;
  std::string partial_;
  std::vector<MemberEvent> events_;
};

/// One line of the member's format (see tests/fleet/member.cpp).
MemberEvent parse_member_line(const std::string& line);

}  // namespace leasehold::bench
