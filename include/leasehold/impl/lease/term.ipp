#include <leasehold/impl/lease/term_state.hpp>

#include <leasehold/impl/base/complete.hpp>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/system_executor.hpp>

#include <algorithm>

namespace leasehold {
namespace detail {

void TermState::end(RevokeReason why) {
  std::vector<std::pair<std::uint64_t, TermEndHandler>> to_complete;
  {
    std::lock_guard lock(mutex);
    reason = why;
    deadline_ns.store(0, std::memory_order_release);
    ended.store(true, std::memory_order_release);
    to_complete.swap(waiters);
  }
  for (auto& [id, handler] : to_complete) complete_later(executor, std::move(handler), error_code{}, why);
}

bool TermState::begin_work() {
  std::lock_guard lock(mutex);
  if (ended.load(std::memory_order_relaxed)) return false;
  work.fetch_add(1, std::memory_order_acq_rel);
  return true;
}

void TermState::end_work() {
  bool drained = false;
  {
    // Under the mutex, so that end() cannot slip between the count and the check.
    std::lock_guard lock(mutex);
    drained = work.fetch_sub(1, std::memory_order_acq_rel) == 1 && ended.load(std::memory_order_relaxed);
  }
  if (drained && on_drained) on_drained();
}

void async_wait_term_end(const std::shared_ptr<TermState>& state, TermEndHandler handler) {
  if (!state) {
    // A default-constructed Term never began, so it has already ended.
    return complete_later(boost::asio::any_io_executor(boost::asio::system_executor()), std::move(handler), make_error_code(errc::invalid_argument),
                          RevokeReason::stopped);
  }
  std::lock_guard lock(state->mutex);
  if (state->ended.load(std::memory_order_acquire)) {
    return complete_later(state->executor, std::move(handler), error_code{}, state->reason);
  }
  const std::uint64_t id = state->next_waiter++;
  auto slot = boost::asio::get_associated_cancellation_slot(handler);
  if (slot.is_connected()) {
    slot.assign([weak = std::weak_ptr<TermState>(state), id](boost::asio::cancellation_type) {
      auto s = weak.lock();
      if (!s) return;
      std::lock_guard lock(s->mutex);
      auto it = std::find_if(s->waiters.begin(), s->waiters.end(),
                             [id](const auto& w) { return w.first == id; });
      if (it == s->waiters.end()) return;
      auto h = std::move(it->second);
      s->waiters.erase(it);
      complete_later(s->executor, std::move(h), error_code(boost::asio::error::operation_aborted),
                     s->reason);
    });
  }
  state->waiters.emplace_back(id, std::move(handler));
}

const std::shared_ptr<TermState>& state_of(const Term& term) noexcept { return term.state_; }

}  // namespace detail

const std::string& Term::group() const noexcept {
  static const std::string none;
  return state_ ? state_->group : none;
}

std::int64_t Term::token() const noexcept { return state_ ? state_->token : 0; }

std::chrono::steady_clock::time_point Term::acquired_at() const noexcept {
  return state_ ? state_->acquired_at : std::chrono::steady_clock::time_point{};
}

bool Term::active() const noexcept {
  if (!state_) return false;
  const std::int64_t deadline = state_->deadline_ns.load(std::memory_order_acquire);
  const auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::steady_clock::now().time_since_epoch())
                       .count();
  return deadline != 0 && now < deadline;
}

}  // namespace leasehold
