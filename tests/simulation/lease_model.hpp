#pragma once
// A model of the Redis side of leasehold's lease keys, on simulated time: the
// lease (value + PX expiry), the fencing counter that never expires, and the
// three lease scripts' semantics (lease_scripts.cpp), answering with the
// replies Redis would send. An empty restart forgets everything.

#include <leasehold/redis/reply.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace leasehold::sim {

using Millis = std::int64_t;

class LeaseModel {
 public:
  struct Published {
    std::string channel;
    std::string message;
  };

  /// `guarded`: the empty-restart guard's script (a missing counter seats
  /// an empty holder for one ttl instead of a term).
  redis::Reply acquire(const std::string& key, const std::string& token_key, const std::string& id, Millis ttl,
                       Millis now, bool guarded);
  redis::Reply renew(const std::string& key, const std::string& id, Millis ttl, Millis now);
  /// `published` receives the release notice when the key was released.
  redis::Reply release(const std::string& key, const std::string& channel, const std::string& id, Millis now,
                       std::optional<Published>& published);
  void clear() {
    leases_.clear();
    counters_.clear();
  }

 private:
  struct Lease {
    std::string holder;
    Millis expires_at = 0;
  };
  /// The live lease of `key` at `now` (expired ones are removed, as Redis does).
  Lease* live(const std::string& key, Millis now);

  std::map<std::string, Lease> leases_;
  std::map<std::string, std::int64_t> counters_;
};

}  // namespace leasehold::sim
