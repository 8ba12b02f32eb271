#pragma once
// A Redis Sentinel deployment for one test, on loopback: a master, its
// replicas and the sentinels that watch them, each a real redis-server (see
// RedisServer) in its own temporary directory. Every wait is bounded; the
// destructor kills everything.

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

struct SentinelTopologyOptions {
  int replicas = 2;
  int sentinels = 3;
  std::string master_name = "leasehold";
  std::chrono::milliseconds down_after{1000};        ///< sentinel down-after-milliseconds
  std::chrono::milliseconds failover_timeout{3000};  ///< sentinel failover-timeout
  int quorum = 2;
  std::string sentinel_password;  ///< requirepass on the sentinels when non-empty
  std::string data_password;      ///< requirepass and masterauth on the data nodes when non-empty
};

/// The field/value pairs of a flat RESP2 array: SENTINEL MASTER, and each
/// entry of SENTINEL REPLICAS and SENTINEL SENTINELS.
std::map<std::string, std::string> reply_fields(const leasehold::redis::Reply& reply);

class SentinelTopology {
 public:
  /// Starts the master (node 0) and the replicas, waits until every replica's
  /// link to the master is up, then starts the sentinels and waits until
  /// each sees the master, every replica (healthy) and every other sentinel
  /// (see wait_until_settled()). Each wait is bounded (15 s); throws
  /// std::runtime_error with the log tails when one runs out.
  explicit SentinelTopology(SentinelTopologyOptions options = {});
  /// Kills the sentinels, then the data nodes, and removes their directories.
  ~SentinelTopology();

  SentinelTopology(const SentinelTopology&) = delete;
  SentinelTopology& operator=(const SentinelTopology&) = delete;

  const SentinelTopologyOptions& topology_options() const noexcept { return options_; }

  // --- Data nodes (index 0 is the initial master) ---------------------------

  std::size_t node_count() const noexcept { return nodes_.size(); }
  RedisServer& node(std::size_t i) { return nodes_.at(i); }
  const RedisServer& node(std::size_t i) const { return nodes_.at(i); }
  /// The master as the harness last confirmed it: 0 at start, then whatever
  /// wait_for_new_master() returned.
  std::size_t master_index() const noexcept { return master_; }

  // --- Sentinels -------------------------------------------------------------

  std::size_t sentinel_count() const noexcept { return sentinels_.size(); }
  std::uint16_t sentinel_port(std::size_t j) const { return sentinels_.at(j).port(); }
  /// The sentinel process itself (log, pid).
  RedisServer& sentinel(std::size_t j) { return sentinels_.at(j); }
  /// A fresh blocking connection to sentinel j (authenticated when
  /// sentinel_password is set).
  AdminClient sentinel_admin(std::size_t j,
                             std::chrono::milliseconds timeout = std::chrono::milliseconds(2000)) const;
  /// redis-sentinel://127.0.0.1:p1,127.0.0.1:p2,...#<master_name>
  std::string sentinel_url() const { return sentinel_url(options_.master_name); }
  std::string sentinel_url(std::string_view master_name) const;

  // --- What the deployment reports ------------------------------------------

  /// The data node sentinel j names (SENTINEL GET-MASTER-ADDR-BY-NAME);
  /// nullopt when it cannot be asked or names no node of this topology.
  std::optional<std::size_t> reported_master(std::size_t j) const;
  /// The data node a majority of all the sentinels name; nullopt without one.
  std::optional<std::size_t> current_master() const;
  /// ROLE on node i says master (false when it does not answer).
  bool has_master_role(std::size_t i) const;
  /// INFO replication on node i: a replica of node k with its link up.
  bool is_replica_of(std::size_t i, std::size_t k) const;

  /// Waits until a majority of the sentinels name a node other than
  /// old_master and that node's ROLE says master; records it as
  /// master_index() and returns it. Throws std::runtime_error after bound.
  std::size_t wait_for_new_master(std::size_t old_master,
                                  std::chrono::milliseconds bound = std::chrono::seconds(20));
  /// Waits until is_replica_of(i, k); throws std::runtime_error after bound.
  void wait_for_replica_of(std::size_t i, std::size_t k,
                           std::chrono::milliseconds bound = std::chrono::seconds(20));
  /// Waits until every sentinel sees master_index() as the master, the
  /// other data nodes as healthy replicas and all the other sentinels (so
  /// every node and sentinel must be up); throws std::runtime_error after bound.
  /// A sentinel that cannot authenticate to another still lists it as
  /// healthy until down-after-milliseconds passes, so this does not prove
  /// that the sentinels can vote: a failover does.
  void wait_until_settled(std::chrono::milliseconds bound = std::chrono::seconds(15)) const;

  // --- Faults ------------------------------------------------------------------

  /// SIGKILL node master_index().
  void kill_master();
  void pause_node(std::size_t i);   ///< SIGSTOP
  void resume_node(std::size_t i);  ///< SIGCONT
  void kill_sentinel(std::size_t j);
  /// Starts sentinel j again on its port from the config it rewrote (its id
  /// and what it had discovered); waits until it answers. Redis 7.0 rewrites
  /// `sentinel auth-pass` unquoted: a data_password with spaces or quotes
  /// makes that config unreadable.
  void restart_sentinel(std::size_t j);
  /// SENTINEL FAILOVER <name> on the first sentinel that answers; throws on
  /// an error reply (e.g. NOGOODSLAVE, INPROG) or when none answers.
  void manual_failover();
  /// REPLICAOF node k on node i.
  void make_replica_of(std::size_t i, std::size_t k);
  /// Starts node i again (empty) on its port, configured as a replica of
  /// current_master() (or of master_index() while the sentinels have no
  /// majority); as a master when that is node i itself, like a master that
  /// comes back before any failover. Waits until it answers, not until it
  /// has synchronised (see wait_for_replica_of()).
  void restart_node(std::size_t i);

  /// The last lines of every sentinel's and node's log, for failure messages.
  std::string log_tails(std::size_t lines = 15) const;

 private:
  std::vector<std::string> node_config(std::optional<std::size_t> replica_of) const;
  std::vector<std::string> sentinel_config() const;
  void start_nodes();
  void start_sentinels();
  bool sentinel_sees_everything(std::size_t j) const;
  std::size_t majority() const noexcept { return sentinels_.size() / 2 + 1; }

  SentinelTopologyOptions options_;
  std::size_t master_ = 0;
  std::vector<RedisServer> nodes_;
  std::vector<RedisServer> sentinels_;  // declared last: destroyed first
};

}  // namespace leasehold::test
