#pragma once
// What `leasehold watch` reports: turns successive observations of leases
// (polls) and release notices into change events. Pure logic, time passed in.

#include "leases.hpp"

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace leasehold::cli {

struct WatchEvent {
  enum class Kind {
    held,        ///< first sight of a held lease
    vacant,      ///< first sight of a group nobody holds
    acquired,    ///< nobody held it, now `holder` does
    released,    ///< `previous` released it (release notice)
    expired,     ///< `previous`'s lease ran out
    deleted,     ///< `previous`'s lease vanished before its expiry, without a notice seen (evicted?)
    taken_over,  ///< `previous` held it at the last look, now `holder` does
    new_term,    ///< the same holder, but a new term (fresh acquisition, new token)
    error,       ///< the group could not be read (`detail`)
  };
  Kind kind = Kind::held;
  std::string group;
  std::optional<std::string> holder;
  std::optional<std::string> previous;
  std::int64_t token = 0;
  std::optional<std::int64_t> ttl_ms;
  std::string detail;
};

std::string_view to_string(WatchEvent::Kind kind) noexcept;

class LeaseTracker {
 public:
  using Clock = std::chrono::steady_clock;

  /// A poll's result, read at `now`. Groups absent from `leases` are left
  /// as they were. Groups never seen before are reported as held/vacant
  /// before mark_baseline() and as changes (from vacant) after it.
  std::vector<WatchEvent> observe(const std::vector<LeaseInfo>& leases, Clock::time_point now);

  /// A release notice: `id` released `group`. Reported only when it matches
  /// the holder last seen (a late notice for an older term says nothing new).
  /// The next poll that still shows that term was read before the release,
  /// and says nothing.
  std::vector<WatchEvent> notice(std::string_view group, std::string_view id);

  /// A poll that shows a new holder is held back this long before it is
  /// reported as a takeover: the old holder's release notice travels on
  /// another connection and may be read after the poll's reply, although
  /// Redis sent it first. A notice within the grace makes it a release and
  /// an acquisition instead.
  static constexpr std::chrono::milliseconds takeover_grace{100};
  /// Whether some new holder is held back (poll again after takeover_grace).
  bool holding_back() const noexcept;

  /// The initial picture is complete; groups that show up later are new.
  void mark_baseline() noexcept { baseline_done_ = true; }

  bool knows(std::string_view group) const { return known_.find(group) != known_.end(); }

 private:
  /// A new holder seen by a poll, not yet reported (see takeover_grace).
  struct HeldBack {
    LeaseInfo lease;
    Clock::time_point seen;
  };
  struct Known {
    LeaseInfo lease;
    std::optional<Clock::time_point> expires_at;  ///< when the lease last seen ends, if it has a TTL
    std::optional<HeldBack> new_holder;
    /// The term a release notice ended, until the next poll of the group:
    /// the poll in flight then may have been read before the release.
    std::optional<LeaseInfo> released;
  };

  /// Makes `lease`, read at `at`, the one last seen.
  static void adopt(Known& known, const LeaseInfo& lease, Clock::time_point at);

  std::map<std::string, Known, std::less<>> known_;
  bool baseline_done_ = false;
};

}  // namespace leasehold::cli
