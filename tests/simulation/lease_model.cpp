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

redis::Reply acquire_reply(bool acquired, std::string holder, std::int64_t pttl, std::int64_t token) {
  redis::Reply r;
  r.type = redis::Reply::Type::array;
  r.elements = {integer(acquired ? 1 : 0), string(std::move(holder)), integer(pttl), integer(token)};
  return r;
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

redis::Reply LeaseModel::acquire(const std::string& key, const std::string& token_key, const std::string& id,
                                 Millis ttl, Millis now, bool guarded) {
  if (Lease* lease = live(key, now)) {
    if (lease->holder == id) {
      lease->expires_at = now + ttl;
      return acquire_reply(true, id, ttl, ++counters_[token_key]);  // a re-claim is a new term
    }
    return acquire_reply(false, lease->holder, lease->expires_at - now, 0);
  }
  if (guarded && !counters_.contains(token_key)) {
    counters_[token_key] = 0;
    leases_[key] = Lease{"", now + ttl};
    return acquire_reply(false, "", ttl, 0);
  }
  const std::int64_t token = ++counters_[token_key];
  leases_[key] = Lease{id, now + ttl};
  return acquire_reply(true, id, ttl, token);
}

redis::Reply LeaseModel::renew(const std::string& key, const std::string& id, Millis ttl, Millis now) {
  Lease* lease = live(key, now);
  if (lease == nullptr || lease->holder != id) return integer(0);
  lease->expires_at = now + ttl;
  return integer(1);
}

redis::Reply LeaseModel::release(const std::string& key, const std::string& channel, const std::string& id,
                                 Millis now, std::optional<Published>& published) {
  Lease* lease = live(key, now);
  if (lease == nullptr || lease->holder != id) return integer(0);
  leases_.erase(key);
  published = Published{channel, id};
  return integer(1);
}

}  // namespace leasehold::sim
