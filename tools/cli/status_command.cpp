// leasehold status [GROUP...] [--json]

#include "subcommands.hpp"
#include "connection.hpp"
#include "exit_code.hpp"
#include "leases.hpp"
#include "text.hpp"

#include <boost/asio/this_coro.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

namespace leasehold::cli {

namespace asio = boost::asio;

namespace {

std::string render_table(const std::vector<LeaseInfo>& leases) {
  std::vector<std::vector<std::string>> rows{{"GROUP", "HOLDER", "TTL", "TOKEN"}};
  for (const auto& l : leases) {
    if (!l.error.empty()) {
      rows.push_back({printable(l.group), "error: " + printable(l.error), "-", "-"});
    } else if (l.held()) {
      rows.push_back({printable(l.group), printable(*l.holder), format_ttl(l.ttl_ms), std::to_string(l.token)});
    } else if (l.guard_ms > 0) {
      rows.push_back({printable(l.group), "- (empty-restart guard)", format_ttl(l.guard_ms), std::to_string(l.token)});
    } else {
      rows.push_back({printable(l.group), "-", "-", std::to_string(l.token)});
    }
  }
  return aligned_table(rows);
}

std::string render_json(std::string_view prefix, const std::vector<LeaseInfo>& leases) {
  std::string out = fmt::format("{{\"prefix\":{},\"groups\":[", json_string(prefix));
  for (std::size_t i = 0; i < leases.size(); ++i) {
    const LeaseInfo& l = leases[i];
    if (i != 0) out += ',';
    out += fmt::format("{{\"group\":{},\"key\":{},\"held\":{},\"holder\":{},\"ttl_ms\":{},\"token\":{}",
                       json_string(l.group), json_string(l.key), l.held(),
                       l.held() ? json_string(*l.holder) : "null", l.held() ? std::to_string(l.ttl_ms) : "null",
                       l.token);
    if (l.guard_ms > 0) out += fmt::format(",\"guard_ms\":{}", l.guard_ms);
    if (!l.error.empty()) out += fmt::format(",\"error\":{}", json_string(l.error));
    out += '}';
  }
  out += "]}\n";
  return out;
}

}  // namespace

asio::awaitable<int> run_status(const Context& ctx) {
  const std::string& prefix = ctx.line.prefix;
  require_valid_prefix(prefix);
  require_valid_groups(ctx, ctx.line.groups);

  Connection redis(co_await asio::this_coro::executor, ctx.redis);
  co_await redis.connect();
  std::vector<std::string> groups = ctx.line.groups;
  if (groups.empty()) groups = co_await scan_groups(redis, prefix);
  const std::vector<LeaseInfo> leases = co_await read_leases(redis, prefix, groups);
  redis.stop();

  const bool json = ctx.line.json;
  if (json) {
    std::fputs(render_json(prefix, leases).c_str(), stdout);
  } else if (leases.empty()) {
    std::fputs(fmt::format("no groups under prefix \"{}\"\n", printable(prefix)).c_str(), stdout);
  } else {
    std::fputs(render_table(leases).c_str(), stdout);
  }

  if (std::any_of(leases.begin(), leases.end(), [](const LeaseInfo& l) { return !l.error.empty(); })) {
    for (const auto& l : leases) {
      if (!l.error.empty()) {
        std::fputs(fmt::format("leasehold: reading {}: {}\n", printable(l.key), printable(l.error)).c_str(), stderr);
      }
    }
    co_return exit_unavailable;
  }
  const bool all_held =
      !leases.empty() && std::all_of(leases.begin(), leases.end(), [](const LeaseInfo& l) { return l.held(); });
  co_return all_held ? exit_ok : exit_nothing;
}

}  // namespace leasehold::cli
