#pragma once
// Finding the master through the sentinels (one round of the Sentinel client
// spec's resolution) and following their +switch-master announcements.

#include "sentinel_rules.hpp"
#include "stream.hpp"

#include <leasehold/redis/client.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace leasehold::redis::detail {

/// Asks the sentinels in turn, each within SentinelOptions::query_timeout,
/// for the master's address; the one that answered is asked first next time.
class SentinelResolver {
 public:
  struct Resolution {
    Error error;            ///< set when no sentinel named the master (see ResolveRound)
    MasterAddress address;  ///< the master, when error is empty
    std::string sentinel;   ///< the sentinel that named it
  };

  /// `options` (with a sentinel section) must outlive the resolver. Throws
  /// std::invalid_argument when the sentinels' TLS files cannot be loaded.
  explicit SentinelResolver(const RedisOptions& options);

  /// One round over every sentinel. Cancellable (terminal cancellation).
  asio::awaitable<Resolution> resolve(const asio::any_io_executor& ex);
  /// The address of the last resolve() failed the ROLE check: its sentinel
  /// is asked last next time.
  void distrust_last_answer() { roster_.distrust_first(); }

 private:
  asio::awaitable<SentinelAnswer> ask(const asio::any_io_executor& ex, const SentinelAddress& sentinel);
  asio::awaitable<SentinelAnswer> exchange(const asio::any_io_executor& ex, const RedisOptions& node,
                                           std::optional<Stream>& stream);

  const RedisOptions& options_;
  SentinelRoster roster_;
#if LEASEHOLD_HAS_TLS
  std::optional<asio::ssl::context> tls_context_;
#endif
};

/// Keeps a subscription to +switch-master on one sentinel at a time, moving
/// to the next one when its connection fails, and reports announcements
/// about our master. A speed-up only: the client checks any address it is
/// given with ROLE, and resolves again on every reconnect anyway.
class SentinelWatcher : public std::enable_shared_from_this<SentinelWatcher> {
 public:
  /// Called on the executor with the announced master and the sentinel that announced it.
  using SwitchHandler = std::function<void(const MasterAddress& master, const std::string& sentinel)>;

  /// `options` (with a sentinel section) must outlive the watcher.
  static std::shared_ptr<SentinelWatcher> make(asio::any_io_executor ex, const RedisOptions& options,
                                               SwitchHandler on_switch);
  SentinelWatcher(asio::any_io_executor ex, const RedisOptions& options, SwitchHandler on_switch);

  void start();
  void stop();

 private:
  void watch(std::size_t index);
  void rotate_later();

  asio::any_io_executor ex_;
  const RedisOptions& options_;
  SwitchHandler on_switch_;
  std::size_t index_ = 0;
  std::unique_ptr<Client> client_;
  asio::steady_timer rotate_timer_;
  bool rotating_ = false;
};

}  // namespace leasehold::redis::detail
