#pragma once
// Release notices on a Redis Cluster: each watched channel (a slot's, shared
// by the groups of that slot) is subscribed with SSUBSCRIBE on the master
// that serves its slot, through one subscriber connection per master. When the slot map
// says a slot moved, or a node ends a subscription itself (it does when the
// slot migrates away: a server-sent sunsubscribe), the channel is moved to
// the new master. Each channel's availability is reported: a standby whose
// channel is not confirmed polls instead (LeaseMachine).
//
// Threading: as ClusterClient (its executor), which it shares.

#include <leasehold/impl/cluster/cluster_client.hpp>

#include <leasehold/redis/client.hpp>
#include <leasehold/redis_options.hpp>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace leasehold::cluster::detail {

class ClusterNotices {
 public:
  using MessageHandler = redis::Client::MessageHandler;
  /// `channel`'s subscription is confirmed (true) or lost (false).
  using AvailabilityHandler = std::function<void(std::string_view channel, bool available)>;

  /// Subscribes through connections made with `options` (the cluster's; the
  /// client name gets "-sub"), following `map_source`'s slot map.
  ClusterNotices(ClusterClient& map_source, RedisOptions options);
  ~ClusterNotices();
  ClusterNotices(const ClusterNotices&) = delete;
  ClusterNotices& operator=(const ClusterNotices&) = delete;

  /// Set these before start().
  void on_message(MessageHandler handler) { on_message_ = std::move(handler); }
  void on_availability(AvailabilityHandler handler) { on_availability_ = std::move(handler); }
  /// A node refused a subscription for a reason no new slot map cures
  /// (NOPERM on the channel, SSUBSCRIBE unknown): its "host:port" and reply.
  using RefusalHandler = std::function<void(const std::string& address, const Error& error)>;
  void on_refusal(RefusalHandler handler) { on_refusal_ = std::move(handler); }

  void start();
  void stop();
  /// Subscribes `channel` now (or once the slot map is known) and keeps it
  /// subscribed until stop().
  void watch(const std::string& channel);
  /// How many watched channels are confirmed now.
  std::size_t confirmed() const noexcept { return confirmed_; }

 private:
  // One entry per watched channel (up to one per slot, 16,384, whatever the
  // number of groups), the node by reference.
  struct Watched {
    const std::string* home = nullptr;  // the nodes_ key it is subscribed on; nullptr: waiting for a map
    bool confirmed = false;             // the node said it is subscribed
  };

  /// The node's subscriber connection, made on first use; `address` is set
  /// to its nodes_ key.
  redis::Client& subscriber_for(const ClusterNode& node, const std::string*& address);
  void place(const std::string& channel, Watched& w);
  void unplace(const std::string& channel, Watched& w);
  void map_changed();
  void lost(std::string_view channel, Watched& w);
  void node_down(const std::string& address);
  void refused(const std::string& address, const Error& error);

  ClusterClient& cluster_;
  RedisOptions options_;
  MessageHandler on_message_;
  AvailabilityHandler on_availability_;
  RefusalHandler on_refusal_;
  // A node knew no SSUBSCRIBE (Redis 6, KeyDB): every channel is SUBSCRIBEd
  // instead, since the release scripts then PUBLISH, which a cluster
  // broadcasts to every node.
  bool unsharded_ = false;
  std::map<std::string, std::unique_ptr<redis::Client>> nodes_;  // by "host:port"; never erased
  std::map<std::string, Watched, std::less<>> watched_;
  std::size_t confirmed_ = 0;
  bool started_ = false;
  bool stopped_ = false;
  std::shared_ptr<ClusterNotices*> self_ = std::make_shared<ClusterNotices*>(this);
};

}  // namespace leasehold::cluster::detail
