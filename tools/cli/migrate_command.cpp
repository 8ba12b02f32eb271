// leasehold migrate-tokens --from URL --to URL [GROUP...] [--dry-run]
//
// A fleet that moves to another deployment or key layout gets new key names
// (leader:reports becomes leader:{reports}), so its fencing counters would
// start at 1 again and a store fenced by the token would refuse every new
// leader. This copies each group's counter, and its once-per-tick record,
// to the new keys, never lowering what is there (token_copy.hpp), so that
// the first term on the new keys outranks every term on the old ones. It
// reads the source and writes the target one group at a time; a second run
// changes nothing. docs/migration.md gives the procedure around it.

#include "subcommands.hpp"
#include "connection.hpp"
#include "exit_code.hpp"
#include "leases.hpp"
#include "text.hpp"
#include "token_copy.hpp"

#include <boost/asio/this_coro.hpp>

#include <fmt/format.h>

#include <cstdio>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace leasehold::cli {

namespace asio = boost::asio;

namespace {

using Ticks = std::vector<std::pair<std::string, std::int64_t>>;

// One end of the migration: its URL's options, its layout and its name on
// the command line, which every message about it starts with.
struct Side {
  std::string flag;  // "--from" or "--to"
  RedisOptions redis;
  KeyLayout layout;
};

Side side(std::string flag, const std::optional<std::string>& url, const std::string& prefix) {
  if (!url || url->empty()) {
    throw Failure(exit_usage, "migrate-tokens needs --from URL (where the fleet's keys are now) and --to URL "
                              "(where the new fleet will campaign)");
  }
  RedisOptions redis = parse_redis_url(*url, flag);
  KeyLayout layout = layout_for(redis, prefix);
  return {std::move(flag), std::move(redis), std::move(layout)};
}

// What one side holds for a group.
struct History {
  std::optional<std::int64_t> token;
  Ticks ticks;
};

void refuse_error(const redis::Reply& reply, const Side& at, const std::string& key) {
  check_reply(reply, fmt::format("{}: reading {}", at.flag, printable(key)));
}

// The group's counter and tick record on `at`, in one round trip.
asio::awaitable<History> read_history(Connection& redis, const Side& at, const std::string& group) {
  const std::string token_key = at.layout.token_key(group);
  const std::string tick_key = at.layout.tick_record_key(group);
  redis::Request request;
  request.push({"GET", token_key}).push({"HGETALL", tick_key});
  const auto replies = co_await redis.exec(std::move(request), token_key);
  refuse_error(replies.at(0), at, token_key);
  refuse_error(replies.at(1), at, tick_key);
  History history;
  if (replies[0].is_string()) {
    history.token = parse_counter(replies[0].str);
    if (!history.token) {
      throw Failure(exit_unavailable, fmt::format("{}: {} holds \"{}\", not a fencing counter", at.flag,
                                                  printable(token_key), printable(replies[0].str)));
    }
  }
  auto ticks = parse_ticks(replies[1]);
  if (!ticks) {
    throw Failure(exit_unavailable,
                  fmt::format("{}: {} is not a once-per-tick record ({})", at.flag, printable(tick_key),
                              printable(replies[1].debug_string())));
  }
  history.ticks = std::move(*ticks);
  co_return history;
}

// What happened to one group's counter and ticks.
struct Result {
  CopyOutcome outcome = CopyOutcome::missing;
  std::optional<std::int64_t> before;  // the target's counter before (copied) or its value (kept)
  std::size_t ticks_raised = 0;
  std::size_t ticks_kept = 0;
};

// Writes the source's history on the target, each key in one script that
// never lowers what it finds.
asio::awaitable<Result> copy_history(Connection& target, const Side& to, const std::string& group,
                                     const History& source) {
  Result result;
  if (!source.token) co_return result;
  const std::string token_key = to.layout.token_key(group);
  const std::string what = fmt::format("{}: writing {}", to.flag, printable(token_key));
  std::vector<std::string> token_keys{token_key};
  std::vector<std::string> token_args{std::to_string(*source.token)};
  const redis::Reply reply = co_await target.eval(raise_counter_script(), std::move(token_keys), std::move(token_args));
  check_reply(reply, what);
  if (!reply.is_array() || reply.elements.size() != 2 || !reply.elements[0].is_integer()) {
    throw Failure(exit_unavailable, fmt::format("{}: unexpected reply {}", what, reply.debug_string()));
  }
  result.outcome = reply.elements[0].integer == 1 ? CopyOutcome::copied : CopyOutcome::kept;
  result.before = parse_counter(reply.elements[1].str);
  if (!source.ticks.empty()) {
    const std::string tick_key = to.layout.tick_record_key(group);
    std::vector<std::string> tick_keys{tick_key};
    std::vector<std::string> tick_args;
    for (const auto& [schedule, tick] : source.ticks) tick_args.insert(tick_args.end(), {schedule, std::to_string(tick)});
    const redis::Reply raised = co_await target.eval(raise_ticks_script(), std::move(tick_keys), std::move(tick_args));
    check_reply(raised, fmt::format("{}: writing {}", to.flag, printable(tick_key)));
    result.ticks_raised = raised.is_integer() ? static_cast<std::size_t>(raised.integer) : 0;
    result.ticks_kept = source.ticks.size() - result.ticks_raised;
  }
  co_return result;
}

// The same decisions, read from the target and written nowhere.
asio::awaitable<Result> plan_history(Connection& target, const Side& to, const std::string& group,
                                     const History& source) {
  Result result;
  if (!source.token) co_return result;
  const History there = co_await read_history(target, to, group);
  result.outcome = plan_copy(source.token, there.token);
  result.before = there.token;
  std::tie(result.ticks_raised, result.ticks_kept) = plan_ticks(source.ticks, there.ticks);
  co_return result;
}

std::string describe(const std::string& group, const Side& from, const Side& to, const History& source,
                     const Result& r, bool dry_run) {
  const std::string name = printable(group);
  if (r.outcome == CopyOutcome::missing) {
    return fmt::format("{}: missing: no fencing counter at {} on {}; nothing to copy", name,
                       printable(from.layout.token_key(group)), from.flag);
  }
  const std::string key = printable(to.layout.token_key(group));
  std::string line;
  if (r.outcome == CopyOutcome::copied) {
    line = fmt::format("{}: {} token {} to {} (it had {})", name, dry_run ? "would copy" : "copied", *source.token,
                       key, r.before ? std::to_string(*r.before) : "none");
  } else {
    line = fmt::format("{}: {} {} at {}: already >= {}, never lowered", name, dry_run ? "would keep" : "kept",
                       r.before ? std::to_string(*r.before) : "?", key, *source.token);
  }
  if (!source.ticks.empty()) {
    line += fmt::format("; once-per-tick record: {} schedule(s) {}, {} kept", r.ticks_raised,
                        dry_run ? "to raise" : "raised", r.ticks_kept);
  }
  return line;
}

// Connects, naming the side in the error (both may be one server).
asio::awaitable<void> connect(Connection& redis, const Side& at) {
  try {
    co_await redis.connect();
  } catch (const Failure& f) {
    throw Failure(f.code(), fmt::format("{}: {}", at.flag, f.what()));
  }
}

}  // namespace

// GCC 12 sees a mismatched operator delete for this coroutine's frame (a
// false positive: Asio's frame allocator pairs them; see sentinel_resolver.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
asio::awaitable<int> run_migrate_tokens(const Context& ctx) {
  const std::string& prefix = ctx.line.prefix;
  if (ctx.line.url_source == "--url") {
    throw Failure(exit_usage, "migrate-tokens reads --from and writes --to; --url is not used (drop it)");
  }
  require_valid_prefix(prefix);
  const Side from = side("--from", ctx.line.from, prefix);
  const Side to = side("--to", ctx.line.to, prefix);
  if (from.redis.to_string() == to.redis.to_string() && from.layout.form() == to.layout.form()) {
    throw Failure(exit_usage, "--from and --to name the same keys (one server, one key layout): nothing to migrate; "
                              "add key_layout=hash_tagged to --to to move to the hash-tagged layout");
  }
  require_valid_groups(from.redis, prefix, ctx.line.groups);
  require_valid_groups(to.redis, prefix, ctx.line.groups);

  const auto executor = co_await asio::this_coro::executor;
  Connection source(executor, from.redis);
  co_await connect(source, from);
  Connection target(executor, to.redis);
  co_await connect(target, to);

  std::vector<std::string> groups = ctx.line.groups;
  if (groups.empty()) {
    groups = co_await scan_groups(source, prefix);
    // On one server the target's own keys (leader:{reports} after a first
    // run) read as plain groups named "{reports}": they are not the source's.
    if (from.redis.to_string() == to.redis.to_string()) {
      std::erase_if(groups, [&](const std::string& g) { return to.layout.group_of_key(from.layout.lease_key(g)).has_value(); });
    }
    // A group found there may still have a name the target's layout refuses.
    require_valid_groups(to.redis, prefix, groups);
  }
  if (groups.empty()) {
    std::fputs(fmt::format("no groups under prefix \"{}\" on {}\n", printable(prefix), from.flag).c_str(), stdout);
    co_return exit_nothing;
  }

  const bool dry_run = ctx.line.dry_run;
  std::size_t copied = 0, kept = 0, missing = 0;
  for (const std::string& group : groups) {
    const History history = co_await read_history(source, from, group);
    // Not a conditional expression: GCC 12 miscompiles co_await in one.
    Result result;
    if (dry_run) {
      result = co_await plan_history(target, to, group, history);
    } else {
      result = co_await copy_history(target, to, group, history);
    }
    copied += result.outcome == CopyOutcome::copied ? 1 : 0;
    kept += result.outcome == CopyOutcome::kept ? 1 : 0;
    missing += result.outcome == CopyOutcome::missing ? 1 : 0;
    std::fputs((describe(group, from, to, history, result, dry_run) + "\n").c_str(), stdout);
  }
  source.stop();
  target.stop();
  const std::string summary =
      dry_run ? fmt::format("{} group(s): {} to copy, {} to keep, {} missing (dry run: nothing written)\n",
                            groups.size(), copied, kept, missing)
              : fmt::format("{} group(s): {} copied, {} kept, {} missing\n", groups.size(), copied, kept, missing);
  std::fputs(summary.c_str(), stdout);
  co_return missing == 0 ? exit_ok : exit_nothing;
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace leasehold::cli
