#pragma once
// A Redis Cluster for one test, on loopback: masters and their replicas, each
// a real redis-server (see RedisServer) in cluster mode in its own temporary
// directory, joined by `redis-cli --cluster create`. What the cluster
// reports is read from CLUSTER SHARDS by the harness itself (not by the
// library under test). Every wait is bounded; the destructor kills everything.

#include "support/admin_client.hpp"
#include "support/redis_server.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace leasehold::test {

struct ClusterTopologyOptions {
  int masters = 3;
  int replicas_per_master = 1;
  std::chrono::milliseconds node_timeout{1000};  ///< cluster-node-timeout
  std::string password;                          ///< requirepass and masterauth on every node when non-empty
  std::vector<std::string> extra_config;         ///< raw config lines for every node, written last
};

class ClusterTopology {
 public:
  /// Slots first..last, inclusive.
  struct SlotRange {
    int first = 0;
    int last = 0;
    friend bool operator==(const SlotRange&, const SlotRange&) = default;
  };

  /// One node as another node sees it (an entry of its CLUSTER SHARDS).
  struct NodeView {
    std::size_t index = 0;  ///< node(index)
    std::string id;
    bool master = false;
    std::string health;                     ///< "online", "loading" or "fail"
    std::vector<SlotRange> slots;           ///< what a master serves (empty for replicas)
    std::optional<std::size_t> replica_of;  ///< a replica's master (its shard's master)
  };

  /// Starts masters * (1 + replicas_per_master) nodes, joins them with
  /// `redis-cli --cluster create ... --cluster-replicas R --cluster-yes`
  /// (which picks the pairs: read them from nodes()), then waits until
  /// wait_until_settled(). Throws std::runtime_error with the log tails when
  /// a step fails or a wait (20 s each) runs out.
  explicit ClusterTopology(ClusterTopologyOptions options = {});
  /// Kills every node and removes the directories.
  ~ClusterTopology();

  ClusterTopology(const ClusterTopology&) = delete;
  ClusterTopology& operator=(const ClusterTopology&) = delete;

  const ClusterTopologyOptions& topology_options() const noexcept { return options_; }

  // --- Nodes -------------------------------------------------------------------

  std::size_t node_count() const noexcept { return nodes_.size(); }
  RedisServer& node(std::size_t i) { return nodes_.at(i); }
  const RedisServer& node(std::size_t i) const { return nodes_.at(i); }
  /// Its cluster id (CLUSTER MYID, read at start; kept across restart()).
  const std::string& node_id(std::size_t i) const { return ids_.at(i); }
  /// The node listening on `port`, if any.
  std::optional<std::size_t> index_of_port(std::uint16_t port) const;
  /// "node 2 (127.0.0.1:40123)" for messages.
  std::string describe_node(std::size_t i) const;
  /// Running and not paused: the harness asks it questions.
  bool is_live(std::size_t i) const;

  // --- What the cluster reports --------------------------------------------------

  /// Every node as node `asked` sees it (CLUSTER SHARDS), in index order.
  /// Throws std::runtime_error when it does not answer or answers something
  /// the harness cannot read (naming the node).
  std::vector<NodeView> view_from(std::size_t asked) const;
  /// view_from() the first live node that answers.
  std::vector<NodeView> nodes() const;
  /// The masters that serve slots, and each one's replicas, per nodes().
  std::vector<std::size_t> masters() const;
  std::vector<std::size_t> replicas_of(std::size_t master) const;
  /// "redis-cluster://127.0.0.1:<port>,..." naming masters() as seed nodes.
  std::string url() const;
  /// The node serving `slot` per nodes(); throws when none does.
  std::size_t master_of_slot(int slot) const;
  /// CLUSTER KEYSLOT on a live node (the server's answer, not the library's).
  int key_slot(std::string_view key) const;
  /// CLUSTER INFO on node i says cluster_state:ok (false when it does not answer).
  bool reports_ok(std::size_t i) const;
  /// ROLE on node i says master (false when it does not answer).
  bool has_master_role(std::size_t i) const;

  /// Waits until every live node reports cluster_state:ok and all of them
  /// name the same master for every slot; returns that owner of each slot
  /// (-1: none). Throws std::runtime_error after bound, saying which node
  /// disagreed or was not ok.
  std::vector<int> wait_until_ok(std::chrono::milliseconds bound = std::chrono::seconds(20));
  /// wait_until_ok(), and also: every slot is served, every node is live and
  /// seen "online" by every node, masters() has options.masters nodes with
  /// replicas_per_master replicas each, and every replica's link to its
  /// master is up (INFO replication), so that it can be promoted.
  void wait_until_settled(std::chrono::milliseconds bound = std::chrono::seconds(20));

  // --- Faults -----------------------------------------------------------------------

  void kill(std::size_t i);    ///< SIGKILL
  void pause(std::size_t i);   ///< SIGSTOP (the harness stops asking it)
  void resume(std::size_t i);  ///< SIGCONT
  /// Starts node i again on its ports with its nodes.conf (same id, the
  /// cluster it knew) and an empty dataset; waits until it answers PING, not
  /// until the cluster took it back (wait_until_settled() does).
  void restart(std::size_t i);

  /// After old_master was killed or paused: waits until one of the other
  /// live nodes serves every slot old_master served (as last confirmed by
  /// the harness), every live node agrees (wait_until_ok()) and ROLE on it
  /// says master. Returns it. Throws std::runtime_error after bound.
  std::size_t wait_for_promotion(std::size_t old_master,
                                 std::chrono::milliseconds bound = std::chrono::seconds(20));
  /// CLUSTER FAILOVER on `replica` (a manual failover, coordinated with its
  /// master), then waits until it serves its master's slots, the old master
  /// is its replica and every live node agrees. Throws std::runtime_error
  /// when it is not a replica, the command is refused or bound runs out.
  void failover(std::size_t replica, std::chrono::milliseconds bound = std::chrono::seconds(20));

  // --- Slot migration, in steps a test can interleave --------------------------

  /// CLUSTER SETSLOT slot IMPORTING on `to`, then MIGRATING on the slot's
  /// current master. From here the old master answers ASK for the slot's
  /// keys it no longer has, and TRYAGAIN for a multi-key command whose keys
  /// are split. Throws when `to` is not a master or already serves the slot.
  void begin_migration(int slot, std::size_t to);
  /// Moves up to `limit` of the slot's keys from the old master to the new
  /// one (CLUSTER GETKEYSINSLOT + MIGRATE ... KEYS, with AUTH when there is
  /// a password); returns how many moved. Requires begin_migration().
  std::size_t migrate_keys(int slot, std::size_t limit = SIZE_MAX);
  /// CLUSTER SETSLOT slot NODE <to> on the new master, then the old one, then
  /// every other live master; waits until every live node agrees that `to`
  /// serves it (the old master then answers MOVED). Throws when a node
  /// refuses: the old master does while it still holds keys of the slot
  /// (migrate_keys() them all first). Requires begin_migration().
  void finish_migration(int slot, std::chrono::milliseconds bound = std::chrono::seconds(20));

  /// The last lines of every node's log, for failure messages.
  std::string log_tails(std::size_t lines = 15) const;

 private:
  struct Migration {
    std::size_t from = 0;
    std::size_t to = 0;
  };

  std::vector<std::string> node_config() const;
  void start_nodes();
  void create_cluster();
  void read_ids();
  leasehold::redis::Reply call(std::size_t i, std::vector<std::string> args) const;
  void expect_ok(std::size_t i, std::vector<std::string> args) const;
  std::optional<std::size_t> first_live() const;
  // Every live node ok and agreeing: the owner of each slot, or nullopt
  // with the reason in `why`.
  std::optional<std::vector<int>> agreed_owners(std::string& why) const;
  bool replica_link_up(std::size_t i) const;
  void remember_owners(const std::vector<int>& owners);
  std::vector<SlotRange> served_by(std::size_t i) const;

  ClusterTopologyOptions options_;
  std::vector<RedisServer> nodes_;
  std::vector<std::string> ids_;
  std::vector<bool> paused_;
  std::vector<int> owners_;  // the owner of each slot the harness last confirmed (-1: none)
  std::map<int, Migration> migrations_;
};

}  // namespace leasehold::test
