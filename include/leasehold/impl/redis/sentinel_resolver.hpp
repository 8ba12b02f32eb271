#pragma once
// Finding the master through the sentinels: one round of the Sentinel client
// spec's resolution, on its own short connections (SentinelWatcher follows
// their announcements).

#include <leasehold/impl/redis/sentinel_rules.hpp>
#include <leasehold/impl/redis/stream.hpp>

#include <leasehold/config.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <vector>
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

}  // namespace leasehold::redis::detail
