#pragma once
// Commands to a Redis Cluster: one redis::Client per node, the slot map read
// from CLUSTER SHARDS (CLUSTER SLOTS on servers without it), and every
// command sent to the master of its slot, following MOVED and ASK and
// retrying TRYAGAIN and CLUSTERDOWN within a RedirectBudget (redirect.hpp).
//
// What a node's trouble does: a command to a node whose connection is down
// fails at once with that node's error (errc::not_connected,
// errc::connection_lost, errc::timeout), exactly as redis::Client would, and
// asks for a new slot map, so that the slot's next command goes to whichever
// node serves it then (a promoted replica). Commands for other nodes' slots
// are not touched. Nothing is queued across a reconnect or a failover: a
// lease command must not be replayed later than it was meant.
//
// The cluster counts as up (on_state) from the first slot map read, once its
// masters are connected (at most connect_timeout later), until stop(). A slot no master serves is answered as the nodes would answer it
// (CLUSTERDOWN), so its commands retry within their budget.
//
// Threading: as redis::Client: not thread-safe; call it and let its handlers
// run on its executor.

#include <leasehold/impl/cluster/slot_map.hpp>

#include <leasehold/error.hpp>
#include <leasehold/redis/client.hpp>
#include <leasehold/redis_options.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cstdint>
#include <functional>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace leasehold::cluster::detail {

/// Counters of a ClusterClient since it was made; they only grow.
struct ClusterStats {
  std::uint64_t map_refreshes = 0;        ///< slot maps read
  std::uint64_t map_changes = 0;          ///< ... that differed from the one before
  std::uint64_t map_failures = 0;         ///< CLUSTER SHARDS/SLOTS that failed or could not be read
  std::uint64_t moved = 0;                ///< MOVED replies followed
  std::uint64_t asked = 0;                ///< ASK replies followed
  std::uint64_t retries = 0;              ///< TRYAGAIN and CLUSTERDOWN retries scheduled
  std::uint64_t gave_up = 0;              ///< commands failed after their redirect budget ran out
};

class ClusterClient {
 public:
  using StateHandler = redis::Client::StateHandler;

  /// A client for the cluster `options.cluster` names (required); the other
  /// fields (credentials, TLS, timeouts, client name) apply to every node.
  /// Throws std::invalid_argument naming the field for invalid options.
  ClusterClient(boost::asio::any_io_executor executor, RedisOptions options);
  /// As stop().
  ~ClusterClient();
  ClusterClient(const ClusterClient&) = delete;
  ClusterClient& operator=(const ClusterClient&) = delete;

  boost::asio::any_io_executor get_executor() const noexcept { return executor_; }
  const RedisOptions& options() const noexcept { return options_; }

  /// Connects to the seeds and reads the slot map; refreshes it every
  /// refresh_interval and whenever a reply says it changed.
  void start();
  /// Closes every connection; pending commands fail with errc::stopped.
  void stop();

  /// Called when the cluster becomes usable (the first slot map, its
  /// masters connected or connect_timeout passed: up, no error) and on stop (down, errc::stopped). Set before start().
  void on_state(StateHandler handler) { on_state_ = std::move(handler); }
  /// Adds a handler called after the slot map changed (the first one
  /// included), on the executor. Add before start().
  void on_map_change(std::function<void()> handler) { on_map_change_.push_back(std::move(handler)); }
  /// Called on the executor each time one node's connection comes up (error
  /// empty) or fails (the node's error), with the node's "host:port". Set
  /// before start().
  using NodeStateHandler = std::function<void(const std::string& address, bool up, const Error& error)>;
  void on_node_state(NodeStateHandler handler) { on_node_state_ = std::move(handler); }
  /// Called on the executor after each slot map read: the error (naming the
  /// node asked and why) when it failed, empty when it worked. Set before
  /// start().
  void on_map_read(std::function<void(const Error&)> handler) { on_map_read_ = std::move(handler); }
  /// What the slot map says node "host:port" is, for people: "master of
  /// slots 0-5460", "replica of 127.0.0.1:7000 (slots 0-5460)", or "a seed,
  /// in no slot map" when the map does not name it.
  std::string describe_node(std::string_view address) const;
  /// "master" or "replica" as the slot map names node "host:port"; empty
  /// when it does not.
  std::string role_of(std::string_view address) const;
  /// The slot map names node "host:port" as the master of some slots.
  bool serves_slots(std::string_view address) const { return role_of(address) == "master"; }
  /// Reads the slot map again soon (one read in flight however many ask).
  void request_refresh() { refresh_soon(); }
  /// A slot map has been read.
  bool ready() const noexcept { return ready_; }
  /// The slot map in use (empty before the first).
  const SlotMap& slot_map() const noexcept { return map_; }
  /// The master the map names for `slot` (nullptr: none); valid until the
  /// map changes, which happens only in a handler of this client.
  const ClusterNode* master_of(std::uint16_t slot) const noexcept { return map_.master_of(slot); }
  const ClusterStats& stats() const noexcept { return stats_; }
  /// When the last reply from any node arrived (an error reply counts, a
  /// connection failure does not), or nullopt before the first. Callable
  /// from any thread: one atomic load.
  std::optional<std::chrono::steady_clock::time_point> last_reply_at() const noexcept;
  /// The connection to each node it has talked to, by "host:port".
  std::vector<std::pair<std::string, const redis::Client*>> nodes() const;

  /// Loaded on every node's connections (redis::Client::preload); must
  /// outlive the ClusterClient. Call before start().
  void preload(const redis::Script& script);

  /// The script on the master of `slot`, which every key of `arguments` must
  /// hash to; `arguments` (and `script`) must outlive the call.
  /// Handler: as redis::Client::async_eval, plus the connection that gave
  /// the answer (nullptr when none did), for a follow-up on the same
  /// connection (WAIT). TRYAGAIN and CLUSTERDOWN are retried until
  /// `retry_until` when that is later than the options' retry_timeout.
  using EvalDone = boost::asio::any_completion_handler<void(error_code, redis::Reply, redis::Client*)>;
  void async_eval(std::uint16_t slot, const redis::Script& script, const redis::ScriptArguments& arguments,
                  EvalDone done, std::optional<std::chrono::steady_clock::time_point> retry_until = {});
  /// The same with keys and arguments given now (copied once, kept for resends).
  void async_eval(std::uint16_t slot, const redis::Script& script, const std::vector<std::string>& keys,
                  const std::vector<std::string>& args, EvalDone done);
  /// Every command of `request` (all on keys of `slot`) in one write to its
  /// master. Handler: as redis::Client::async_exec. A cluster error reply to
  /// any of the commands resends the whole request.
  using ExecDone = boost::asio::any_completion_handler<void(error_code, std::vector<redis::Reply>)>;
  void async_exec(std::uint16_t slot, redis::Request request, ExecDone done);

 private:
  struct Call;
  struct Node {
    std::unique_ptr<redis::Client> client;
    bool seed = false;
    std::string host;
    // CLUSTER SHARDS was refused or unreadable on this connection: SLOTS
    // until it reconnects (it may come back upgraded).
    bool slots_only = false;
  };

  void send(std::shared_ptr<Call> call);
  void on_replies(std::shared_ptr<Call> call, std::string_view host, redis::Client* via, error_code ec,
                  std::vector<redis::Reply> replies);
  void on_eval_reply(std::shared_ptr<Call> call, std::string_view host, redis::Client* via, error_code ec,
                     redis::Reply reply);
  void resend_later(std::shared_ptr<Call> call, std::chrono::milliseconds delay);
  redis::Client& client_for(const ClusterNode& node, bool seed = false);
  Node& node_for(const ClusterNode& node, bool seed = false);
  void node_state(const std::string& address, bool up, const Error& error);

  void refresh_soon();
  void refresh();
  void read_map(const std::string& address, bool shards);
  void map_read(SlotMapReading reading);
  void arm_periodic_refresh();
  void maybe_ready();

  boost::asio::any_io_executor executor_;
  RedisOptions options_;
  std::vector<const redis::Script*> scripts_;
  std::map<std::string, Node> nodes_;
  SlotMap map_;
  ClusterStats stats_;
  StateHandler on_state_;
  std::vector<std::function<void()>> on_map_change_;
  NodeStateHandler on_node_state_;
  std::function<void(const Error&)> on_map_read_;
  bool started_ = false;
  bool stopped_ = false;
  bool ready_ = false;
  bool refreshing_ = false;       // a CLUSTER SHARDS/SLOTS is in flight
  bool refresh_again_ = false;    // ... and another was asked for meanwhile
  boost::asio::steady_timer refresh_timer_;
  boost::asio::steady_timer ready_timer_;  // bounds the wait for the first map's masters
  bool ready_timer_armed_ = false;
  bool ready_wait_over_ = false;
  std::vector<std::weak_ptr<Call>> delayed_;  // calls waiting out a backoff, failed by stop()
  // Lets replies that arrive after destruction see it (they then only complete their caller).
  std::shared_ptr<ClusterClient*> self_ = std::make_shared<ClusterClient*>(this);
  std::atomic<std::int64_t> last_reply_ns_{0};  // steady_clock, 0: none yet
  void replied() noexcept;
};

}  // namespace leasehold::cluster::detail
