#pragma once
// K leasehold_member processes campaigning for one group against one Redis:
// spawning, replacing, finding the leader and waiting for events in their logs.

#include "failover/member_log.hpp"
#include "failover/member_process.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace leasehold::bench {

struct FleetConfig {
  std::string member_binary;
  std::string url;
  std::string dir;      ///< where --out files and logs go
  std::string group = "default";
  std::chrono::milliseconds ttl{1000};
  std::chrono::milliseconds heartbeat{333};
  std::chrono::milliseconds retry{500};
  std::vector<std::string> extra_args;  ///< more member flags (--confirm-replicas, --log-level, ...)
  int background_groups = 0;            ///< each member also leads this many groups of its own
};

struct Member {
  std::string id;
  std::unique_ptr<MemberProcess> process;
  MemberLog log;
  bool alive = true;  ///< false once killed or stopped by the benchmark
};

std::int64_t now_ns();

class Fleet {
 public:
  explicit Fleet(FleetConfig config) : config_(std::move(config)) {}
  /// Stops every member still running ("stop", then SIGKILL after 3 s).
  ~Fleet();

  const FleetConfig& config() const noexcept { return config_; }

  /// Starts a member with a fresh id and, after the fleet's own flags,
  /// `extra_args` (--priority N, say); returns once it logged `ready` and,
  /// with background groups, once it leads all of them.
  Member& spawn(const std::vector<std::string>& extra_args = {});
  /// Reads every live member's new log lines.
  void poll();
  /// Marks the member as exited and reads its log one last time.
  void retire(Member& m);
  /// The one live member that leads the group (its last elected is not yet
  /// revoked); nullptr when none or, transiently, more than one.
  Member* leader();
  /// Polls every 5 ms until `done()` or `timeout`; returns done().
  bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds timeout);
  /// The first `elected` event for `group` (empty: the fleet's group) after
  /// `after_ns` in a member other than `except`.
  std::optional<std::pair<Member*, MemberEvent>> elected_after(std::int64_t after_ns, const Member* except,
                                                               const std::string& group = {});
  /// SIGKILLs the member; returns the instant just before the signal.
  std::int64_t kill(Member& m);
  /// Graceful stop of every live member.
  void stop_all();
  std::vector<std::unique_ptr<Member>>& members() noexcept { return members_; }

 private:
  FleetConfig config_;
  std::vector<std::unique_ptr<Member>> members_;
  int next_id_ = 1;
};

/// The last event of `kind` for `group` in `log`, if any.
const MemberEvent* last_event(const MemberLog& log, MemberEvent::Kind kind, const std::string& group);

}  // namespace leasehold::bench
