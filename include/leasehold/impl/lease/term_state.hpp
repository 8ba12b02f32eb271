#pragma once
// The shared state of one term, owned jointly by the elector (while the term
// lasts) and by every Term handed out for it.

#include <leasehold/term.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

namespace leasehold::detail {

struct TermState {
  TermState(std::string g, std::int64_t t, std::chrono::steady_clock::time_point at,
            boost::asio::any_io_executor ex)
      : group(std::move(g)), token(t), acquired_at(at), executor(std::move(ex)) {}

  const std::string group;
  const std::int64_t token;
  const std::chrono::steady_clock::time_point acquired_at;
  const boost::asio::any_io_executor executor;  // where waiters complete by default

  std::atomic<std::int64_t> deadline_ns{0};  // 0 once the term ended
  std::atomic<bool> ended{false};

  std::mutex mutex;  // guards the fields below
  RevokeReason reason = RevokeReason::stopped;
  std::vector<std::pair<std::uint64_t, TermEndHandler>> waiters;
  std::uint64_t next_waiter = 1;

  /// Called once by the elector when the term ends.
  void end(RevokeReason why);

  // Guarded work (leader_only coroutines, run_while_leader tasks) running
  // with this term: a draining step-down or stop waits until none is left.
  /// Counts one piece of work in; false (and not counted) once the term ended.
  bool begin_work();
  /// Counts one out; the last one out of an ended term calls on_drained.
  void end_work();
  bool work_running() const noexcept { return work.load(std::memory_order_acquire) > 0; }
  /// Set by the elector before the Term is handed out; callable from any thread.
  std::function<void()> on_drained;

 private:
  std::atomic<int> work{0};
};

}  // namespace leasehold::detail
