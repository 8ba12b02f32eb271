#pragma once
// Steady-state Redis load of one group with 1 leader + N idle standbys, from
// INFO commandstats deltas over a window. Commands that the lease scripts run
// inside Redis tell the two roles apart: a renewal runs PEXPIRE, a standby's
// failed acquire runs PTTL, and both arrive as one EVALSHA.

#include <chrono>
#include <cstdint>
#include <string>

namespace leasehold::bench {

struct LoadConfig {
  std::string member_binary;
  std::string dir;
  int standbys = 2;
  std::chrono::milliseconds ttl{1000}, heartbeat{333}, retry{500};
  std::chrono::seconds window{10};
};

struct LoadResult {
  int standbys = 0;
  double seconds = 0;
  double evalsha_per_s = 0;      ///< every lease script call
  double renewals_per_s = 0;     ///< PEXPIRE inside scripts (the leader's renewals)
  double standby_acquires_per_s = 0;  ///< PTTL inside scripts (failed acquires), all standbys
  double audit_renewals_per_s = 0;    ///< the leader's own count (audit `extended`), a cross-check
  double ping_per_s = 0;         ///< health checks: per connection, not per group
  double other_per_s = 0;        ///< anything else the members sent
  double client_commands_per_s = 0;  ///< what the members sent: scripts, PINGs and the rest
  double redis_commands_per_s = 0;   ///< what Redis ran, the commands inside scripts too
  int leaders_seen = 0;          ///< must be 1: a change of leader spoils the window
};

/// Starts its own redis-server and 1 + standbys members, lets them settle,
/// measures for `window`, stops them.
LoadResult measure_steady_load(const LoadConfig& config);

}  // namespace leasehold::bench
