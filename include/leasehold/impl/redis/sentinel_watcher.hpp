#pragma once
// Following the sentinels' +switch-master announcements, each through a
// subscriber redis::Client of its own.

#include <leasehold/redis/client.hpp>
#include <leasehold/redis_options.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace leasehold::redis::detail {

/// Keeps a subscription to +switch-master on every sentinel and reports
/// announcements about our master. Every sentinel, because each announces
/// when it adopts the new configuration, and the one that ran the failover
/// only at its end (about 1 s after the others, measured): the first
/// announcement wins. A speed-up only: the client checks any address it is
/// given with ROLE, and resolves again on every reconnect anyway. Each
/// subscription reconnects on its own with the client's backoff.
class SentinelWatcher {
 public:
  /// Called on the executor with the announced master and the sentinel that announced it.
  using SwitchHandler = std::function<void(const MasterAddress& master, const std::string& sentinel)>;

  /// `options` (with a sentinel section) must outlive the watcher.
  SentinelWatcher(asio::any_io_executor ex, const RedisOptions& options, SwitchHandler on_switch);

  void start();
  void stop();

 private:
  asio::any_io_executor ex_;
  const RedisOptions& options_;
  SwitchHandler on_switch_;
  std::vector<std::unique_ptr<Client>> clients_;  // one per sentinel
};

}  // namespace leasehold::redis::detail
