#include <leasehold/impl/transport/command_route.hpp>


namespace leasehold::detail {

CommandRoute::CommandRoute(boost::asio::any_io_executor executor, RedisOptions options) {
  if (options.cluster) {
    cluster_.emplace(std::move(executor), std::move(options));
  } else {
    server_.emplace(std::move(executor), std::move(options));
  }
}

const RedisOptions& CommandRoute::options() const noexcept { return server_ ? server_->options() : cluster_->options(); }

void CommandRoute::preload(const redis::Script& script) {
  if (server_) return server_->preload(script);
  cluster_->preload(script);
}

void CommandRoute::on_state(redis::Client::StateHandler handler) {
  if (server_) return server_->on_state(std::move(handler));
  cluster_->on_state(std::move(handler));
}

void CommandRoute::start() {
  if (server_) return server_->start();
  cluster_->start();
}

void CommandRoute::stop() {
  if (server_) return server_->stop();
  cluster_->stop();
}

std::optional<std::chrono::steady_clock::time_point> CommandRoute::last_reply_at() const noexcept {
  return server_ ? server_->last_reply_at() : cluster_->last_reply_at();
}

}  // namespace leasehold::detail
