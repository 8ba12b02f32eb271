#include <leasehold/impl/cluster/cluster_client.hpp>

#include <leasehold/impl/cluster/redirect.hpp>
#include <leasehold/impl/cluster/slot_map_replies.hpp>
#include <leasehold/impl/base/validated.hpp>

#include <boost/asio/post.hpp>

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace leasehold::cluster::detail {

namespace asio = boost::asio;

// Handlers are moved in by the constructors: Boost 1.81's move assignment of
// any_completion_handler recurses until the stack overflows.
struct ClusterClient::Call {
  Call(std::uint16_t s, const RedirectLimits& limits, EvalDone done)
      : slot(s), eval_done(std::move(done)), budget(limits, RedirectBudget::Clock::now()) {}
  Call(std::uint16_t s, const RedirectLimits& limits, ExecDone done)
      : slot(s), exec_done(std::move(done)), budget(limits, RedirectBudget::Clock::now()) {}

  std::uint16_t slot;
  EvalDone eval_done;
  ExecDone exec_done;
  // A script call (script set) or a request (request set).
  const redis::Script* script = nullptr;
  const redis::ScriptArguments* arguments = nullptr;
  std::unique_ptr<redis::ScriptArguments> owned_arguments;
  std::optional<redis::Request> request;

  RedirectBudget budget;
  std::optional<ClusterNode> node;  // where the budget sends it next; unset: the slot's master
  bool asking = false;
  std::optional<asio::steady_timer> backoff;

  // Exactly once, whatever the client's state (it may be gone).
  void complete(error_code ec, std::vector<redis::Reply> replies, redis::Client* via) {
    if (script != nullptr) {
      complete_eval(ec, replies.empty() ? redis::Reply{} : std::move(replies.front()), via);
    } else if (exec_done) {
      std::move(exec_done)(ec, std::move(replies));
    }
  }
  void complete_eval(error_code ec, redis::Reply reply, redis::Client* via) {
    if (eval_done) std::move(eval_done)(ec, std::move(reply), via);
  }
};

namespace {

RedisOptions with_seeds(RedisOptions options) {
  if (!options.cluster) throw std::invalid_argument("RedisOptions.cluster: not set (a ClusterClient needs seed nodes)");
  return options;
}

// What a connection to one node uses: everything but the cluster's fields.
RedisOptions node_options(const RedisOptions& cluster, const ClusterNode& node) {
  RedisOptions o = cluster;
  o.cluster.reset();
  o.host = node.host;
  o.port = node.port;
  o.require_primary = false;  // a seed may be a replica; MOVED says where the slots are
  return o;
}

// The node may be gone (failed over, restarting): its slots may have moved.
bool node_may_be_gone(const error_code& ec) {
  return ec == errc::not_connected || ec == errc::connection_lost || ec == errc::timeout;
}

// The first reply the cluster (not the command) gave: MOVED, ASK, TRYAGAIN,
// CLUSTERDOWN or a malformed redirection.
const redis::Reply* cluster_error_in(const std::vector<redis::Reply>& replies) {
  for (const redis::Reply& r : replies) {
    if (r.is_error() && read_cluster_error(r.str).kind != ClusterError::Kind::other) return &r;
  }
  return nullptr;
}

}  // namespace

ClusterClient::ClusterClient(asio::any_io_executor executor, RedisOptions options)
    : executor_(std::move(executor)),
      options_(leasehold::detail::validated(with_seeds(std::move(options)))),
      refresh_timer_(executor_),
      ready_timer_(executor_) {}

ClusterClient::~ClusterClient() {
  *self_ = nullptr;
  stop();
}

std::vector<std::pair<std::string, const redis::Client*>> ClusterClient::nodes() const {
  std::vector<std::pair<std::string, const redis::Client*>> out;
  for (const auto& [address, node] : nodes_) out.emplace_back(address, node.client.get());
  return out;
}

void ClusterClient::preload(const redis::Script& script) {
  scripts_.push_back(&script);
  for (auto& [address, node] : nodes_) node.client->preload(script);
}

void ClusterClient::start() {
  if (started_ || stopped_) return;
  started_ = true;
  for (const ClusterNodeAddress& seed : options_.cluster->seeds) client_for({{}, seed.host, seed.port}, true);
  arm_periodic_refresh();
}

void ClusterClient::stop() {
  if (stopped_) return;
  stopped_ = true;
  refresh_timer_.cancel();
  ready_timer_.cancel();
  for (const auto& weak : delayed_) {
    if (auto call = weak.lock(); call && call->backoff) call->backoff->cancel();
  }
  delayed_.clear();
  for (auto& [address, node] : nodes_) node.client->stop();
  const bool was_ready = ready_;
  ready_ = false;
  if (was_ready && on_state_) on_state_(false, Error{make_error_code(errc::stopped), "stopped"});
}

// ---- commands ------------------------------------------------------------------

void ClusterClient::async_eval(std::uint16_t slot, const redis::Script& script,
                               const redis::ScriptArguments& arguments, EvalDone done,
                               std::optional<std::chrono::steady_clock::time_point> retry_until) {
  auto call = std::make_shared<Call>(slot, RedirectLimits::from(*options_.cluster), std::move(done));
  if (retry_until) call->budget.retry_until(*retry_until);
  call->script = &script;
  call->arguments = &arguments;
  send(std::move(call));
}

void ClusterClient::async_eval(std::uint16_t slot, const redis::Script& script, const std::vector<std::string>& keys,
                               const std::vector<std::string>& args, EvalDone done) {
  auto call = std::make_shared<Call>(slot, RedirectLimits::from(*options_.cluster), std::move(done));
  const std::vector<std::string_view> key_views(keys.begin(), keys.end());
  const std::vector<std::string_view> arg_views(args.begin(), args.end());
  call->owned_arguments = std::make_unique<redis::ScriptArguments>(key_views, arg_views);
  call->script = &script;
  call->arguments = call->owned_arguments.get();
  send(std::move(call));
}

void ClusterClient::async_exec(std::uint16_t slot, redis::Request request, ExecDone done) {
  auto call = std::make_shared<Call>(slot, RedirectLimits::from(*options_.cluster), std::move(done));
  call->request = std::move(request);
  send(std::move(call));
}

// Replies complete on the node client's executor, which is ours: handlers run
// in a later turn than the call that sent them (redis::Client's rule), so a
// caller never sees its handler run inside async_eval.
void ClusterClient::send(std::shared_ptr<Call> call) {
  if (stopped_ || !started_) {
    const auto code = stopped_ ? errc::stopped : errc::not_connected;
    return asio::post(executor_, [call, code] { call->complete(make_error_code(code), {}, nullptr); });
  }
  const ClusterNode* target = call->node ? &*call->node : map_.master_of(call->slot);
  if (target == nullptr) {
    if (!ready_) {
      return asio::post(executor_, [call] { call->complete(make_error_code(errc::not_connected), {}, nullptr); });
    }
    // A slot the map has no master for: as the nodes would answer.
    return asio::post(executor_, [self = self_, call] {
      if (*self == nullptr) return call->complete(make_error_code(errc::stopped), {}, nullptr);
      std::vector<redis::Reply> replies;
      replies.push_back(redis::Reply::make_error("CLUSTERDOWN Hash slot not served"));
      (*self)->on_replies(call, {}, nullptr, make_error_code(errc::server_error), std::move(replies));
    });
  }
  Node& node = node_for(*target);
  redis::Client& client = *node.client;
  // The handlers hold the node's host, not a copy of the node (each copy of
  // its 40-digit id was an allocation per command): nodes_ keeps every node
  // until the client is destroyed, and a reply after that only completes.
  const std::string* host = &node.host;
  if (call->asking) {
    // ASKING covers the connection's next command, which is this one: the
    // client writes requests in the order they are made.
    client.async_exec(redis::Request{"ASKING"}, [](error_code, std::vector<redis::Reply>) {});
  }
  if (call->request) {
    client.async_exec(*call->request, [self = self_, call, host, via = &client](error_code ec,
                                                                                std::vector<redis::Reply> replies) {
      if (*self == nullptr) return call->complete(ec, std::move(replies), nullptr);
      (*self)->on_replies(call, *host, via, ec, std::move(replies));
    });
  } else {
    client.async_eval(*call->script, *call->arguments,
                      [self = self_, call, host, via = &client](error_code ec, redis::Reply reply) {
                        if (*self == nullptr) return call->complete_eval(ec, std::move(reply), nullptr);
                        (*self)->on_eval_reply(call, *host, via, ec, std::move(reply));
                      });
  }
}

// A script's reply that is no error (nearly all of them) completes without
// on_replies' vector: what on_replies would do with it, one allocation less.
void ClusterClient::on_eval_reply(std::shared_ptr<Call> call, std::string_view host, redis::Client* via,
                                  error_code ec, redis::Reply reply) {
  if (!reply.is_error() && !node_may_be_gone(ec)) {
    if (ec != errc::stopped && via != nullptr) replied();
    return call->complete_eval(ec, std::move(reply), via);
  }
  std::vector<redis::Reply> replies;
  replies.push_back(std::move(reply));
  on_replies(std::move(call), host, via, ec, std::move(replies));
}

std::optional<std::chrono::steady_clock::time_point> ClusterClient::last_reply_at() const noexcept {
  const std::int64_t ns = last_reply_ns_.load(std::memory_order_relaxed);
  if (ns == 0) return std::nullopt;
  return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(ns));
}

void ClusterClient::replied() noexcept {
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  last_reply_ns_.store(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count(), std::memory_order_relaxed);
}

void ClusterClient::on_replies(std::shared_ptr<Call> call, std::string_view host, redis::Client* via,
                               error_code ec, std::vector<redis::Reply> replies) {
  if (!replies.empty() && !node_may_be_gone(ec) && ec != errc::stopped && via != nullptr) replied();
  if (node_may_be_gone(ec)) {
    // The node may be gone for good (a failover follows): the next command
    // for its slots goes wherever the new map says.
    refresh_soon();
    return call->complete(ec, std::move(replies), via);
  }
  const redis::Reply* error = cluster_error_in(replies);
  if (error == nullptr || stopped_) return call->complete(ec, std::move(replies), via);
  const RedirectStep step = call->budget.on_error(error->str, host, RedirectBudget::Clock::now());
  switch (step.action) {
    case RedirectStep::Action::deliver:
      return call->complete(ec, std::move(replies), via);
    case RedirectStep::Action::give_up:
      ++stats_.gave_up;
      // The caller's error says how long and how often it was retried, after
      // the node's last word (which still classifies the reply).
      replies[static_cast<std::size_t>(error - replies.data())].str += " (" + step.error.detail + ")";
      return call->complete(step.error.code, std::move(replies), via);
    case RedirectStep::Action::resend:
      break;
  }
  if (step.cause == ClusterError::Kind::moved) ++stats_.moved;
  if (step.cause == ClusterError::Kind::ask) ++stats_.asked;
  if (step.refresh_map) refresh_soon();
  call->node = step.node;
  call->asking = step.asking;
  if (step.delay.count() > 0) {
    ++stats_.retries;
    return resend_later(std::move(call), step.delay);
  }
  send(std::move(call));
}

void ClusterClient::resend_later(std::shared_ptr<Call> call, std::chrono::milliseconds delay) {
  std::erase_if(delayed_, [](const std::weak_ptr<Call>& c) { return c.expired(); });
  delayed_.push_back(call);
  call->backoff.emplace(executor_, delay);
  call->backoff->async_wait([self = self_, call](error_code) {
    if (*self == nullptr || (*self)->stopped_) return call->complete(make_error_code(errc::stopped), {}, nullptr);
    (*self)->send(call);
  });
}

redis::Client& ClusterClient::client_for(const ClusterNode& node, bool seed) { return *node_for(node, seed).client; }

ClusterClient::Node& ClusterClient::node_for(const ClusterNode& node, bool seed) {
  const std::string address = node.to_string();
  auto it = nodes_.find(address);
  if (it == nodes_.end()) {
    auto client = std::make_unique<redis::Client>(executor_, node_options(options_, node));
    for (const redis::Script* script : scripts_) client->preload(*script);
    client->on_state([self = self_, address](bool up, const Error& error) {
      if (*self != nullptr) (*self)->node_state(address, up, error);
    });
    it = nodes_.emplace(address, Node{std::move(client), seed, node.host}).first;
    it->second.client->start();
  }
  return it->second;
}

void ClusterClient::node_state(const std::string& address, bool up, const Error& error) {
  if (stopped_) return;
  if (up) nodes_.at(address).slots_only = false;
  if (on_node_state_) on_node_state_(address, up, error);
  // The first connection to come up reads the map; a connection lost may
  // mean a failover: read it again.
  if (up && !ready_) {
    if (map_.empty()) return refresh();
    return maybe_ready();
  }
  if (!up) refresh_soon();
}

// Up once the first map's masters are connected (a command made before
// would fail: redis::Client does not queue while connecting), or after
// connect_timeout with whichever are: a master that is down fails only its
// own slots' commands.
void ClusterClient::maybe_ready() {
  if (ready_ || stopped_ || map_.empty()) return;
  if (!ready_wait_over_) {
    for (const ClusterNode& master : map_.masters()) {
      if (!client_for(master).connected()) return;
    }
  }
  ready_ = true;
  ready_timer_.cancel();
  if (on_state_) on_state_(true, Error{});
}

// ---- the slot map --------------------------------------------------------------

void ClusterClient::refresh_soon() {
  if (stopped_) return;
  asio::post(executor_, [self = self_] {
    if (*self != nullptr) (*self)->refresh();
  });
}

// One CLUSTER SHARDS in flight at a time, on a connected node: a master of
// the current map first (it knows the newest configuration of its own
// slots), else any node, seeds included.
void ClusterClient::refresh() {
  if (stopped_) return;
  if (refreshing_) {
    refresh_again_ = true;
    return;
  }
  std::string asked;
  for (const ClusterNode& master : map_.masters()) {
    auto it = nodes_.find(master.to_string());
    if (it != nodes_.end() && it->second.client->connected()) {
      asked = it->first;
      break;
    }
  }
  if (asked.empty()) {
    for (const auto& [address, node] : nodes_) {
      if (node.client->connected()) {
        asked = address;
        break;
      }
    }
  }
  // Nobody to ask: the next connection that comes up asks (node_state), or
  // the periodic refresh.
  if (asked.empty()) return;
  refreshing_ = true;
  read_map(asked, !nodes_.at(asked).slots_only);
}

void ClusterClient::read_map(const std::string& address, bool shards) {
  redis::Client& client = *nodes_.at(address).client;
  const redis::Request request = shards ? redis::Request{"CLUSTER", "SHARDS"} : redis::Request{"CLUSTER", "SLOTS"};
  const std::string host = client.options().host;
  client.async_exec(request, [self = self_, address, shards, host](error_code ec, std::vector<redis::Reply> replies) {
    if (*self == nullptr) return;
    ClusterClient& me = **self;
    EndpointContext context{host, me.options_.tls.enabled};
    if (ec || replies.size() != 1) {
      SlotMapReading failed;
      failed.error = Error{ec ? ec : make_error_code(errc::unexpected_reply),
                           std::string(shards ? "CLUSTER SHARDS" : "CLUSTER SLOTS") + " on " + address};
      return me.map_read(std::move(failed));
    }
    me.replied();
    const redis::Reply& reply = replies.front();
    SlotMapReading reading = shards ? read_cluster_shards(reply, context) : read_cluster_slots(reply, context);
    // Servers before 7.0 do not know SHARDS, an ACL may refuse it, and
    // Redis-compatible servers answer it in shapes of their own: ask the
    // older question, on this connection from now on.
    if (shards && reading.error) {
      if (auto it = me.nodes_.find(address); it != me.nodes_.end()) it->second.slots_only = true;
      return me.read_map(address, false);
    }
    if (reading.error && reading.error.detail.find(address) == std::string::npos) {
      reading.error.detail += " (asked " + address + ")";
    }
    me.map_read(std::move(reading));
  });
}

void ClusterClient::map_read(SlotMapReading reading) {
  refreshing_ = false;
  if (stopped_) return;
  if (reading.error.code || reading.map.empty()) {
    ++stats_.map_failures;
    if (on_map_read_) {
      on_map_read_(reading.error.code ? reading.error
                                      : Error{make_error_code(errc::unexpected_reply), "the slot map is empty"});
    }
  } else {
    ++stats_.map_refreshes;
    if (on_map_read_) on_map_read_(Error{});
    if (!(reading.map == map_)) {
      ++stats_.map_changes;
      map_ = std::move(reading.map);
      // Connect to new masters now, not on their first command.
      for (const ClusterNode& master : map_.masters()) client_for(master);
      for (const auto& handler : on_map_change_) handler();
    }
    if (!ready_ && !ready_timer_armed_) {
      ready_timer_armed_ = true;
      ready_timer_.expires_after(options_.connect_timeout);
      ready_timer_.async_wait([self = self_](error_code ec) {
        if (ec || *self == nullptr) return;
        (*self)->ready_wait_over_ = true;
        (*self)->maybe_ready();
      });
    }
    maybe_ready();
  }
  if (refresh_again_) {
    refresh_again_ = false;
    refresh_soon();
  }
}

void ClusterClient::arm_periodic_refresh() {
  const auto period = options_.cluster->refresh_interval;
  if (stopped_ || period.count() <= 0) return;
  refresh_timer_.expires_after(period);
  refresh_timer_.async_wait([self = self_](error_code ec) {
    if (ec || *self == nullptr || (*self)->stopped_) return;
    (*self)->refresh();
    (*self)->arm_periodic_refresh();
  });
}

namespace {

enum class Part : std::uint8_t { none, master, replica };

// What `range` makes node "host:port".
Part part_in(const SlotRange& range, std::string_view address) {
  if (range.master.to_string() == address) return Part::master;
  const bool replica = std::any_of(range.replicas.begin(), range.replicas.end(),
                                   [&](const ClusterNode& r) { return r.to_string() == address; });
  return replica ? Part::replica : Part::none;
}

}  // namespace

std::string ClusterClient::role_of(std::string_view address) const {
  std::string role;
  for (const SlotRange& range : map_.ranges()) {
    const Part part = part_in(range, address);
    if (part == Part::master) return "master";
    if (part == Part::replica) role = "replica";
  }
  return role;
}

std::string ClusterClient::describe_node(std::string_view address) const {
  std::string served;
  std::string master_of_replica;
  for (const SlotRange& range : map_.ranges()) {
    const Part part = part_in(range, address);
    if (part == Part::none) continue;
    if (part == Part::replica) master_of_replica = range.master.to_string();
    served += served.empty() ? "" : ",";
    served += range.first == range.last ? std::to_string(range.first)
                                        : std::to_string(range.first) + "-" + std::to_string(range.last);
  }
  if (served.empty()) return "a seed, in no slot map";
  if (!master_of_replica.empty()) return "replica of " + master_of_replica + " (slots " + served + ")";
  return "master of slots " + served;
}

}  // namespace leasehold::cluster::detail
