#pragma once
// How an Elector campaigns. Every field is validated when the Elector is
// constructed; a bad value throws std::invalid_argument naming the field.
// docs/configuration.md explains each field's trade-offs and the timing
// invariants between them.

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace leasehold {

/// How an Elector campaigns: the lease timing, the key prefix, this
/// instance's id and its groups. Aggregate: set the fields you need with
/// designated initializers and leave the rest at their defaults.
struct ElectorOptions {
  /// Lease length: how long a crashed leader blocks its groups at most.
  /// At least 100 ms.
  std::chrono::milliseconds ttl{5000};
  /// Leader's renewal period. Default: ttl / 3. Must be shorter than
  /// ttl - drift_margin - clock_skew, so that a renewal can land before the
  /// deadline.
  std::optional<std::chrono::milliseconds> heartbeat_interval{};
  /// Standby polling bound (when release notices are unavailable) and the
  /// delay before re-claiming after an error. Greater than 0.
  std::chrono::milliseconds retry_interval{1000};
  /// Key namespace: a group's lease key is key_prefix + group, its fencing
  /// counter key_prefix + group + ":token", its release channel
  /// key_prefix + group + ":released". 1 to 100 bytes, no control characters.
  /// Give each service its own (e.g. "billing:leader:"): every elector
  /// campaigns for "default", so two services that keep this default on one
  /// Redis compete for one lease (start() logs a warning).
  std::string key_prefix = "leader:";
  /// This instance's identity, stored as the lease value; must be unique
  /// among live processes. Default (empty): unique per process (host name,
  /// pid and random bits). At most 256 bytes, no control characters. Two
  /// live processes with one id never lead at once (each elector has its
  /// own random incarnation) and both report errc::duplicate_instance_id.
  std::string instance_id{};
  /// With a stable instance_id: a process's first acquire of each group
  /// takes back a lease its id still holds under an earlier incarnation at
  /// once, instead of waiting it out (at most one ttl). Only where the
  /// platform guarantees the earlier process is dead before the new one
  /// starts (a StatefulSet pod): were it alive (a duplicate id), both would
  /// lead until its next renewal, which then fails and reports the
  /// duplicate. Default false.
  bool reclaim_on_restart = false;
  /// Groups to campaign for besides "default"; each a valid group name.
  std::vector<std::string> groups{};
  /// Preferred holder: a standby whose priority is higher than the leader's
  /// asks it (through Redis) to hand over, and the leader does so at its next
  /// renewal, after draining its work. Equal priorities never hand over, so
  /// a fleet that keeps the default (0) behaves as if there were none. Give
  /// the instance that should lead the highest priority; in a rolling
  /// deploy, give each new version a higher one than the last.
  int priority = 0;
  /// Per-group priorities that replace `priority` for the groups named.
  std::map<std::string, int, std::less<>> group_priorities{};
  /// Safety allowance subtracted from the local deadline for clock rates
  /// and scheduling jitter. Default: 1% of ttl + 2 ms. At least 0, and
  /// drift_margin + clock_skew less than ttl / 2.
  std::optional<std::chrono::milliseconds> drift_margin{};
  /// The largest difference between the wall clocks of the Redis nodes that
  /// can be promoted to master (replicas behind Sentinel or in a Cluster
  /// shard). Redis replicates a lease's expiry as an absolute wall-clock
  /// instant, so a promoted replica whose clock runs ahead by S expires it S
  /// early; the local deadline is shortened by this much too. Default 0 (one
  /// Redis, or clocks kept within the drift margin). At least 0.
  std::chrono::milliseconds clock_skew{0};
  /// After step_down(), this instance does not campaign for the group for this
  /// long, so that a standby wins. Default: retry_interval. At least 0.
  std::optional<std::chrono::milliseconds> step_down_hold_off{};
  /// Bound on how long stop() waits for its releases (after the drain).
  /// Greater than 0.
  std::chrono::milliseconds stop_timeout{2000};
  /// Drain before release: step_down() and stop() end a term locally at
  /// once (is_leader() false; guarded coroutine work and run_while_leader
  /// tasks are cancelled), then wait for that work to finish while still
  /// holding (and renewing) the lease, so that no standby starts while it
  /// runs; then they release. When this bound passes first, the lease is
  /// released anyway and the overrun reported (errc::drain_timeout, a log
  /// line, a metric). No guarded work running: no wait. 0: release at once.
  /// At least 0.
  std::chrono::milliseconds drain_timeout{5000};
  /// Empty-restart guard: when a group's fencing counter is missing (a new
  /// group, or a Redis that lost its data: restarted without persistence,
  /// flushed, or a promoted replica that never had the group), nobody may
  /// take the group for up to one ttl, so that a leader still trusting a
  /// lease from before the loss sees its deadline pass first. A data marker
  /// (the server's run_id and replication id, and when it was written) tells
  /// a new group from a loss: where it proves the server kept its data for
  /// one ttl, a new group is taken at once. Turn the guard off only where no
  /// live leader can outlast a data loss (a test's throwaway Redis, say).
  bool empty_restart_guard = true;
  /// Confirm mode (replicated Redis): every acquisition and renewal is
  /// followed, on the same connection, by WAIT confirm_replicas
  /// confirm_timeout, and counts only when at least that many replicas
  /// acknowledged it. An acquisition that falls short is kept but not led
  /// on, reported (errc::not_confirmed) and renewed every retry_interval
  /// until a renewal is acknowledged, which starts the term; a renewal that
  /// falls short does not extend the lease. With every replica that can be promoted, a failover
  /// can neither lose a lease nor let a stale master extend one. 0: off.
  int confirm_replicas = 0;
  /// How long WAIT waits for the replicas. Greater than 0 and shorter than
  /// ttl - drift_margin - clock_skew - heartbeat_interval, so that a
  /// confirmed renewal can still land before the deadline.
  std::chrono::milliseconds confirm_timeout{100};

  /// The values in effect once defaults are applied.
  std::chrono::milliseconds effective_heartbeat() const { return heartbeat_interval.value_or(ttl / 3); }
  /// drift_margin, or its default (1% of ttl + 2 ms) when unset.
  std::chrono::milliseconds effective_drift_margin() const {
    return drift_margin.value_or(ttl / 100 + std::chrono::milliseconds(2));
  }
  /// What the local deadline keeps back from the ttl: the drift margin plus
  /// the clock skew. A lease confirmed by a command sent at S counts locally
  /// until S + ttl - effective_deadline_margin().
  std::chrono::milliseconds effective_deadline_margin() const { return effective_drift_margin() + clock_skew; }
  /// The priority this instance campaigns with for `group`.
  int priority_of(std::string_view group) const {
    const auto it = group_priorities.find(group);
    return it == group_priorities.end() ? priority : it->second;
  }
  /// step_down_hold_off, or its default (retry_interval) when unset.
  std::chrono::milliseconds effective_hold_off() const { return step_down_hold_off.value_or(retry_interval); }

  /// Throws std::invalid_argument naming the first bad field.
  void validate() const;
};

/// Throws std::invalid_argument unless `group` is a valid group name:
/// 1 to 200 bytes, no control characters, not ending in ":token", ":ticks",
/// ":holder" or ":bid" (the names of the keys leasehold keeps beside a lease).
void validate_group_name(std::string_view group);

/// A fresh identity unique to this process: "<host>-<pid>-<random hex>".
std::string default_instance_id();

}  // namespace leasehold
