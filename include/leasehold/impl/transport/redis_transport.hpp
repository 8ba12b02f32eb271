#pragma once
// The lease transport: every group's scripts through CommandRoute (one
// pipelined connection to a server or Sentinel's master, or a cluster's
// connection to each group's master), WAIT after them in confirm mode.

#include <leasehold/impl/transport/command_route.hpp>
#include <leasehold/impl/lease/lease_scripts.hpp>
#include <leasehold/impl/core/lease_transport.hpp>

#include <leasehold/key_layout.hpp>

#include <leasehold/redis/script_arguments.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

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
    Notices notices = Notices::published;  ///< notices_for(): SPUBLISH on a Redis Cluster
    /// One endpoint with plain keys: the scripts keep the change stamp, and
    /// batched renewals skip the holder records it vouches for.
    bool change_stamp = false;
  };
  /// `incarnation`: the elector's (incarnation.hpp); its releases name it.
  RedisTransport(CommandRoute& commands, KeyLayout layout, std::string instance_id, std::string incarnation,
                 Settings settings);

  /// What the answers must keep alive until they arrive (the elector).
  void keep_alive(std::weak_ptr<void> owner) { owner_ = std::move(owner); }

  void send(GroupState& group, Command command, std::uint64_t seq, LeaseReplyListener& replies) override;
  bool batches_by_slot() const noexcept override { return !node_batches_; }
  /// A connection (on a cluster: a node's) came up: a server that refused
  /// the cross-slot script may take it now (restarted, upgraded).
  /// ... and WAIT is asked again.
  /// ... and the change stamp is read again.
  void connection_up() noexcept {
    node_batches_ = node_batches_wanted_;
    wait_refused_ = false;
    forget_stamp();
  }
  bool confirm_refused() const noexcept override { return wait_refused_; }
  /// Called once when the server refuses WAIT in confirm mode (the error
  /// quotes its answer). Set before the first command.
  void on_confirm_refused(std::function<void(const Error&)> handler) { on_confirm_refused_ = std::move(handler); }

  /// The most groups one renewal script renews.
  static constexpr std::size_t max_batch = 64;
  /// A group's holder record is read at least every this many renewals (or
  /// looks, while it stands by) even while the change stamp vouches for it:
  /// an older leasehold on the same server writes records without replacing
  /// the stamp.
  static constexpr std::uint8_t trusted_in_a_row_most = 15;

 private:
  // Renewals sent in one turn of the executor leave together at its end:
  // one script for all on a server, one per node on a cluster (its several
  // slots through renew_node_script(); one per slot where a node cannot
  // run that), at most max_batch groups each. Fewer commands to encode,
  // match and answer: the client's and Redis's work per renewal.
  struct Renewal {
    GroupState* group;
    std::uint64_t seq;
    LeaseReplyListener* replies;
    std::uint16_t slot;  // 0 on a server
  };
  struct Batch;
  auto answer_for(GroupState& g, Command command, std::uint64_t seq, LeaseReplyListener& replies);
  void queue_renewal(GroupState& g, std::uint64_t seq, LeaseReplyListener& replies);
  void flush_renewals();
  void renew_one(const Renewal& r);
  void renew_many(std::vector<Renewal> renewals, bool across_slots);
  void renew_by_slot(const std::vector<Renewal>& renewals);
  void answer_batch(const Batch& batch, error_code ec, const redis::Reply& reply, redis::Client* via);
  void answer_node_batch(const Batch& batch, error_code ec, redis::Reply reply, redis::Client* via);
  bool trusted(const GroupState& g) const noexcept;
  std::size_t put_trusted_first(std::vector<Renewal>& renewals) const;
  void note_stamp(const redis::Reply& stamp);
  void read_refusal_stamp(GroupState& g, redis::Reply& reply, bool vouched);
  void mark_clean(GroupState& g, bool clean, bool trusted) const noexcept;
  void read_stamp(const Batch& batch, const redis::Reply& reply, std::vector<Renewal>& again);
  void answer_stamped_again(const Batch& batch, const redis::Reply& reply, std::vector<Renewal> again,
                            redis::Client* via);
  void forget_stamp() noexcept;
  static bool went_unread(const Batch& batch, const redis::Reply& reply, std::size_t i);
  std::vector<std::string> acquire_keys(const GroupState& g) const;

  CommandRoute& commands_;
  const KeyLayout layout_;
  const std::string id_;
  const std::string incarnation_;
  const std::string ttl_ms_;
  const redis::Script& acquire_;
  const redis::Script& take_over_acquire_;  // a group's first acquire with reclaim_on_restart
  const Settings settings_;
  const redis::SharedArguments renew_argv_;  // ARGV of renew_batch_script()
  std::weak_ptr<void> owner_;
  std::vector<Renewal> renewals_;  // queued this turn; a flush is posted while not empty
  std::vector<Renewal> sorting_;   // flush_renewals()'s scratch, kept for its capacity
  std::vector<const redis::ScriptArguments*> batch_parts_;  // renew_many()'s, kept for its capacity
  // The change stamp (Settings::change_stamp): its key, encoded as a batch's
  // last part, the value the last batch read ("": none) and a number for
  // it that groups keep instead of the value (0: none).
  const redis::ScriptArguments stamp_key_;
  std::string stamp_;
  std::uint32_t stamp_number_ = 0;
  std::uint32_t stamps_seen_ = 0;
  const bool node_batches_wanted_;  // cross_slot_renewals on a cluster
  bool node_batches_;  // ... and no node refused renew_node_script() since a connection came up
  bool wait_refused_ = false;  // confirm mode: WAIT refused since a connection came up
  std::function<void(const Error&)> on_confirm_refused_;

  /// A WAIT answered with an error reply: reported once, then too few.
  bool wait_was_refused(const redis::Reply& wait);

  /// Confirm mode: after a script that took or extended the lease, WAIT on
  /// the same connection (`via`), then answer with the replicas' verdict.
  void confirm(GroupState& g, Command command, std::uint64_t seq, LeaseReplyListener& replies, redis::Reply reply,
               redis::Client* via);
};

}  // namespace leasehold::detail
