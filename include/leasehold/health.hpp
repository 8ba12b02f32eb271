#pragma once
// Health of an Elector for liveness and readiness probes: the facts, the
// thresholds, and a verdict computed from them. Elector::health() fills one
// in from any thread without waiting for the elector's executor, so a probe
// still answers (with live == false) when that executor is stuck.

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

namespace leasehold {

/// A probe's view of one Elector: facts, thresholds and the verdict that
/// evaluate() derives from them. A plain value from Elector::health().
struct Health {
  /// The unit of every age and lag below.
  using Duration = std::chrono::steady_clock::duration;

  // ---- facts --------------------------------------------------------------
  bool started = false;    ///< start() has run on the elector's executor
  bool stopped = false;    ///< stop() has begun (or the elector was abandoned)
  bool connected = false;  ///< the commands connection is up
  bool notices = false;    ///< the subscriber connection is up (fast failover); informational
  /// Age of the last non-error reply on the commands connection (health-check
  /// PINGs included); nullopt before the first.
  std::optional<Duration> last_reply_age;
  /// Time since the elector's executor last ran its periodic pulse (every
  /// min(ttl / 10, 500 ms)); a growing value means the executor is blocked
  /// or not being run.
  Duration loop_age{};
  /// Over the groups this instance leads: how late the current renewal is
  /// (now - scheduled instant) while it is due but not yet sent, else how
  /// late the last one was sent. Zero when leading nothing. A lag above
  /// ttl - drift_margin - clock_skew - heartbeat_interval costs the lease.
  Duration heartbeat_lag{};
  /// Groups whose last lease command got an error reply (NOPERM, WRONGTYPE,
  /// OOM, ...), which no reconnect cures.
  std::size_t failing_groups = 0;
  /// Groups where another live process campaigns with this instance id
  /// (errc::duplicate_instance_id): a misconfiguration to fix.
  std::size_t duplicate_id_groups = 0;

  // ---- thresholds (Elector::health() derives them from the options) --------
  /// live requires loop_age <= max_loop_age. Default: ttl.
  Duration max_loop_age{};
  /// ready requires last_reply_age <= max_reply_age. Default: the larger of
  /// ttl / 2 and health_check_interval + command_timeout (an idle connection
  /// only hears from Redis once per health check).
  Duration max_reply_age{};

  // ---- verdict (computed by evaluate()) -------------------------------------
  /// The executor runs: restart the process when this stays false. True
  /// before start() and after stop(), which are not failures.
  bool live = false;
  /// The instance takes part in elections: started, not stopped, live,
  /// connected, last reply no older than max_reply_age, no failing group.
  bool ready = false;
  /// Empty when ready; otherwise the first failed check, in words.
  std::string reason;

  /// Computes live, ready and reason from the facts and thresholds above.
  /// Elector::health() already calls it; call it again after changing a
  /// threshold to apply your own.
  void evaluate();
};

}  // namespace leasehold
