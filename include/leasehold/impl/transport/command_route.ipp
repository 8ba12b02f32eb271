#include <leasehold/impl/transport/command_route.hpp>

#include <leasehold/impl/observe/collect.hpp>

namespace leasehold::detail {

Commands::Commands(boost::asio::any_io_executor executor, RedisOptions options) {
  if (options.cluster) {
    cluster_.emplace(std::move(executor), std::move(options));
  } else {
    server_.emplace(std::move(executor), std::move(options));
  }
}

const RedisOptions& Commands::options() const noexcept { return server_ ? server_->options() : cluster_->options(); }

void Commands::preload(const redis::Script& script) {
  if (server_) return server_->preload(script);
  cluster_->preload(script);
}

void Commands::on_state(redis::Client::StateHandler handler) {
  if (server_) return server_->on_state(std::move(handler));
  cluster_->on_state(std::move(handler));
}

void Commands::start() {
  if (server_) return server_->start();
  cluster_->start();
}

void Commands::stop() {
  if (server_) return server_->stop();
  cluster_->stop();
}

std::optional<std::chrono::steady_clock::time_point> Commands::last_reply_at() const noexcept {
  return server_ ? server_->last_reply_at() : cluster_->last_reply_at();
}

ConnectionMetrics Commands::metrics(std::string name, std::chrono::steady_clock::time_point now) const {
  if (server_) return connection_metrics(std::move(name), *server_, now);
  ConnectionMetrics sum;
  sum.name = std::move(name);
  sum.connected = cluster_->ready();
  for (const auto& [address, client] : cluster_->nodes()) {
    const ConnectionMetrics node = connection_metrics({}, *client, now);
    if (!node.connected && cluster_->serves_slots(address)) sum.connected = false;
    sum.connects += node.connects;
    sum.reconnects += node.reconnects;
    sum.disconnects += node.disconnects;
    sum.commands_sent += node.commands_sent;
    sum.timeouts += node.timeouts;
    sum.protocol_errors += node.protocol_errors;
    sum.round_trip.merge(node.round_trip);
  }
  const auto& stats = cluster_->stats();
  sum.redirects = stats.moved + stats.asked;
  sum.cluster_retries = stats.retries;
  sum.slot_map_failures = stats.map_failures;
  if (const auto at = cluster_->last_reply_at()) sum.last_reply_age = now - *at;
  return sum;
}

std::vector<ConnectionMetrics> Commands::node_metrics(std::chrono::steady_clock::time_point now) const {
  std::vector<ConnectionMetrics> out;
  if (!cluster_) return out;
  for (const auto& [address, client] : cluster_->nodes()) {
    ConnectionMetrics& node = out.emplace_back(connection_metrics("node", *client, now));
    node.node = address;
    node.role = cluster_->role_of(address);
  }
  return out;
}

}  // namespace leasehold::detail
