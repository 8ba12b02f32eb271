#include <leasehold/detail/leader_work.hpp>
#include <leasehold/impl/work/tick_record.hpp>
#include <leasehold/log.hpp>
#include <leasehold/scheduler.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/system_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fmt/format.h>

#include <atomic>
#include <mutex>
#include <stdexcept>

namespace leasehold::detail {

namespace asio = boost::asio;
using std::chrono::system_clock;

struct ScheduleState {
  ScheduleState(Elector& e, Group g, std::unique_ptr<TickRule> r, TickWork w, ScheduleOptions o)
      : elector(e),
        group(std::move(g)),
        rule(std::move(r)),
        work(std::move(w)),
        options(std::move(o)),
        name(options.name.empty() ? rule->name() : options.name),
        strand(asio::make_strand(options.executor.value_or(work_executor(e)))) {}

  Elector& elector;  // touched only while not cancelled
  const Group group;
  const std::unique_ptr<const TickRule> rule;
  const TickWork work;
  const ScheduleOptions options;
  const std::string name;  // the field in the tick record
  const asio::strand<asio::any_io_executor> strand;

  std::recursive_mutex running;  // held while the work runs, so that cancel() can wait for it
  std::atomic<bool> cancelled{false};
  std::atomic<bool> ended{false};
  asio::cancellation_signal stop;  // emitted on the strand
};

namespace {

using StatePtr = std::shared_ptr<ScheduleState>;

std::string describe(const ScheduleState& s, SysTime tick) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(tick.time_since_epoch()).count();
  return fmt::format("schedule \"{}\" of group \"{}\", tick {}", s.name, s.group.name(), ms);
}

void run_work(ScheduleState& s, const Tick& tick) {
  std::lock_guard lock(s.running);
  if (s.cancelled) return;
  try {
    s.work(tick);
  } catch (const std::exception& e) {
    log(LogLevel::error, fmt::format("leasehold: {}: the work threw: {}", describe(s, tick.scheduled), e.what()));
  } catch (...) {
    log(LogLevel::error, fmt::format("leasehold: {}: the work threw", describe(s, tick.scheduled)));
  }
}

// Runs one tick if this instance may: the local view first (free), then, with
// once_per_tick, the claim in Redis.
asio::awaitable<void> fire(StatePtr s, SysTime tick, bool missed) {
  if (s->cancelled || !s->group.is_leader()) co_return;
  if (s->options.once_per_tick) {
    const TickClaim claim = co_await claim_tick(s->elector, s->group.name(), s->name, tick, missed);
    if (claim != TickClaim::run) {
      log(LogLevel::debug, fmt::format("leasehold: {}: not run ({})", describe(*s, tick), to_string(claim)));
      co_return;
    }
    if (!s->group.is_leader()) {
      log(LogLevel::warning,
          fmt::format("leasehold: {}: claimed, but leadership ended before it ran; skipped", describe(*s, tick)));
      co_return;
    }
  }
  run_work(*s, Tick{tick, missed});
}

asio::awaitable<void> tick_loop(StatePtr s) {
  co_await asio::this_coro::throw_if_cancelled(false);
  asio::system_timer timer(s->strand);
  SysTime next = s->rule->next_after(system_clock::now());
  while (!s->cancelled && !(co_await cancellation_requested())) {
    timer.expires_at(next);
    auto [ec] = co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    if (ec || s->cancelled) co_return;
    // A late timer runs the latest due tick only.
    const SysTime tick = s->rule->latest_in(next, system_clock::now()).value_or(next);
    next = s->rule->next_after(tick);
    co_await fire(s, tick, false);
  }
}

// Follows the terms of the group: applies the misfire policy at each
// takeover, and ends the schedule when the elector stops.
asio::awaitable<void> takeover_loop(StatePtr s) {
  co_await asio::this_coro::throw_if_cancelled(false);
  while (!s->cancelled && !(co_await cancellation_requested())) {
    auto [ec, term] = co_await s->elector.acquire(s->group.name(), asio::as_tuple(asio::use_awaitable));
    if (ec || s->cancelled) co_return;
    if (s->options.misfire == Misfire::run_once) {
      const auto now = system_clock::now();
      if (auto latest = s->rule->latest_in(now - s->options.misfire_grace, now)) co_await fire(s, *latest, true);
    }
    if (co_await cancellation_requested()) co_return;
    auto [end_ec, reason] = co_await term.async_wait_end(asio::as_tuple(asio::use_awaitable));
    if (end_ec) co_return;
  }
}

asio::awaitable<void> run_schedule(StatePtr s) {
  co_await asio::this_coro::throw_if_cancelled(false);
  auto ex = co_await asio::this_coro::executor;
  auto ticks = asio::co_spawn(ex, tick_loop(s), asio::deferred);
  auto takeovers = asio::co_spawn(ex, takeover_loop(s), asio::deferred);
  auto [order, tick_error, takeover_error] =
      co_await asio::experimental::make_parallel_group(std::move(ticks), std::move(takeovers))
          .async_wait(asio::experimental::wait_for_one(asio::cancellation_type::terminal), asio::use_awaitable);
  for (const auto& e : {tick_error, takeover_error}) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace

Schedule start_schedule(Elector& elector, std::string_view group, std::unique_ptr<TickRule> rule, TickWork work,
                        ScheduleOptions options) {
  if (!work) throw std::invalid_argument("schedule: the work is empty");
  if (options.misfire == Misfire::run_once && !options.once_per_tick) {
    throw std::invalid_argument(
        "ScheduleOptions::misfire = run_once needs once_per_tick = true (the record of the last run tick)");
  }
  if (options.misfire_grace <= std::chrono::milliseconds::zero()) {
    throw std::invalid_argument("ScheduleOptions::misfire_grace must be positive");
  }
  auto state = std::make_shared<ScheduleState>(elector, elector.group(group), std::move(rule), std::move(work),
                                               std::move(options));
  asio::co_spawn(state->strand, run_schedule(state),
                 asio::bind_cancellation_slot(state->stop.slot(), [state](std::exception_ptr e) {
                   state->ended = true;
                   if (!e) return;
                   try {
                     std::rethrow_exception(e);
                   } catch (const std::exception& x) {
                     log(LogLevel::error, fmt::format("leasehold: schedule \"{}\" of group \"{}\" ended: {}",
                                                      state->name, state->group.name(), x.what()));
                   } catch (...) {
                     log(LogLevel::error, fmt::format("leasehold: schedule \"{}\" ended by an exception", state->name));
                   }
                 }));
  return Schedule(detail::Internal{}, std::move(state));
}

}  // namespace leasehold::detail

namespace leasehold {

void Schedule::cancel() noexcept {
  auto s = std::exchange(state_, nullptr);
  if (!s) return;
  {
    std::lock_guard lock(s->running);  // waits for a run in progress on another thread
    s->cancelled = true;
  }
  boost::asio::post(s->strand, [s] { s->stop.emit(boost::asio::cancellation_type::terminal); });
}

bool Schedule::active() const noexcept { return state_ && !state_->cancelled && !state_->ended; }

}  // namespace leasehold
