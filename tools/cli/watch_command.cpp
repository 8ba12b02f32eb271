// leasehold watch [GROUP...] [--duration TIME] [--interval TIME] [--json]
//
// Two connections, as an Elector uses them: one polls the leases every
// --interval, the other listens for release notices, which trigger a poll at
// once so that a handover shows up within milliseconds. The notice channels
// are subscribed by name (SUBSCRIBE; on a cluster SSUBSCRIBE on each group's
// shard); without GROUP operands, each poll's SCAN adds the channels of
// groups that appeared since.

#include "subcommands.hpp"
#include "connection.hpp"
#include "exit_code.hpp"
#include "lease_tracker.hpp"
#include "leases.hpp"
#include "notice_listener.hpp"
#include "text.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <optional>
#include <set>

namespace leasehold::cli {

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;

namespace {

constexpr std::chrono::milliseconds default_interval{500};
constexpr std::chrono::milliseconds min_interval{10};
// After a release notice, polls come every takeover_grace for this long.
constexpr std::chrono::milliseconds follow_notice{2000};

class Watch {
 public:
  Watch(const Context& ctx, Connection& commands, NoticeListener& notices, asio::any_io_executor executor,
        std::chrono::milliseconds interval)
      : ctx_(ctx), prefix_(ctx.line.prefix), layout_(layout_for(ctx.redis, prefix_)), commands_(commands),
        notices_(notices), interval_(interval), json_(ctx.line.json), wake_(executor),
        signals_(executor, SIGINT, SIGTERM) {
    notices_.on_message([this](std::string_view channel, std::string_view id) { on_notice(channel, id); });
  }

  /// Polls and reports until cancelled.
  asio::awaitable<void> run() {
    commands_.on_state([this](bool up, const Error& error) { connection_changed(up, error); });
    subscribe(ctx_.line.groups);
    for (;;) {
      co_await poll();
      if (cancelled(co_await asio::this_coro::cancellation_state)) break;
      if (!refresh_now_) {
        // A new holder held back is reported after a short grace at most,
        // and so is the takeover that follows a release notice.
        const bool soon = tracker_.holding_back() || LeaseTracker::Clock::now() < follow_until_;
        wake_.expires_after(soon ? std::min(interval_, LeaseTracker::takeover_grace) : interval_);
        co_await wake_.async_wait(asio::as_tuple(asio::use_awaitable));
        if (cancelled(co_await asio::this_coro::cancellation_state)) break;
      }
      refresh_now_ = false;
    }
  }

  /// Ends the watch at SIGINT or SIGTERM.
  asio::awaitable<void> until_signal() {
    co_await signals_.async_wait(asio::as_tuple(asio::use_awaitable));
    stopping_ = true;
  }

  /// Ends the watch after `duration`.
  asio::awaitable<void> sleep_for(std::chrono::milliseconds duration) {
    asio::steady_timer timer(co_await asio::this_coro::executor, duration);
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    stopping_ = true;
  }

  ~Watch() {
    commands_.on_state(nullptr);
    notices_.on_message(nullptr);
  }
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;

 private:
  static bool cancelled(const asio::cancellation_state& state) {
    return state.cancelled() != asio::cancellation_type::none;
  }

  asio::awaitable<void> poll() {
    if (!commands_.connected()) co_return;  // connection_changed() said so; the client reconnects
    try {
      std::vector<std::string> groups = ctx_.line.groups;
      if (groups.empty()) {
        groups = co_await scan_groups(commands_, prefix_);
        subscribe(groups);
      }
      const auto leases = co_await read_leases(commands_, prefix_, groups);
      report(tracker_.observe(leases, LeaseTracker::Clock::now()));
      tracker_.mark_baseline();
    } catch (const Failure&) {
      // The connection dropped mid-poll: connection_changed() reports it.
    }
  }

  // On a cluster the groups of one slot share a channel: each once.
  void subscribe(const std::vector<std::string>& groups) {
    std::set<std::string> channels;
    for (const auto& g : groups) channels.insert(layout_.release_channel(g));
    notices_.listen({channels.begin(), channels.end()});
  }

  void on_notice(std::string_view channel, std::string_view message) {
    const auto notice = layout_.read_release_notice(channel, message);
    if (!notice) return;
    report(tracker_.notice(notice->group, notice->releaser));
    // Whoever takes over shows up in the next polls: make one now, and keep
    // polling often for a while (the standby acquires a moment after the
    // notice), so that the takeover shows at once whatever --interval.
    refresh_now_ = true;
    follow_until_ = LeaseTracker::Clock::now() + follow_notice;
    wake_.cancel();
  }

  void connection_changed(bool up, const Error& error) {
    // Ending the watch cancels a poll in flight, which closes the connection:
    // not news.
    if (up == up_ || stopping_) return;
    up_ = up;
    if (up) {
      line("-", "connected", fmt::format("to {}", commands_.options().to_string()));
      refresh_now_ = true;
      wake_.cancel();
    } else {
      line("-", "disconnected", error.message());
    }
  }

  void report(const std::vector<WatchEvent>& events) {
    for (const WatchEvent& e : events) {
      if (json_) {
        emit(json_line(e));
      } else {
        line(e.group, std::string(to_string(e.kind)), describe(e));
      }
    }
  }

  static std::string describe(const WatchEvent& e) {
    using Kind = WatchEvent::Kind;
    const std::string holder = e.holder ? printable(*e.holder) : "-";
    const std::string previous = e.previous ? printable(*e.previous) : "-";
    const std::string term = fmt::format("token {}{}", e.token, e.ttl_ms ? ", ttl " + format_ttl(*e.ttl_ms) : "");
    switch (e.kind) {
      case Kind::held: return fmt::format("by {} ({})", holder, term);
      case Kind::vacant: return fmt::format("nobody holds it (token {})", e.token);
      case Kind::acquired: return fmt::format("by {} ({})", holder, term);
      case Kind::released: return fmt::format("by {} (release notice)", previous);
      case Kind::expired: return fmt::format("lease of {} ran out", previous);
      case Kind::deleted: return fmt::format("lease of {} removed before its expiry", previous);
      case Kind::taken_over: return fmt::format("by {} from {} ({})", holder, previous, term);
      case Kind::new_term: return fmt::format("by {} ({})", holder, term);
      case Kind::error: return printable(e.detail);
    }
    return {};
  }

  std::string json_line(const WatchEvent& e) const {
    std::string out = fmt::format("{{\"time\":{},\"group\":{},\"event\":{}", json_string(now()),
                                  json_string(e.group), json_string(to_string(e.kind)));
    out += fmt::format(",\"holder\":{}", e.holder ? json_string(*e.holder) : "null");
    out += fmt::format(",\"previous\":{}", e.previous ? json_string(*e.previous) : "null");
    out += fmt::format(",\"token\":{}", e.token);
    out += fmt::format(",\"ttl_ms\":{}", e.ttl_ms ? std::to_string(*e.ttl_ms) : "null");
    if (!e.detail.empty()) out += fmt::format(",\"detail\":{}", json_string(e.detail));
    return out + "}";
  }

  void line(std::string_view group, std::string_view event, std::string_view detail) {
    if (json_) {
      emit(fmt::format("{{\"time\":{},\"group\":null,\"event\":{},\"detail\":{}}}", json_string(now()),
                       json_string(event), json_string(detail)));
    } else {
      emit(fmt::format("{}  {}  {}  {}", now(), printable(group), event, detail));
    }
  }

  static std::string now() { return utc_timestamp(std::chrono::system_clock::now()); }

  static void emit(const std::string& text) {
    // One line at a time, flushed: watch usually feeds a pipe or a log.
    std::fputs((text + "\n").c_str(), stdout);
    std::fflush(stdout);
  }

  const Context& ctx_;
  const std::string prefix_;
  const KeyLayout layout_;
  Connection& commands_;
  NoticeListener& notices_;
  const std::chrono::milliseconds interval_;
  const bool json_;
  asio::steady_timer wake_;
  asio::signal_set signals_;  // caught from construction on, not only once awaited
  LeaseTracker tracker_;
  bool refresh_now_ = false;
  LeaseTracker::Clock::time_point follow_until_{};
  bool stopping_ = false;
  bool up_ = true;
};

}  // namespace

// GCC 12 sees a mismatched operator delete for this coroutine's frame (a
// false positive: Asio's frame allocator pairs them; see sentinel_resolver.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
asio::awaitable<int> run_watch(const Context& ctx) {
  require_valid_prefix(ctx.line.prefix);
  require_valid_groups(ctx, ctx.line.groups);
  std::optional<std::chrono::milliseconds> duration;
  if (const auto& d = ctx.line.duration) duration = parse_duration("--duration", *d);
  std::chrono::milliseconds interval = default_interval;
  if (const auto& i = ctx.line.interval) interval = std::max(parse_duration("--interval", *i), min_interval);

  const auto ex = co_await asio::this_coro::executor;
  Connection commands(ex, ctx.redis);
  co_await commands.connect();
  NoticeListener notices(commands);
  Watch watch(ctx, commands, notices, ex, interval);
  notices.start();
  // Whichever ends first (a signal, the duration) cancels the others.
  if (duration) {
    co_await (watch.run() || watch.until_signal() || watch.sleep_for(*duration));
  } else {
    co_await (watch.run() || watch.until_signal());
  }
  co_return exit_ok;
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace leasehold::cli
