#include "lease_model.hpp"

namespace leasehold::sim {
namespace {

redis::Reply integer(std::int64_t v) {
  redis::Reply r;
  r.type = redis::Reply::Type::integer;
  r.integer = v;
  return r;
}

redis::Reply string(std::string s) {
  redis::Reply r;
  r.type = redis::Reply::Type::string;
  r.str = std::move(s);
  return r;
}

redis::Reply array(std::vector<redis::Reply> elements) {
  redis::Reply r;
  r.type = redis::Reply::Type::array;
  r.elements = std::move(elements);
  return r;
}

// Broken on purpose, for the checker's self-test only: the scripts as they
// were before incarnations, which let two processes with one id both lead.
#if LEASEHOLD_SIM_IGNORE_INCARNATIONS
constexpr bool tells_incarnations_apart = false;
#else
constexpr bool tells_incarnations_apart = true;
#endif

redis::Reply acquire_reply(bool acquired, std::string holder, std::int64_t pttl, std::int64_t token) {
  return array({integer(acquired ? 1 : 0), string(std::move(holder)), integer(pttl), integer(token)});
}

}  // namespace

LeaseModel::Lease* LeaseModel::live(const std::string& key, Millis now) {
  auto it = leases_.find(key);
  if (it == leases_.end()) return nullptr;
  if (it->second.expires_at <= now) {
    leases_.erase(it);
    return nullptr;
  }
  return &it->second;
}

LeaseModel::Bid* LeaseModel::live_bid(const std::string& key, Millis now) {
  auto it = bids_.find(key);
  if (it == bids_.end()) return nullptr;
  if (it->second.expires_at <= now) {
    bids_.erase(it);
    return nullptr;
  }
  return &it->second;
}

void LeaseModel::bid(const std::string& key, const Campaigner& who, int holder_priority, bool rival, Millis ttl,
                     Millis now) {
  if (!rival && who.priority <= holder_priority) return;
  const Bid* current = live_bid(key, now);
  if (current && current->bidder.incarnation != who.incarnation && who.priority <= current->bidder.priority) return;
  bids_[key] = Bid{who, now + ttl};
}

void LeaseModel::own_bid_answered(const std::string& key, const Campaigner& who, Millis now) {
  if (const Bid* b = live_bid(key, now); b && b->bidder.incarnation == who.incarnation) bids_.erase(key);
}

redis::Reply LeaseModel::acquire(const std::string& key, const std::string& token_key, const Campaigner& who,
                                 Millis ttl, Millis now, bool guarded) {
  const auto record = records_.find(key);
  if (Lease* lease = live(key, now)) {
    const Millis pttl = lease->expires_at - now;
    if (lease->holder == who.id) {
      if (tells_incarnations_apart && record != records_.end() && record->second.incarnation != who.incarnation) {
        bid(key, who, 0, true, ttl, now);
        redis::Reply r = acquire_reply(false, who.id, pttl, 0);
        r.elements.push_back(string(record->second.incarnation));
        return r;
      }
      lease->expires_at = now + ttl;
      if (record == records_.end()) records_[key] = who;
      own_bid_answered(key, who, now);
      return acquire_reply(true, who.id, ttl, ++counters_[token_key]);  // a re-claim is a new term
    }
    if (!lease->holder.empty()) bid(key, who, record == records_.end() ? 0 : record->second.priority, false, ttl, now);
    return acquire_reply(false, lease->holder, pttl, 0);
  }
  if (guarded && !counters_.contains(token_key)) {
    if (!marked_at_) marked_at_ = now;
    if (const Millis wait = *marked_at_ + ttl - now; wait > 0) {
      counters_[token_key] = 0;
      leases_[key] = Lease{"", now + wait};
      return acquire_reply(false, "", wait, 0);
    }
  }
  const std::int64_t token = ++counters_[token_key];
  leases_[key] = Lease{who.id, now + ttl};
  records_[key] = who;
  own_bid_answered(key, who, now);
  return acquire_reply(true, who.id, ttl, token);
}

redis::Reply LeaseModel::renew(const std::string& key, const Campaigner& who, Millis ttl, Millis now) {
  Lease* lease = live(key, now);
  if (lease == nullptr || lease->holder != who.id) return integer(0);
  const auto record = records_.find(key);
  if (tells_incarnations_apart && record != records_.end() && record->second.incarnation != who.incarnation) {
    return array({integer(0), string(record->second.incarnation)});
  }
  lease->expires_at = now + ttl;
  if (const Bid* b = live_bid(key, now); b && b->bidder.incarnation != who.incarnation) {
    return array({integer(1), string(b->bidder.id), string(b->bidder.incarnation), integer(b->bidder.priority)});
  }
  return integer(1);
}

redis::Reply LeaseModel::release(const std::string& key, const std::string& channel, const Campaigner& who,
                                 Millis ttl, Millis now, const std::optional<Campaigner>& to,
                                 std::optional<Published>& published) {
  Lease* lease = live(key, now);
  if (lease == nullptr || lease->holder != who.id) return integer(0);
  const auto record = records_.find(key);
  if (record != records_.end() && record->second.incarnation != who.incarnation) return integer(0);
  if (to) {
    *lease = Lease{to->id, now + ttl};
    records_[key] = *to;
  } else {
    leases_.erase(key);
  }
  published = Published{channel, who.id};
  return integer(1);
}

}  // namespace leasehold::sim
