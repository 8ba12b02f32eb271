// leasehold evict GROUP --force [--yes]
//
// An unconditional DEL of the lease key, for a lease whose holder is gone or
// a key that holds something other than a lease. It sends no release notice
// on purpose: standbys then campaign when they had planned to (usually at the
// old lease's expiry), and a live holder learns of the eviction at its next
// renewal, normally before that. A notice would wake the standbys at once,
// while the old holder still believes it leads.

#include "subcommands.hpp"
#include "confirm.hpp"
#include "connection.hpp"
#include "exit_code.hpp"
#include "leases.hpp"
#include "text.hpp"

#include <boost/asio/this_coro.hpp>

#include <fmt/format.h>

#include <cstdio>

namespace leasehold::cli {

namespace asio = boost::asio;

namespace {

std::string describe(const LeaseInfo& lease) {
  if (!lease.error.empty()) return fmt::format("{} (not a lease: {})", lease.key, lease.error);
  return fmt::format("{} held by {} (ttl {}, token {})", lease.key, *lease.holder, format_ttl(lease.ttl_ms),
                     lease.token);
}

}  // namespace

asio::awaitable<int> run_evict(const Context& ctx) {
  const std::string& group = ctx.line.groups.at(0);
  require_valid_prefix(ctx.line.prefix);
  require_valid_groups(ctx, {group});
  if (!ctx.line.force) {
    throw Failure(exit_usage,
                  "evict deletes the lease whoever holds it and needs --force "
                  "(to release it as its holder would, use step-down GROUP --as ID)");
  }
  const bool confirmed = ctx.line.yes;
  if (!confirmed && !can_ask()) {
    throw Failure(exit_usage, "evict: stdin is not a terminal to confirm on; pass --yes");
  }

  Connection redis(co_await asio::this_coro::executor, ctx.redis);
  co_await redis.connect();
  // Named rather than braced inside co_await: g++ 12 rejects a braced list
  // there ("array used as initializer").
  const std::vector<std::string> groups{group};
  const LeaseInfo lease = (co_await read_leases(redis, ctx.line.prefix, groups)).at(0);
  if (!lease.held() && lease.error.empty()) {
    std::fputs(fmt::format("nothing to evict: {} is not held\n", printable(lease.key)).c_str(), stdout);
    co_return exit_nothing;
  }
  if (!confirmed && !ask(fmt::format("Delete {}?", printable(describe(lease))))) {
    std::fputs("not evicted\n", stdout);
    co_return exit_nothing;
  }

  redis::Request del{"DEL", lease.key};
  const auto replies = co_await redis.exec(std::move(del), lease.key);
  check_reply(replies.at(0), "evict");
  if (replies.at(0).integer == 0) {
    std::fputs(fmt::format("nothing to evict: {} is gone already\n", printable(lease.key)).c_str(), stdout);
    co_return exit_nothing;
  }
  std::fputs(fmt::format("evicted {}\n", printable(describe(lease))).c_str(), stdout);
  co_return exit_ok;
}

}  // namespace leasehold::cli
