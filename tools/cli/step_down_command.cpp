// leasehold step-down GROUP --as ID
//
// Runs the library's own release script (impl/lease/lease_scripts.ipp), so that the
// outcome is exactly what the holder's step_down() would do: delete only if
// the lease holds ID, and publish ID on the release channel so that standbys
// campaign at once.

#include "subcommands.hpp"
#include "connection.hpp"
#include "exit_code.hpp"
#include "leases.hpp"
#include "text.hpp"

#include <leasehold/impl/lease/lease_scripts.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fmt/format.h>

#include <cstdio>

namespace leasehold::cli {

namespace asio = boost::asio;

asio::awaitable<int> run_step_down(const Context& ctx) {
  const std::string& group = ctx.line.groups.at(0);
  require_valid_prefix(ctx.line.prefix);
  require_valid_groups(ctx, {group});
  const auto& id = ctx.line.as;
  if (!id || id->empty()) {
    throw Failure(exit_usage, "step-down needs --as ID: the instance id that holds the lease (see leasehold status)");
  }

  Connection redis(co_await asio::this_coro::executor, ctx.redis);
  co_await redis.connect();
  const KeyLayout layout = layout_for(ctx.redis, ctx.line.prefix);
  const std::string key = layout.lease_key(group);
  // No incarnation: the operator acts for whichever process holds the lease under that id.
  std::vector<std::string> keys{key, layout.holder_key(group)};
  std::vector<std::string> args{*id, layout.release_channel(group), ""};
  // A cluster's release notice goes out with SPUBLISH on the group's shard.
  const auto notices = detail::notices_for(redis.is_cluster(), layout.form());
  const redis::Reply reply =
      co_await redis.eval(detail::release_script(notices), std::move(keys), std::move(args));
  check_reply(reply, "step-down");
  if (reply.is_integer() && reply.integer == 1) {
    std::fputs(fmt::format("released {} (held by {})\n", printable(key), printable(*id)).c_str(), stdout);
    co_return exit_ok;
  }

  // Say why not: the operator probably copied a stale or wrong id.
  const std::vector<std::string> groups{group};
  const auto now = co_await read_leases(redis, ctx.line.prefix, groups);
  const LeaseInfo& lease = now.at(0);
  if (lease.held()) {
    std::fputs(fmt::format("not released: {} is held by {}, not {}\n", printable(key), printable(*lease.holder),
                           printable(*id))
                   .c_str(),
               stdout);
  } else {
    std::fputs(fmt::format("not released: {} is not held\n", printable(key)).c_str(), stdout);
  }
  co_return exit_nothing;
}

}  // namespace leasehold::cli
