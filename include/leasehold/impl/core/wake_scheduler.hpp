#pragma once
// When each group wants to be woken, and when the one timer behind them all
// must fire. Pure logic: the driver owns the timer, arms it when arm() says
// so, and calls fire() when it expires. A turn handles at most `per_turn`
// due groups; the rest stay due and the timer is armed in the past, so a
// large burst is spread over several turns of the executor. Wakes count in
// whole milliseconds (the wheel), except the few asked for exactly (a
// candidate at a lapsing lease), which wait in a short list beside it.

#include <leasehold/impl/core/wake_wheel.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <optional>
#include <vector>

namespace leasehold::detail {

// T has `wake_at` and `wake_id` (see WakeWheel).
template <typename T>
class WakeScheduler {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  explicit WakeScheduler(std::size_t per_turn) : per_turn_(per_turn < 1 ? 1 : per_turn) {}

  /// Wakes `item` at `at` (replacing its earlier wake), or never when nullopt;
  /// `exact`: at that instant, not in the millisecond after it.
  /// True when arm() may have a new instant: most wakes come after the
  /// armed one, and asking arm() after each would cost a tenth of a busy
  /// elector's time. (A wake removed or moved later needs nothing: the
  /// timer armed for it fires, finds nothing due, and arms anew.)
  bool set(T& item, std::optional<TimePoint> at, bool exact = false) {
    if (!exact_.empty()) std::erase(exact_, &item);
    if (!at) {
      wheel_.remove(item);
      return false;
    }
    item.wake_at = *at;
    if (exact) {
      wheel_.remove(item);
      exact_.push_back(&item);
    } else {
      wheel_.set(item);
    }
    return !armed_ || *at < armed_at_;
  }

  /// The instant to arm the timer for, when it must be (re-)armed: nothing
  /// armed yet, or the earliest wake is now earlier than the armed one.
  /// The caller arms it; nullopt: leave the timer as it is. A whole
  /// millisecond (WakeWheel) unless an exact wake comes first.
  std::optional<TimePoint> arm() {
    std::optional<TimePoint> earliest = wheel_.earliest();
    for (const T* item : exact_) {
      if (!earliest || item->wake_at < *earliest) earliest = item->wake_at;
    }
    if (!earliest) return std::nullopt;
    const TimePoint next = *earliest;
    if (armed_ && armed_at_ <= next) return std::nullopt;
    armed_ = true;
    armed_at_ = next;
    return next;
  }

  /// The timer armed for `armed_for` expired. False when it was re-armed
  /// since (a later expiry of the re-armed timer will come).
  bool expired(TimePoint armed_for) {
    if (!armed_ || armed_at_ != armed_for) return false;
    armed_ = false;
    return true;
  }

  /// Takes the groups due at `now`, at most per_turn of them, and calls
  /// `wake(item)` for each. All are taken before the first is woken: their
  /// state is asked for together (T::prefetch(), when it has one), one that
  /// asks to be woken at once again waits for the next turn, and each taken
  /// is woken even if an earlier one's wake moved it meanwhile.
  template <typename Wake>
  void fire(TimePoint now, Wake&& wake) {
    due_.clear();
    wheel_.take_due(now, per_turn_, due_);
    exact_due_.clear();
    std::erase_if(exact_, [&](T* item) {
      if (item->wake_at > now) return false;
      exact_due_.push_back(item);
      return true;
    });
    if constexpr (requires(T& item) { item.prefetch(); }) {
      for (const std::uint32_t id : due_) wheel_.item(id).prefetch();
    }
    for (T* item : exact_due_) wake(*item);
    for (const std::uint32_t id : due_) wake(wheel_.item(id));
  }

  /// Forgets the armed timer (the caller cancelled it).
  void disarm() noexcept { armed_ = false; }
  bool empty() const noexcept { return wheel_.empty() && exact_.empty(); }

 private:
  WakeWheel<T> wheel_;
  std::vector<std::uint32_t> due_;  // fire()'s wake_ids, kept for its capacity
  std::vector<T*> exact_;           // exact wakes: a few lapsing leases at most
  std::vector<T*> exact_due_;       // fire()'s, kept for its capacity
  std::size_t per_turn_;
  bool armed_ = false;
  TimePoint armed_at_{};
};

}  // namespace leasehold::detail
