#pragma once
// Reading leases from Redis the way an operator wants to see them: one
// pipelined round trip for any number of groups (on a cluster, one per
// group's master, all at once), and discovery of the groups under a prefix
// with SCAN (on a cluster, on every master).

#include "connection.hpp"

#include <leasehold/key_layout.hpp>

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace leasehold::cli {

/// One group's lease as Redis holds it now.
struct LeaseInfo {
  std::string group;
  std::string key;                     ///< the lease key (prefix + group; prefix + {group} on a cluster)
  std::optional<std::string> holder;   ///< nullopt: nobody holds the lease
  std::int64_t ttl_ms = 0;             ///< remaining TTL when held; -1: the key has no TTL
  std::int64_t token = 0;              ///< the group's fencing counter; 0 before the first term
  std::string error;                   ///< a server error reading this group (WRONGTYPE, ...)
  /// > 0: nobody holds the lease and nobody may take it for this many ms
  /// yet (the empty-restart guard: the group's fencing counter was missing).
  std::int64_t guard_ms = 0;

  bool held() const noexcept { return holder.has_value(); }
  friend bool operator==(const LeaseInfo&, const LeaseInfo&) = default;
};

/// Reads the leases of `groups` in pipelined requests, in the given order.
/// Throws Failure(exit_unavailable) when a request fails; server errors of
/// single groups land in LeaseInfo::error.
boost::asio::awaitable<std::vector<LeaseInfo>> read_leases(Connection& redis, std::string_view prefix,
                                                           const std::vector<std::string>& groups);

/// Every group under `prefix`, sorted: each lease key, and each fencing
/// counter (a group that has had leaders but has none now). SCAN, so it does
/// not block the server; a key created or deleted meanwhile may or may not be
/// seen. Throws Failure(exit_unavailable) on errors.
boost::asio::awaitable<std::vector<std::string>> scan_groups(Connection& redis, std::string_view prefix);

/// `text` with the glob characters of SCAN MATCH escaped.
std::string escape_glob(std::string_view text);

}  // namespace leasehold::cli
