#pragma once
// A model of the Redis side of leasehold's lease keys, on simulated time: the
// lease (value + PX expiry), the fencing counter that never expires, the
// holder record, the bids, and the lease scripts' semantics
// (lease_scripts.cpp), answering with the replies Redis would send. An empty
// restart forgets everything, the data marker too.

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
  /// Who campaigns: an instance id, its incarnation and priority.
  struct Campaigner {
    std::string id;
    std::string incarnation;
    int priority = 0;
  };

  /// `guarded`: the empty-restart guard's script (a missing counter seats
  /// an empty holder until one ttl past the data marker's time, the marker
  /// written now if missing, instead of a term).
  redis::Reply acquire(const std::string& key, const std::string& token_key, const Campaigner& who, Millis ttl,
                       Millis now, bool guarded);
  redis::Reply renew(const std::string& key, const Campaigner& who, Millis ttl, Millis now);
  /// `published` receives the release notice when the key was released;
  /// `to`: hand the lease to this bidder instead of deleting it.
  redis::Reply release(const std::string& key, const std::string& channel, const Campaigner& who, Millis ttl,
                       Millis now, const std::optional<Campaigner>& to, std::optional<Published>& published);
  void clear() {
    leases_.clear();
    counters_.clear();
    records_.clear();
    bids_.clear();
    marked_at_.reset();
  }

 private:
  struct Lease {
    std::string holder;
    Millis expires_at = 0;
  };
  struct Bid {
    Campaigner bidder;
    Millis expires_at = 0;
  };
  /// The live lease of `key` at `now` (expired ones are removed, as Redis does).
  Lease* live(const std::string& key, Millis now);
  Bid* live_bid(const std::string& key, Millis now);
  void bid(const std::string& key, const Campaigner& who, int holder_priority, bool rival, Millis ttl, Millis now);
  void own_bid_answered(const std::string& key, const Campaigner& who, Millis now);

  std::map<std::string, Lease> leases_;
  std::map<std::string, std::int64_t> counters_;
  std::map<std::string, Campaigner> records_;  // by lease key: who holds (or last held) it
  std::map<std::string, Bid> bids_;            // by lease key
  std::optional<Millis> marked_at_;            // the data marker's time (one server: one marker)
};

}  // namespace leasehold::sim
