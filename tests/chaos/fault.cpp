#include "chaos/fault.hpp"

#include <fmt/format.h>

namespace leasehold::chaos {

std::string_view to_string(FaultKind kind) noexcept {
  switch (kind) {
    case FaultKind::kill: return "kill";
    case FaultKind::freeze: return "freeze";
    case FaultKind::blackhole: return "blackhole";
    case FaultKind::delay: return "delay";
    case FaultKind::step_down: return "step_down";
    case FaultKind::redis_pause: return "redis_pause";
    case FaultKind::redis_restart: return "redis_restart";
    case FaultKind::redis_fast_restart: return "redis_fast_restart";
    case FaultKind::script_flush: return "script_flush";
    case FaultKind::client_kill: return "client_kill";
    case FaultKind::maxmemory: return "maxmemory";
    case FaultKind::master_kill: return "master_kill";
    case FaultKind::master_freeze: return "master_freeze";
    case FaultKind::master_failover: return "master_failover";
    case FaultKind::replica_kill: return "replica_kill";
    case FaultKind::sentinel_kill: return "sentinel_kill";
    case FaultKind::slot_migration: return "slot_migration";
  }
  return "unknown";
}

std::optional<FaultKind> fault_from_string(std::string_view name) noexcept {
  for (FaultKind k : kDefaultFaultKinds) {
    if (to_string(k) == name) return k;
  }
  for (FaultKind k : kSentinelFaultKinds) {
    if (to_string(k) == name) return k;
  }
  for (FaultKind k : kClusterFaultKinds) {
    if (to_string(k) == name) return k;
  }
  return std::nullopt;
}

bool hits_instance(FaultKind kind) noexcept {
  switch (kind) {
    case FaultKind::kill:
    case FaultKind::freeze:
    case FaultKind::blackhole:
    case FaultKind::delay:
    case FaultKind::step_down:
      return true;
    default:
      return false;
  }
}

Bound bound_of(const Fault& f, const Timing& t) {
  const auto m = t.margin;
  switch (f.kind) {
    // The victim's lease was last renewed before the fault, so it expires at
    // most ttl later; a standby retries exactly when the PTTL it read says
    // the lease can first have expired. The victim's own state is irrelevant.
    case FaultKind::kill:
    case FaultKind::freeze:
    case FaultKind::blackhole:
      return {true, t.ttl + m, "ttl + margin, from the fault"};
    // A release publishes a notice; a standby acquires within a round trip.
    case FaultKind::step_down:
      return {true, m, "margin, from the step-down"};
    // Scripts are reloaded on NOSCRIPT: one extra round trip.
    case FaultKind::script_flush:
      return {true, m, "margin, from the flush"};
    // Leaders lose their connection and demote; the first reconnect waits
    // reconnect_min (jittered) and re-claims the own lease at once; retry
    // covers one failed attempt.
    case FaultKind::client_kill:
      return {true, t.reconnect_min + t.retry + m, "reconnect_min + retry + margin, from the kill"};
    // Replies still queued in the proxy arrive within 2 x latency; an
    // instance whose confirmation came too late re-claims at once, after an
    // error after retry.
    case FaultKind::delay:
      return {false, 2 * f.latency + t.retry + m, "2 x latency + retry + margin, from the heal"};
    // Clients sit in reconnect backoff (at most reconnect_max) or in a
    // handshake that completes on resume; then they acquire at once.
    case FaultKind::redis_pause:
      return {false, t.reconnect_max + t.retry + m, "reconnect_max + retry + margin, from the heal"};
    // As a pause, and then the empty-restart guard holds every group for
    // one ttl (its fencing counter is gone).
    case FaultKind::redis_restart:
    case FaultKind::redis_fast_restart:
      return {false, t.reconnect_max + t.ttl + t.retry + m, "reconnect_max + ttl + retry + margin, from the heal"};
    // Fresh acquires fail with OOM and are retried after retry_interval.
    case FaultKind::maxmemory:
      return {false, t.retry + m, "retry + margin, from the heal"};
    // The runner restarts the old master (a replica now) only once a replica
    // is promoted; in confirm mode with every replica nothing is confirmed
    // until it has synchronised. Then as after any lost connection.
    case FaultKind::master_kill:
      return {false, t.resync + t.reconnect_max + t.ttl + t.retry + m,
              "resync + reconnect_max + ttl + retry + margin, from the restart"};
    // Resumed after the promotion: in confirm mode with every replica,
    // nothing is confirmed until the sentinels have turned the stale master
    // into a replica and it has synchronised.
    case FaultKind::master_freeze:
      return {false, t.convert + t.resync + t.ttl + t.retry + m,
              "convert + resync + ttl + retry + margin, from the resume"};
    // As a freeze: the promotion, then the old master's conversion.
    case FaultKind::master_failover:
      return {true, t.promote + t.convert + t.resync + t.ttl + t.retry + m,
              "promote + convert + resync + ttl + retry + margin, from the command"};
    // Confirm mode with every replica: renewals fall short until it is back.
    case FaultKind::replica_kill:
      return {false, t.resync + t.ttl + t.retry + m, "resync + ttl + retry + margin, from the restart"};
    // Nobody asks the sentinels while connected; a reconnect asks another.
    case FaultKind::sentinel_kill:
      return {true, t.ttl + m, "ttl + margin, from the kill"};
    // While the group's keys are split its scripts get TRYAGAIN, so its
    // leader cannot renew; once the slot has moved (MOVED, one more round
    // trip) a lease it could not renew expires within ttl.
    case FaultKind::slot_migration:
      return {false, t.ttl + t.retry + m, "ttl + retry + margin, from the move"};
  }
  return {};
}

std::string describe(const Fault& f) {
  switch (f.kind) {
    case FaultKind::kill:
      return fmt::format("kill {}{}", f.target, f.new_id ? " (respawned with a new id)" : "");
    case FaultKind::freeze:
    case FaultKind::blackhole:
      return fmt::format("{} {} for {} ms", to_string(f.kind), f.target, f.duration.count());
    case FaultKind::delay:
      return fmt::format("delay {} by {} ms for {} ms", f.target, f.latency.count(), f.duration.count());
    case FaultKind::step_down:
      return fmt::format("step_down {} on {}", f.group, f.target);
    case FaultKind::redis_pause:
    case FaultKind::redis_restart:
    case FaultKind::redis_fast_restart:
    case FaultKind::maxmemory:
      return fmt::format("{} for {} ms", to_string(f.kind), f.duration.count());
    case FaultKind::master_kill:
    case FaultKind::master_freeze:
    case FaultKind::replica_kill:
    case FaultKind::sentinel_kill:
      return fmt::format("{} {} for {} ms", to_string(f.kind), f.target, f.duration.count());
    case FaultKind::master_failover:
      return fmt::format("master_failover from {}", f.target);
    case FaultKind::slot_migration:
      return fmt::format("slot_migration {} over {} ms", f.target, f.duration.count());
    case FaultKind::script_flush:
    case FaultKind::client_kill:
      return std::string(to_string(f.kind));
  }
  return "?";
}

}  // namespace leasehold::chaos
