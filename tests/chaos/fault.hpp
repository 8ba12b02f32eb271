#pragma once
// The faults the chaos runner injects, and the liveness bound of each: how
// soon after it every group must have a leader again. The bounds follow from
// the library's timing (lease ttl, retry interval, client timeouts and
// reconnect backoff) plus a stated scheduling margin; docs/reliability.md
// explains each.

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace leasehold::chaos {

using std::chrono::milliseconds;

enum class FaultKind {
  kill,           ///< SIGKILL an instance, respawn it at once (same or new id)
  freeze,         ///< SIGSTOP an instance for longer than ttl, then SIGCONT
  blackhole,      ///< swallow all traffic of one instance's proxy for a while
  delay,          ///< add latency to one instance's proxy for a while
  step_down,      ///< "step_down <group>" to the group's leader
  redis_pause,    ///< SIGSTOP redis-server for a while, then SIGCONT
  redis_restart,  ///< SIGKILL redis-server, keep it down for ttl or more, restart it empty
  /// SIGKILL redis-server and restart it empty within ttl: a leader that
  /// learns of it late (partitioned, frozen, slow) still claims until its
  /// deadline; the empty-restart guard keeps the group vacant for one ttl,
  /// so nobody else may lead meanwhile.
  redis_fast_restart,
  script_flush,   ///< SCRIPT FLUSH
  client_kill,    ///< CLIENT KILL TYPE normal: every command connection is dropped
  maxmemory,      ///< maxmemory 1 (noeviction) for a while: writes fail with OOM
  // Sentinel and cluster topologies (see deployment.hpp); on a cluster
  // "the master" is one shard's master.
  master_kill,      ///< SIGKILL the master; once a replica is promoted, restart it (it rejoins as a replica)
  master_freeze,    ///< SIGSTOP the master until a replica is promoted, then SIGCONT: a stale master
  master_failover,  ///< SENTINEL FAILOVER, or CLUSTER FAILOVER on the shard master's replica
  replica_kill,     ///< SIGKILL a replica for a while, then restart it
  sentinel_kill,    ///< SIGKILL a sentinel for a while, then restart it
  /// Cluster only: move the slot of a group's keys to another master while
  /// the members run; one key moves at once, the rest (and the slot) when
  /// it heals, so for a while the group's keys are split between two nodes.
  slot_migration,
};

/// What the runner injects unless told otherwise: everything the lease model
/// promises to survive.
inline constexpr FaultKind kDefaultFaultKinds[] = {
    FaultKind::kill,        FaultKind::freeze,        FaultKind::blackhole,    FaultKind::delay,
    FaultKind::step_down,   FaultKind::redis_pause,   FaultKind::redis_restart, FaultKind::redis_fast_restart,
    FaultKind::script_flush, FaultKind::client_kill,  FaultKind::maxmemory,
};

/// The default set with --topology sentinel: no proxy faults (the sentinels
/// hand out the real addresses) and the master's own faults instead of the
/// single server's.
inline constexpr FaultKind kSentinelFaultKinds[] = {
    FaultKind::kill,          FaultKind::freeze,        FaultKind::step_down,       FaultKind::script_flush,
    FaultKind::client_kill,   FaultKind::maxmemory,     FaultKind::master_kill,     FaultKind::master_freeze,
    FaultKind::master_failover, FaultKind::replica_kill, FaultKind::sentinel_kill,
};

/// The default set with --topology cluster: the common faults go to every
/// shard master, the master faults to one shard's.
inline constexpr FaultKind kClusterFaultKinds[] = {
    FaultKind::kill,          FaultKind::freeze,          FaultKind::step_down,    FaultKind::script_flush,
    FaultKind::client_kill,   FaultKind::maxmemory,       FaultKind::master_kill,  FaultKind::master_freeze,
    FaultKind::master_failover, FaultKind::replica_kill,  FaultKind::slot_migration,
};

std::string_view to_string(FaultKind kind) noexcept;
std::optional<FaultKind> fault_from_string(std::string_view name) noexcept;
/// Hits one instance (the rest of the fleet stays healthy and takes over).
bool hits_instance(FaultKind kind) noexcept;

/// The timing every bound is computed from.
struct Timing {
  milliseconds ttl{1000};
  milliseconds retry{250};
  milliseconds margin{250};           ///< scheduling slack on a loaded machine
  milliseconds command_timeout{1000}; ///< RedisOptions, passed in the member URL
  milliseconds connect_timeout{2000};
  milliseconds reconnect_min{50};     ///< RedisOptions defaults (not settable by URL)
  milliseconds reconnect_max{2000};
  // Sentinel and cluster topologies.
  milliseconds down_after{3000};      ///< sentinel down-after-milliseconds; cluster-node-timeout
  /// From a master's failure or SENTINEL FAILOVER until the sentinels have
  /// promoted a replica (election and promotion on a loaded machine).
  milliseconds promote{5000};
  /// A node (re)started as a replica has synchronised with the master.
  milliseconds resync{2000};
  /// A returning old master is turned into a replica by the sentinels: they
  /// wait 8 s of it reporting the master role, then ask it at their next
  /// refresh (about 8-10 s measured).
  milliseconds convert{14000};
  milliseconds drift() const { return ttl / 100 + milliseconds(2); }
};

/// One fault as planned and then as it happened.
struct Fault {
  FaultKind kind = FaultKind::kill;
  milliseconds offset{0};    ///< after the start of its batch
  milliseconds duration{0};  ///< 0: instantaneous
  milliseconds latency{0};   ///< delay: added to each direction
  bool new_id = false;       ///< kill: respawn with a new instance id
  std::size_t pick = 0;      ///< a random number that chooses the target
  // Resolved when the batch begins.
  std::size_t slot = 0;      ///< the instance it hits
  std::string group;         ///< step_down: the group
  std::string target;        ///< for the log: instance id, "redis", or the node or sentinel hit
};

/// A liveness bound: every group has a leader again at most `value` after
/// the fault began (from_start) or healed.
struct Bound {
  bool from_start = false;
  milliseconds value{0};
  std::string formula;
};

Bound bound_of(const Fault& fault, const Timing& t);

/// A human-readable line: "kill m2-0 (respawned as m2-1)", "redis_pause 1200 ms".
std::string describe(const Fault& fault);

}  // namespace leasehold::chaos
