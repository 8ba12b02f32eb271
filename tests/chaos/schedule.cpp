#include "chaos/schedule.hpp"

#include <algorithm>
#include <stdexcept>

namespace leasehold::chaos {

namespace {

// Faults that take an instance out of the election for a while.
bool disables_instance(FaultKind kind) { return hits_instance(kind) && kind != FaultKind::step_down; }

}  // namespace

Planner::Planner(std::uint64_t seed, Scenario scenario, Timing timing, std::vector<FaultKind> enabled,
                 std::size_t instances)
    : rng_(seed), scenario_(scenario), timing_(timing), enabled_(std::move(enabled)), instances_(instances) {
  if (enabled_.empty()) throw std::invalid_argument("no fault kinds enabled");
  if (instances_ < 2) throw std::invalid_argument("a fleet needs at least 2 instances to fail over");
}

Batch Planner::next() { return scenario_ == Scenario::mixed ? mixed() : delayed_replies(); }

milliseconds Planner::between(milliseconds lo, milliseconds hi) {
  return milliseconds(std::uniform_int_distribution<long long>(lo.count(), hi.count())(rng_));
}

milliseconds Planner::ttl_times(double lo, double hi) {
  const auto t = static_cast<double>(timing_.ttl.count());
  return between(milliseconds(static_cast<long long>(lo * t)), milliseconds(static_cast<long long>(hi * t)));
}

Fault Planner::make(FaultKind kind) {
  Fault f;
  f.kind = kind;
  f.pick = static_cast<std::size_t>(rng_());
  f.new_id = std::bernoulli_distribution(0.5)(rng_);
  switch (kind) {
    case FaultKind::freeze: f.duration = ttl_times(1.2, 2.5); break;  // longer than ttl
    case FaultKind::blackhole: f.duration = ttl_times(0.3, 3.0); break;
    case FaultKind::delay:
      f.duration = ttl_times(1.0, 4.0);
      f.latency = between(milliseconds(50), milliseconds(400));
      break;
    case FaultKind::redis_pause: f.duration = ttl_times(0.2, 2.5); break;
    // Time down. Old leases can be believed until ttl after the kill, and
    // the empty server knows nothing of them: it must not grant new ones
    // sooner (Redis's own advice for locks without persistence).
    case FaultKind::redis_restart: f.duration = ttl_times(1.0, 2.0); break;
    case FaultKind::redis_fast_restart: f.duration = ttl_times(0.0, 0.5); break;
    case FaultKind::maxmemory: f.duration = ttl_times(0.5, 3.0); break;
    // Past the down-after, so that the sentinels fail over; the runner also
    // waits for the promotion before it heals.
    case FaultKind::master_kill:
    case FaultKind::master_freeze:
      f.duration = timing_.down_after + ttl_times(1.0, 4.0);
      break;
    // Healing only records the promoted replica.
    case FaultKind::master_failover: f.duration = milliseconds(1); break;
    case FaultKind::replica_kill:
    case FaultKind::sentinel_kill: f.duration = ttl_times(1.0, 5.0); break;
    // Keys split between the two nodes for this long.
    case FaultKind::slot_migration: f.duration = ttl_times(0.1, 1.0); break;
    default: break;
  }
  return f;
}

Batch Planner::mixed() {
  Batch b;
  const double r = std::uniform_real_distribution<double>(0, 1)(rng_);
  const int count = r < 0.6 ? 1 : r < 0.9 ? 2 : 3;
  // At most one fault of the server per batch (they would mask each other),
  // and enough healthy instances left to take over.
  const std::size_t max_disabled = std::max<std::size_t>(1, instances_ - 2);
  std::size_t server = 0, disabled = 0;
  for (int i = 0; i < count; ++i) {
    for (int attempt = 0; attempt < 20; ++attempt) {
      const FaultKind kind = enabled_[std::uniform_int_distribution<std::size_t>(0, enabled_.size() - 1)(rng_)];
      if (!hits_instance(kind) && server == 1) continue;
      if (disables_instance(kind) && disabled == max_disabled) continue;
      server += hits_instance(kind) ? 0 : 1;
      disabled += disables_instance(kind) ? 1 : 0;
      Fault f = make(kind);
      f.offset = i == 0 ? milliseconds(0) : ttl_times(0.0, 0.5);
      b.faults.push_back(f);
      break;
    }
  }
  b.quiet = between(milliseconds(200), milliseconds(1000));
  return b;
}

Batch Planner::delayed_replies() {
  // Replies slower than the drift margin: a lease measured from the reply
  // instant outlives the key by about the latency, and a standby on a fast
  // connection takes the key as soon as it expires.
  Batch b;
  b.kill_the_delayed = true;
  Fault delay = make(FaultKind::delay);
  delay.latency = between(milliseconds(150), milliseconds(300));
  delay.duration = ttl_times(1.5, 2.5);  // several renewals under latency
  Fault kill = make(FaultKind::kill);
  kill.offset = delay.duration;          // while it still leads, delayed
  kill.new_id = true;                    // never hidden behind a re-claim of the same id
  delay.duration += milliseconds(1);     // the latency goes only after the kill
  b.faults = {delay, kill};
  b.quiet = between(milliseconds(200), milliseconds(600));
  return b;
}

}  // namespace leasehold::chaos
