#pragma once
// A group's published local view, shared by the elector (which writes it)
// and every Group handle (which reads it on any thread): inline, so that
// is_leader() stays one atomic load and one clock read.

#include <atomic>
#include <chrono>
#include <cstdint>

namespace leasehold::detail {

/// The steady_clock deadline of the group's current term in nanoseconds
/// since the clock's epoch: 0 when not leader, `closed` once the elector is
/// gone (never to lead again through this flag).
struct LeaderFlag {
  static constexpr std::int64_t closed = -1;
  std::atomic<std::int64_t> deadline_ns{0};

  bool leading(std::chrono::steady_clock::time_point now) const noexcept {
    const std::int64_t deadline = deadline_ns.load(std::memory_order_acquire);
    return deadline > 0 &&
           std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count() < deadline;
  }
  /// Replaces the deadline unless the flag was closed; returns the previous
  /// value. The elector's executor publishes while a destroying thread may
  /// close the flag: a close always wins.
  std::int64_t publish(std::int64_t next) noexcept {
    std::int64_t previous = deadline_ns.load(std::memory_order_relaxed);
    while (previous != closed &&
           !deadline_ns.compare_exchange_weak(previous, next, std::memory_order_acq_rel, std::memory_order_relaxed)) {
    }
    return previous;
  }
  void close() noexcept { deadline_ns.store(closed, std::memory_order_release); }
};

}  // namespace leasehold::detail
