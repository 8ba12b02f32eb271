#include "lease_tracker.hpp"

namespace leasehold::cli {

namespace {

// The expiry estimate is taken when a poll's reply arrives, a little after
// Redis computed the TTL; this much slack still calls a lapse an expiry.
constexpr std::chrono::milliseconds expiry_slack{50};

WatchEvent event(WatchEvent::Kind kind, const LeaseInfo& now, const std::optional<std::string>& previous) {
  WatchEvent e;
  e.kind = kind;
  e.group = now.group;
  e.holder = now.holder;
  e.previous = previous;
  e.token = now.token;
  if (now.held()) e.ttl_ms = now.ttl_ms;
  e.detail = now.error;
  return e;
}

}  // namespace

std::string_view to_string(WatchEvent::Kind kind) noexcept {
  switch (kind) {
    case WatchEvent::Kind::held: return "held";
    case WatchEvent::Kind::vacant: return "vacant";
    case WatchEvent::Kind::acquired: return "acquired";
    case WatchEvent::Kind::released: return "released";
    case WatchEvent::Kind::expired: return "expired";
    case WatchEvent::Kind::deleted: return "deleted";
    case WatchEvent::Kind::taken_over: return "taken-over";
    case WatchEvent::Kind::new_term: return "new-term";
    case WatchEvent::Kind::error: return "error";
  }
  return "?";
}

std::vector<WatchEvent> LeaseTracker::observe(const std::vector<LeaseInfo>& leases, Clock::time_point now) {
  using Kind = WatchEvent::Kind;
  std::vector<WatchEvent> out;
  for (const LeaseInfo& fresh : leases) {
    auto it = known_.find(fresh.group);
    const bool first_sight = it == known_.end();
    if (first_sight) {
      LeaseInfo nobody;
      nobody.group = fresh.group;
      it = known_.emplace(fresh.group, Known{nobody, {}, {}, {}}).first;
      if (!baseline_done_ && fresh.error.empty()) {
        out.push_back(event(fresh.held() ? Kind::held : Kind::vacant, fresh, {}));
        it->second.lease = fresh;
      }
    }
    Known& known = it->second;
    const std::optional<LeaseInfo> released = std::move(known.released);
    known.released.reset();
    if (released && fresh.error.empty() && fresh.held() && fresh.holder == released->holder &&
        fresh.token == released->token) {
      continue;  // read before the release that the notice told of
    }
    if (known.new_holder) {
      const bool still_new = fresh.held() && fresh.error.empty() && *fresh.holder != *known.lease.holder;
      if (still_new && now < known.new_holder->seen + takeover_grace) {
        known.new_holder->lease = fresh;  // within the grace: keep waiting for the notice
        continue;
      }
      // No notice came: it was a takeover (unless the old holder is back).
      if (still_new || !fresh.held()) {
        out.push_back(event(Kind::taken_over, known.new_holder->lease, known.lease.holder));
        adopt(known, known.new_holder->lease, known.new_holder->seen);
      }
      known.new_holder.reset();
    }
    const LeaseInfo& old = known.lease;

    if (!fresh.error.empty()) {
      if (fresh.error != old.error) out.push_back(event(Kind::error, fresh, old.holder));
    } else if (!old.held() && fresh.held()) {
      out.push_back(event(Kind::acquired, fresh, {}));
    } else if (old.held() && !fresh.held()) {
      const bool lapsed = known.expires_at && now + expiry_slack >= *known.expires_at;
      out.push_back(event(lapsed ? Kind::expired : Kind::deleted, fresh, old.holder));
    } else if (old.held() && fresh.held() && *old.holder != *fresh.holder) {
      known.new_holder = HeldBack{fresh, now};
      continue;
    } else if (old.held() && fresh.held() && old.token != fresh.token) {
      out.push_back(event(Kind::new_term, fresh, old.holder));
    }
    adopt(known, fresh, now);
  }
  return out;
}

void LeaseTracker::adopt(Known& known, const LeaseInfo& lease, Clock::time_point at) {
  known.lease = lease;  // first: `lease` may be the held-back one, reset next
  known.new_holder.reset();
  known.expires_at.reset();
  const LeaseInfo& adopted = known.lease;
  if (adopted.held() && adopted.ttl_ms >= 0) known.expires_at = at + std::chrono::milliseconds(adopted.ttl_ms);
}

std::vector<WatchEvent> LeaseTracker::notice(std::string_view group, std::string_view id) {
  auto it = known_.find(group);
  if (it == known_.end() || !it->second.lease.held() || *it->second.lease.holder != id) return {};
  Known& known = it->second;
  LeaseInfo& lease = known.lease;
  const std::optional<std::string> previous = lease.holder;
  known.released = lease;
  lease.holder.reset();
  lease.ttl_ms = 0;
  known.expires_at.reset();
  std::vector<WatchEvent> out{event(WatchEvent::Kind::released, lease, previous)};
  if (known.new_holder) {
    // The poll that showed the next holder was read before this notice.
    out.push_back(event(WatchEvent::Kind::acquired, known.new_holder->lease, {}));
    adopt(known, known.new_holder->lease, known.new_holder->seen);
  }
  return out;
}

bool LeaseTracker::holding_back() const noexcept {
  for (const auto& [group, known] : known_) {
    if (known.new_holder) return true;
  }
  return false;
}

}  // namespace leasehold::cli
