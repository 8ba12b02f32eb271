#pragma once
// Where the elector's commands go: one redis::Client (a server, or the master
// Sentinel names) or, for a redis-cluster:// URL, a ClusterClient that sends
// each command to the master of its first key's slot. The lease transport,
// confirm mode's WAIT, the scheduler's records and leader_of() talk to this.
//
// Threading: as redis::Client (the elector's strand), except
// last_reply_at(), which any thread may call.

#include <leasehold/impl/cluster/cluster_client.hpp>
#include <leasehold/impl/protocol/key_slot.hpp>

#include <leasehold/metrics.hpp>
#include <leasehold/redis/client.hpp>
#include <leasehold/redis_options.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace leasehold::detail {

class CommandRoute {
 public:
  /// A redis::Client, or a ClusterClient when `options.cluster` is set.
  /// Throws std::invalid_argument naming the field for invalid options.
  CommandRoute(boost::asio::any_io_executor executor, RedisOptions options);
  CommandRoute(const CommandRoute&) = delete;
  CommandRoute& operator=(const CommandRoute&) = delete;

  bool is_cluster() const noexcept { return cluster_.has_value(); }
  /// The cluster client, or nullptr for one server.
  cluster::detail::ClusterClient* cluster() noexcept { return cluster_ ? &*cluster_ : nullptr; }
  const cluster::detail::ClusterClient* cluster() const noexcept { return cluster_ ? &*cluster_ : nullptr; }
  /// The one server's client, or nullptr on a cluster.
  redis::Client* server() noexcept { return server_ ? &*server_ : nullptr; }
  const redis::Client* server() const noexcept { return server_ ? &*server_ : nullptr; }
  const RedisOptions& options() const noexcept;
  /// On a cluster, the master that serves `slot` as far as the slot map
  /// knows (nullptr: none, or one server).
  const cluster::detail::ClusterNode* master_of(std::uint16_t slot) const noexcept {
    return cluster_ ? cluster_->master_of(slot) : nullptr;
  }
  boost::asio::any_io_executor executor() const { return server_ ? server_->get_executor() : cluster_->get_executor(); }
  /// For logs: the server, the sentinels or the seeds (never a password).
  std::string describe() const { return options().to_string(); }

  void preload(const redis::Script& script);
  /// Up once connected (a cluster: once its slot map is read); down with why.
  void on_state(redis::Client::StateHandler handler);
  void start();
  void stop();
  /// Any thread.
  std::optional<std::chrono::steady_clock::time_point> last_reply_at() const noexcept;

  /// The script with pre-encoded arguments whose keys are all in `slot`
  /// (on a cluster; ignored on one server).
  /// done(error_code, redis::Reply, redis::Client* via): as
  /// redis::Client::async_eval, plus the connection that answered (nullptr
  /// when none did), for a WAIT on the same connection. On a cluster,
  /// TRYAGAIN and CLUSTERDOWN are retried until `retry_until` if that is
  /// later than retry_timeout (ClusterClient::async_eval).
  template <typename Done>
  void eval(const redis::Script& script, const redis::ScriptArguments& arguments, std::uint16_t slot, Done done,
            std::optional<std::chrono::steady_clock::time_point> retry_until = {}) {
    if (server_) {
      return server_->async_eval(script, arguments,
                                 [done = std::move(done), via = &*server_](error_code ec, redis::Reply r) mutable {
                                   std::move(done)(ec, std::move(r), via);
                                 });
    }
    cluster_->async_eval(slot, script, arguments, cluster::detail::ClusterClient::EvalDone(std::move(done)),
                         retry_until);
  }
  /// The same with keys and arguments given now (routed by keys[0]).
  template <typename Done>
  void eval(const redis::Script& script, std::vector<std::string> keys, std::vector<std::string> args, Done done) {
    if (server_) {
      return server_->async_eval(script, std::move(keys), std::move(args),
                                 [done = std::move(done), via = &*server_](error_code ec, redis::Reply r) mutable {
                                   std::move(done)(ec, std::move(r), via);
                                 });
    }
    const std::uint16_t slot = keys.empty() ? 0 : cluster::detail::key_slot(keys.front());
    cluster_->async_eval(slot, script, keys, args, cluster::detail::ClusterClient::EvalDone(std::move(done)));
  }
  /// Every command of `request`, all on keys that hash like `key`, in one
  /// write. done(error_code, std::vector<redis::Reply>).
  template <typename Done>
  void exec(redis::Request request, std::string_view key, Done done) {
    if (server_) return server_->async_exec(std::move(request), std::move(done));
    cluster_->async_exec(cluster::detail::key_slot(key), std::move(request),
                         cluster::detail::ClusterClient::ExecDone(std::move(done)));
  }

 private:
  std::optional<redis::Client> server_;
  std::optional<cluster::detail::ClusterClient> cluster_;
};

}  // namespace leasehold::detail
