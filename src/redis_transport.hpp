#pragma once
// The lease transport to one Redis server (or one address that fails over
// behind a name): every group's scripts on one pipelined connection.

#include "lease_transport.hpp"

#include <leasehold/key_layout.hpp>
#include <leasehold/redis/client.hpp>

#include <memory>
#include <string>

namespace leasehold::detail {

class RedisTransport final : public LeaseTransport {
 public:
  /// `guarded`: acquire through the empty-restart guard (lease_scripts.hpp).
  RedisTransport(redis::Client& client, KeyLayout layout, std::string instance_id, bool guarded);

  /// What the answers must keep alive until they arrive (the elector).
  void keep_alive(std::weak_ptr<void> owner) { owner_ = std::move(owner); }

  void send(GroupState& group, Command command, std::uint64_t seq, LeaseReplies& replies) override;

 private:
  redis::Client& client_;
  const KeyLayout layout_;
  const std::string id_;
  const redis::Script& acquire_;
  std::weak_ptr<void> owner_;
};

}  // namespace leasehold::detail
