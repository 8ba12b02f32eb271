#include <leasehold/detail/leader_work.hpp>

#include <leasehold/impl/lease/term_state.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace leasehold::detail {

namespace asio = boost::asio;
using asio::experimental::make_parallel_group;
using asio::experimental::wait_for_one;

namespace {

// Completes once `group` is no longer led here. Only runs while an acquire
// that should complete at once is in flight, so a short poll costs nothing.
asio::awaitable<void> until_not_leader(Group group) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  while (group.is_leader()) {
    timer.expires_after(std::chrono::milliseconds(5));
    auto [ec] = co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    if (ec) co_return;
  }
}

}  // namespace

// Counts one piece of guarded work in its term for as long as it lives, so
// that a draining step-down or stop waits for it. Empty when the term had
// ended already: then the work must not start at all. Not in an unnamed
// namespace: a coroutine frame of an external function holds one.
class TermWork {
 public:
  explicit TermWork(const Term& term) : state_(state_of(term)) {
    if (state_ && !state_->begin_work()) state_.reset();
  }
  ~TermWork() {
    if (state_) state_->end_work();
  }
  TermWork(const TermWork&) = delete;
  TermWork& operator=(const TermWork&) = delete;
  explicit operator bool() const noexcept { return static_cast<bool>(state_); }

 private:
  std::shared_ptr<TermState> state_;
};

asio::awaitable<bool> cancellation_requested() {
  auto state = co_await asio::this_coro::cancellation_state;
  co_return state.cancelled() != asio::cancellation_type::none;
}

asio::any_io_executor work_executor(const Elector& elector) {
  auto ex = elector.get_executor();
  if (const auto* strand = ex.target<asio::strand<asio::any_io_executor>>()) return strand->get_inner_executor();
  return ex;
}

asio::awaitable<Term> current_term(Elector& elector, Group group, std::chrono::steady_clock::time_point checked_at) {
  auto ex = co_await asio::this_coro::executor;
  // acquire() completes at once with the current term while this instance
  // leads. Should the term end first, it would wait for the next one: the
  // poll stops that wait.
  auto acquire = elector.acquire(group.name(), asio::bind_executor(ex, asio::deferred));
  auto poll = asio::co_spawn(ex, until_not_leader(group), asio::deferred);
  auto [order, ec, term, poll_error] =
      co_await make_parallel_group(std::move(acquire), std::move(poll)).async_wait(wait_for_one(), asio::use_awaitable);
  if (order[0] != 0 || ec || term.acquired_at() > checked_at) co_return Term{};
  co_return term;
}

asio::awaitable<bool> run_until_term_ends(asio::awaitable<void> work, Term term) {
  const TermWork counted(term);
  if (!counted) co_return false;  // the term ended before the work could begin
  auto ex = co_await asio::this_coro::executor;
  auto run = asio::co_spawn(ex, std::move(work), asio::deferred);
  auto end = term.async_wait_end(asio::bind_executor(ex, asio::deferred));
  // Whichever completes first cancels the other; both are waited for, so the
  // work never outlives this call.
  auto [order, work_error, end_ec, reason] =
      co_await make_parallel_group(std::move(run), std::move(end))
          .async_wait(wait_for_one(asio::cancellation_type::terminal), asio::use_awaitable);
  const bool finished = order[0] == 0;
  if (finished && work_error) {
    // An exception caused by the caller's own cancellation is not news.
    if (co_await cancellation_requested()) co_return false;
    std::rethrow_exception(work_error);
  }
  co_return finished;
}

asio::awaitable<error_code> run_while_leader_loop(Elector& elector, std::string group,
                                                  std::function<asio::awaitable<void>(Term)> task) {
  co_await asio::this_coro::throw_if_cancelled(false);
  for (;;) {
    auto [ec, term] = co_await elector.acquire(group, asio::as_tuple(asio::use_awaitable));
    if (ec) co_return ec;  // errc::stopped, operation_aborted, invalid_argument
    co_await run_until_term_ends(task(term), term);
    if (co_await cancellation_requested()) co_return asio::error::operation_aborted;
    // A task that returned while the term lasts runs again in the next term only.
    auto [end_ec, reason] = co_await term.async_wait_end(asio::as_tuple(asio::use_awaitable));
    if (end_ec) co_return end_ec;
  }
}

}  // namespace leasehold::detail
