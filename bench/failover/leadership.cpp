#include "failover/leadership.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace leasehold::bench {

LeadershipTime leadership_time(Fleet& fleet, const std::string& group, std::int64_t from_ns, std::int64_t to_ns) {
  // +1 when a member starts leading, -1 when it stops; a member's own
  // repeated elected (same state) counts once.
  std::vector<std::pair<std::int64_t, int>> steps;
  for (const auto& m : fleet.members()) {
    bool leading = false;
    for (const auto& e : m->log.events()) {
      if (e.group != group) continue;
      const bool starts = e.kind == MemberEvent::Kind::elected && !leading;
      const bool stops = e.kind == MemberEvent::Kind::revoked && leading;
      if (!starts && !stops) continue;
      steps.emplace_back(e.at, starts ? +1 : -1);
      leading = starts;
    }
  }
  std::sort(steps.begin(), steps.end());
  LeadershipTime t;
  int leaders = 0;
  std::int64_t at = from_ns;
  auto account = [&](std::int64_t until) {
    const auto span = static_cast<double>(std::min(until, to_ns) - at) / 1e6;
    if (span <= 0) return;
    if (leaders == 0) t.none_ms += span;
    if (leaders >= 2) t.several_ms += span;
    at = std::min(until, to_ns);
  };
  for (const auto& [when, delta] : steps) {
    if (when > from_ns) account(when);
    leaders += delta;
  }
  account(to_ns);
  return t;
}

}  // namespace leasehold::bench
