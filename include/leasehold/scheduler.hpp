#pragma once
// A leader-only scheduler on Asio timers: every instance keeps the same timers,
// and at each tick only the leader of the group runs the work.
//
//   auto digest = lh::every(elector, "digest", 1s, [](const lh::Tick& t) { send_digest(t); });
//   auto nightly = lh::cron(elector, "reports", "30 2 * * MON-FRI", build_report,
//                           {.time_zone = lh::TimeZone::local});
//   ...
//   digest.cancel();  // or let the handle go out of scope
//
// Ticks are wall-clock instants that every instance computes alike: multiples
// of the interval since the Unix epoch for every(), the matching minutes for
// cron(). A timer that fires late (a busy or stalled process) runs the latest
// due tick once; earlier ones it overslept are dropped.
//
// Without once_per_tick the decision is local: the work runs if
// Group::is_leader() is true when the timer fires. Around a hand-over, a late
// timer can then run a tick that the previous leader already ran.
//
// With once_per_tick, the leader first claims the tick in Redis with one
// script: only if the group's lease key still holds this instance's id and the
// schedule's recorded last tick is older than this one does it record the
// tick and run the work. A tick is then run at most once across the fleet,
// whatever the timers do, at the cost of one script per tick on the leader.
// The record makes the misfire policy possible: ticks that fell into a
// leaderless gap (the leader died and its lease had not yet expired) are
// skipped, or with Misfire::run_once the new leader runs the most recent one
// once when it takes over, if it is no older than misfire_grace.
//
// The work runs on a strand of `executor` (default: the executor the elector
// was built on), never concurrently with itself, and is never cancelled: a
// guard checks leadership when a tick starts, not while the work runs (use
// run_while_leader for work that must stop with the term). Exceptions from the
// work are logged and the schedule goes on. The schedule ends when the elector
// stops or the handle is cancelled or destroyed. The elector, and the
// executor's execution context, must outlive the handle.

#include <leasehold/cron.hpp>
#include <leasehold/detail/tick_rule.hpp>
#include <leasehold/elector.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <concepts>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace leasehold {

/// One run of scheduled work.
struct Tick {
  std::chrono::system_clock::time_point scheduled;  ///< the tick's nominal instant
  bool missed = false;  ///< run late by the misfire policy, after a leaderless gap
};

/// What a new leader does with ticks that fell into a leaderless gap.
enum class Misfire {
  skip,      ///< nothing: they are lost
  run_once,  ///< run the most recent one once, if within misfire_grace (needs once_per_tick)
};

/// How a schedule made by every() or cron() runs its ticks. Aggregate: set
/// the fields you need with designated initializers.
struct ScheduleOptions {
  /// Claim each tick in Redis before running it, so that no tick runs twice
  /// across the fleet (one extra script per tick).
  bool once_per_tick = false;
  /// What a new leader does with ticks missed in a leaderless gap; anything
  /// but Misfire::skip needs once_per_tick.
  Misfire misfire = Misfire::skip;
  /// How old the missed tick may be for Misfire::run_once.
  std::chrono::milliseconds misfire_grace{std::chrono::minutes(1)};
  /// The schedule's name in the group's tick record (a field of the hash
  /// `<lease key>:ticks`). Default: the rule, e.g. "every 1000ms" or
  /// "cron 0 * * * * utc"; give two schedules with the same rule in one group
  /// different names.
  std::string name = {};
  /// The clock a cron expression is read in.
  TimeZone time_zone = TimeZone::utc;
  /// Where the work runs (on a strand of it). Default: the executor the
  /// elector was built on.
  std::optional<boost::asio::any_io_executor> executor = {};
};

namespace detail {
struct ScheduleState;
}

/// A running schedule. Cancelling (or destroying) it stops the timers; after
/// cancel() returns the work is not running and will not run again (unless
/// cancel() is called from inside the work, which then finishes normally).
class Schedule {
 public:
  /// No schedule: cancel() does nothing and active() is false.
  Schedule() = default;
  /// Made by every() and cron() around a running schedule; user code has no
  /// use for it.
  Schedule(detail::Internal, std::shared_ptr<detail::ScheduleState> state) : state_(std::move(state)) {}
  /// Takes over `other`'s schedule; `other` is left empty.
  Schedule(Schedule&&) noexcept = default;
  /// Cancels this handle's own schedule, then takes over `other`'s.
  Schedule& operator=(Schedule&& other) noexcept {
    if (this != &other) {
      cancel();
      state_ = std::move(other.state_);
    }
    return *this;
  }
  Schedule(const Schedule&) = delete;
  Schedule& operator=(const Schedule&) = delete;
  ~Schedule() { cancel(); }

  /// Stops the schedule. Idempotent; callable from any thread.
  void cancel() noexcept;
  /// True until cancel() (or until the elector stops).
  bool active() const noexcept;

 private:
  std::shared_ptr<detail::ScheduleState> state_;
};

namespace detail {

using TickWork = std::function<void(const Tick&)>;

/// Validates the options and starts the schedule. Throws std::invalid_argument.
Schedule start_schedule(Elector& elector, std::string_view group, std::unique_ptr<TickRule> rule, TickWork work,
                        ScheduleOptions options);

// Accepts f() or f(const Tick&); shared, so that a move-only f fits in a std::function.
template <typename F>
TickWork tick_work(F f) {
  static_assert(std::invocable<F&, const Tick&> || std::invocable<F&>,
                "scheduled work must be callable as f(const Tick&) or f()");
  auto shared = std::make_shared<F>(std::move(f));
  return [shared](const Tick& tick) {
    if constexpr (std::invocable<F&, const Tick&>) {
      (*shared)(tick);
    } else {
      (*shared)();
    }
  };
}

}  // namespace detail

/// Runs `f` at every multiple of `interval` since the Unix epoch, on the
/// leader of `group` only. Throws std::invalid_argument for a non-positive
/// interval, a bad group name or inconsistent options.
template <typename F>
Schedule every(Elector& elector, std::string_view group, std::chrono::milliseconds interval, F f,
               ScheduleOptions options = {}) {
  return detail::start_schedule(elector, group, detail::every_rule(interval), detail::tick_work(std::move(f)),
                                std::move(options));
}

/// Runs `f` at each minute the 5-field cron `expression` matches (in
/// options.time_zone), on the leader of `group` only. Throws CronError for a
/// bad expression, std::invalid_argument for a bad group or options.
template <typename F>
Schedule cron(Elector& elector, std::string_view group, std::string_view expression, F f,
              ScheduleOptions options = {}) {
  auto rule = detail::cron_rule(CronExpression::parse(expression), options.time_zone);
  return detail::start_schedule(elector, group, std::move(rule), detail::tick_work(std::move(f)),
                                std::move(options));
}

}  // namespace leasehold
