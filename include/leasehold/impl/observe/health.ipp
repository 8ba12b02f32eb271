// The health verdict: live and ready from the facts and thresholds.

#include <leasehold/health.hpp>

#include <leasehold/impl/observe/collect.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace leasehold {
namespace {

long long ms(Health::Duration d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); }

}  // namespace

void Health::evaluate() {
  // Not started and stopped are deliberate states: a liveness probe must not
  // restart a process that is starting up or shutting down.
  const bool running = started && !stopped;
  live = !running || loop_age <= max_loop_age;
  ready = false;
  if (!started) {
    reason = "not started";
  } else if (stopped) {
    reason = "stopped";
  } else if (!live) {
    reason = fmt::format("event loop stalled: last pulse {} ms ago (limit {} ms)", ms(loop_age), ms(max_loop_age));
  } else if (!connected) {
    reason = "not connected to Redis";
  } else if (!last_reply_age) {
    reason = "no reply from Redis yet";
  } else if (*last_reply_age > max_reply_age) {
    reason = fmt::format("last Redis reply {} ms ago (limit {} ms)", ms(*last_reply_age), ms(max_reply_age));
  } else if (duplicate_id_groups > 0) {
    reason = fmt::format("another live process uses this instance id in {} group(s)", duplicate_id_groups);
  } else if (failing_groups > 0) {
    reason = fmt::format("{} group(s) failing with a Redis error reply", failing_groups);
  } else {
    ready = true;
    reason.clear();
  }
}

}  // namespace leasehold

namespace leasehold::detail {

void add_group_health(Health& h, const std::vector<GroupState*>& groups, TimePoint now) {
  for (const GroupState* g : groups) {
    h.heartbeat_lag = std::max(h.heartbeat_lag, g->heartbeat_lag(now));
    if (g->failing.load(std::memory_order_relaxed)) ++h.failing_groups;
    if (g->duplicate_id.load(std::memory_order_relaxed)) ++h.duplicate_id_groups;
  }
}

}  // namespace leasehold::detail
