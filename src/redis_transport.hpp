#pragma once
// The lease transport: every group's scripts through Commands (one
// pipelined connection to a server or Sentinel's master, or a cluster's
// connection to each group's master), WAIT after them in confirm mode.

#include "commands.hpp"
#include "lease_scripts.hpp"
#include "lease_transport.hpp"

#include <leasehold/key_layout.hpp>

#include <chrono>
#include <memory>
#include <string>

namespace leasehold::detail {

class RedisTransport final : public LeaseTransport {
 public:
  /// What the transport does besides sending the scripts.
  struct Settings {
    bool empty_restart_guard = true;  ///< acquire through the guard (lease_scripts.hpp)
    bool reclaim_on_restart = false;  ///< first acquires take over earlier incarnations' leases
    int confirm_replicas = 0;         ///< confirm mode: WAIT for this many replicas (0: off)
    std::chrono::milliseconds confirm_timeout{100};
    std::chrono::milliseconds ttl{5000};  ///< how long a hand-over seats the bidder
    Notices notices = Notices::published;  ///< SPUBLISH on a Redis Cluster
  };
  /// `incarnation`: the elector's (incarnation.hpp); its releases name it.
  RedisTransport(Commands& commands, KeyLayout layout, std::string instance_id, std::string incarnation,
                 Settings settings);

  /// What the answers must keep alive until they arrive (the elector).
  void keep_alive(std::weak_ptr<void> owner) { owner_ = std::move(owner); }

  void send(GroupState& group, Command command, std::uint64_t seq, LeaseReplies& replies) override;

 private:
  Commands& commands_;
  const KeyLayout layout_;
  const std::string id_;
  const std::string incarnation_;
  const std::string ttl_ms_;
  const redis::Script& acquire_;
  const redis::Script& take_over_acquire_;  // a group's first acquire with reclaim_on_restart
  const Settings settings_;
  std::weak_ptr<void> owner_;

  /// Confirm mode: after a script that took or extended the lease, WAIT on
  /// the same connection (`via`), then answer with the replicas' verdict.
  void confirm(GroupState& g, Command command, std::uint64_t seq, LeaseReplies& replies, redis::Reply reply,
               redis::Client* via);
};

}  // namespace leasehold::detail
