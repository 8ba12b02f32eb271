#pragma once
// The subcommands. Each runs as a coroutine on the CLI's io_context and
// returns its exit code; failures throw Failure with theirs.

#include "command_line.hpp"

#include <leasehold/redis_options.hpp>

#include <boost/asio/awaitable.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace leasehold::cli {

struct Context {
  const CommandLine& line;
  RedisOptions redis;
};

boost::asio::awaitable<int> run_status(const Context& ctx);
boost::asio::awaitable<int> run_watch(const Context& ctx);
boost::asio::awaitable<int> run_step_down(const Context& ctx);
boost::asio::awaitable<int> run_evict(const Context& ctx);
boost::asio::awaitable<int> run_migrate_tokens(const Context& ctx);

/// The options of `url` (from `source`: "--url", "--to", ...), with the
/// CLI's client name. Throws Failure(exit_usage) naming the source.
RedisOptions parse_redis_url(const std::string& url, std::string_view source);

/// Throws Failure(exit_usage) unless every name is a valid group name for
/// the Redis of `ctx` (no braces on a cluster: the name is the hash tag).
void require_valid_groups(const Context& ctx, const std::vector<std::string>& groups);
/// The same for the Redis of `redis` and `prefix`.
void require_valid_groups(const RedisOptions& redis, const std::string& prefix,
                          const std::vector<std::string>& groups);
/// Throws Failure(exit_usage) unless `prefix` is a valid key prefix.
void require_valid_prefix(std::string_view prefix);

}  // namespace leasehold::cli
