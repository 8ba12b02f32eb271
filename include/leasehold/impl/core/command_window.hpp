#pragma once
// The elector's window of lease commands awaiting replies. Each command has
// a weight (what it holds while in flight); at most `limit` weight is in
// flight. More commands wait in a FIFO and leave as one pipelined batch once
// half the window is free, so that thousands of commands due at once never
// hold thousands of pending entries and replies at the same time. A command
// that went stale while held back (its group was demoted, reconnected or
// moved on) is dropped instead of sent.
//
// Urgent commands (renewals: a lease that runs out while its renewal waits
// is lost) have a FIFO of their own, which leaves first: they overtake
// held-back ordinary ones (acquisitions, releases), never one another. The
// caller keeps at most one fresh command per group, so overtaking reorders
// only different groups' commands.
//
// Invariant: while a command is held back, at least one is in flight, so
// another settle() is coming to release it. Within each kind nothing is
// overtaken: a command admitted while others of its kind are held back
// queues behind them. A command heavier than the whole window still
// leaves, alone.
//
// Pure logic: `Item` is whatever the caller needs to send the command later.

#include <cassert>
#include <cstddef>
#include <deque>
#include <utility>

namespace leasehold::detail {

template <typename Item>
class CommandWindow {
 public:
  explicit CommandWindow(std::size_t limit) : limit_(limit < 1 ? 1 : limit) {}

  /// True: send `item` now (its weight counts as in flight). False: it was
  /// held back.
  bool admit(const Item& item, std::size_t weight = 1, bool urgent = false) {
    std::deque<Held>& queue = urgent ? urgent_ : held_back_;
    if (!urgent_.empty() || !queue.empty() || !fits(weight)) {
      queue.push_back({item, weight});
      return false;
    }
    in_flight_ += weight;
    return true;
  }

  /// A command of `weight` was answered or failed. Once at most half the
  /// window is in flight, held-back items leave in order: `fresh(item)` says
  /// whether one is still worth sending, `send(item)` sends it (its weight
  /// counts as in flight).
  template <typename Fresh, typename Send>
  void settle(std::size_t weight, Fresh&& fresh, Send&& send) {
    assert(in_flight_ >= weight);
    in_flight_ -= weight;
    if (held_back() == 0 || in_flight_ > limit_ / 2) return;
    for (std::deque<Held>* queue : {&urgent_, &held_back_}) {
      while (!queue->empty() && fits(queue->front().weight)) {
        Held held = std::move(queue->front());
        queue->pop_front();
        if (!fresh(held.item)) continue;
        in_flight_ += held.weight;
        send(held.item);
      }
      if (!queue->empty()) return;  // the next kind waits for room too
    }
  }

  /// The weight in flight.
  std::size_t in_flight() const noexcept { return in_flight_; }
  std::size_t held_back() const noexcept { return urgent_.size() + held_back_.size(); }
  std::size_t limit() const noexcept { return limit_; }

 private:
  struct Held {
    Item item;
    std::size_t weight;
  };

  bool fits([[maybe_unused]] std::size_t weight) const noexcept {
    return in_flight_ == 0 || in_flight_ + weight <= limit_;
  }

  std::size_t limit_;
  std::size_t in_flight_ = 0;
  std::deque<Held> urgent_;
  std::deque<Held> held_back_;
};

}  // namespace leasehold::detail
