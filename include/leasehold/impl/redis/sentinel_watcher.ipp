#include <leasehold/impl/redis/sentinel_watcher.hpp>

#include <leasehold/impl/redis/sentinel_rules.hpp>

#include <string>
#include <string_view>
#include <utility>

namespace leasehold::redis::detail {

SentinelWatcher::SentinelWatcher(asio::any_io_executor ex, const RedisOptions& options, SwitchHandler on_switch)
    : ex_(std::move(ex)), options_(options), on_switch_(std::move(on_switch)) {}

void SentinelWatcher::start() {
  if (!clients_.empty()) return;
  for (const SentinelAddress& sentinel : options_.sentinel->sentinels) {
    auto client = std::make_unique<Client>(ex_, sentinel_node_options(options_, sentinel), Role::subscriber);
    const std::string name = MasterAddress{sentinel.host, sentinel.port}.to_string();
    client->on_message([this, name](std::string_view, std::string_view payload) {
      if (auto master = parse_switch_master(payload, options_.sentinel->master_name)) on_switch_(*master, name);
    });
    client->subscribe({"+switch-master"});
    client->start();
    clients_.push_back(std::move(client));
  }
}

void SentinelWatcher::stop() { clients_.clear(); }  // each destructor stops its client and drops its handlers

}  // namespace leasehold::redis::detail
