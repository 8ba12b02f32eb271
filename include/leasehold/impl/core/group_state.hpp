#pragma once
// One election group inside an elector: its keys, its lease machine, the
// flag is_leader() reads, its term, and the counters metrics() and health()
// report. Owned by the elector's registry for the elector's whole life.

#include <leasehold/impl/lease/lease_machine.hpp>
#include <leasehold/impl/base/prefetch.hpp>
#include <leasehold/impl/lease/term_state.hpp>
#include <leasehold/impl/core/wake_wheel.hpp>

#include <leasehold/detail/leader_flag.hpp>
#include <leasehold/error.hpp>
#include <leasehold/key_layout.hpp>
#include <leasehold/redis/script_arguments.hpp>

#include <boost/asio/any_completion_handler.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace leasehold::detail {

using TermHandler = boost::asio::any_completion_handler<void(error_code, Term)>;
using VoidHandler = boost::asio::any_completion_handler<void(error_code)>;

inline std::int64_t to_ns(TimePoint t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

/// A group's renewal phase (LeaseMachine::set_renewal_phase) from its place
/// in the registration order: one of 64, so that groups elected together
/// renew spread over the heartbeat, each shared by runs of 128 groups,
/// whose states lie close together in memory and are read in order by the
/// turn that renews them (phases by key hash scattered those reads).
constexpr std::uint16_t renewal_phase_share(std::size_t index) noexcept {
  return static_cast<std::uint16_t>(((index >> 7) & 63) << 10);
}

/// Those awaiting the group: acquire() until it leads, step_down() until the
/// release is done. Made for the first waiter: most groups never have one.
struct GroupWaiters {
  std::vector<std::pair<std::uint64_t, TermHandler>> acquire;
  std::vector<VoidHandler> step_down;
  error_code release_error;  // why the last release failed, for step_down's callers
};

/// The ARGV of the acquire and renew scripts (lease_scripts.hpp: id, ttl,
/// incarnation, priority) for each priority an elector's groups campaign
/// with, encoded once and shared by those groups; entries live as long as
/// the pool. Thread-safe (groups register from any thread).
class LeaseArgv {
 public:
  LeaseArgv(std::string instance_id, std::string ttl_ms, std::string incarnation);
  const redis::SharedArguments& of(int priority);

 private:
  const std::string id_;
  const std::string ttl_ms_;
  const std::string incarnation_;
  std::mutex mutex_;
  std::map<int, redis::SharedArguments> by_priority_;
};

/// What every group of one elector shares: its identity and lease timing,
/// and the encoded arguments of the lease scripts.
struct GroupContext {
  const KeyLayout& layout;
  const LeaseTiming& timing;
  const std::string& instance_id;
  const std::string& incarnation;  ///< this elector's (incarnation.hpp)
  const std::string& ttl_ms;
  const ElectorOptions& options;   ///< for per-group settings (priority)
  LeaseArgv& argv;  ///< ARGV of acquire and renew, per priority
};

struct GroupState {
  /// `index`: the group's place in the elector's registration order.
  GroupState(std::string_view group, const GroupContext& context, std::size_t index);

  // What every renewal touches comes first, in as few cache lines as it
  // fits: with 100,000 groups each touch of a group is a cache miss.
  // Acquire and renew, encoded once (the keys; ARGV is shared): the renew
  // script ignores the counter key it is given, so one encoding serves both.
  const redis::ScriptArguments lease_arguments;
  const std::string_view key;   // the lease key: a view into lease_arguments, one copy of it
  const std::string_view name;  // the group: a view into `key`
  LeaseMachine machine;
  const std::shared_ptr<LeaderFlag> flag;
  // What the executor last stored in *flag: most applies leave the deadline
  // as it was, and comparing here spares the flag's cache line.
  std::int64_t published_ns = 0;

  // The elector's executor only, unless marked.
  std::shared_ptr<TermState> term;  // made when somebody asks for a Term
  // The groups of its slot on a cluster (this one included), which renew
  // together when their renewals are close (ElectorCore); null elsewhere.
  const std::vector<GroupState*>* slot_groups = nullptr;
  TimePoint wake_at{};                 // when the wake scheduler wakes this group
  std::uint32_t wake_id = no_wake_id;  // its name in that scheduler's wheel
  const std::uint16_t slot;            // the keys' slot on a cluster, else 0
  // The transport's: the change stamp (its number) at which the last
  // renewal found the holder record clean (or the last look found a holder
  // this standby does not outrank), and renewals or looks trusted since.
  std::uint32_t clean_at_stamp = 0;
  std::uint8_t trusted_in_a_row = 0;
  const std::uint8_t stagger;  // the low byte of the registration index: spreads the forced reads
  bool begun = false;
  bool in_term = false;                 // elected, and the term not yet ended
  error_code last_error;                // the last reported error: a repeating one is reported once
  std::uint64_t renewals_ok = 0;        // for metrics()
  // Written on the executor, read by health() from any thread.
  std::atomic<std::int64_t> renew_due_ns{0};  // next renewal's scheduled instant; 0: none pending
  std::atomic<std::int64_t> renew_lag_ns{0};  // how late the last renewal of this term was sent
  std::atomic<bool> failing{false};           // the last lease command got an error reply
  std::atomic<bool> duplicate_id{false};      // another live process uses our id (until it is gone)
  bool first_acquire_answered = false;  // reclaim_on_restart applies before this only

  // Seldom touched.
  std::shared_ptr<TermState> ended_term;  // the last one, while its guarded work may still run
  std::unique_ptr<GroupWaiters> waiters;
  std::int64_t last_token = 0;  // token of this instance's last term

  /// Keeps why a release failed, for step_down's callers (if any wait).
  void release_failed(error_code why) {
    if (waiters) waiters->release_error = why;
  }
  /// Why the last release failed (cleared); connection_lost when unknown.
  error_code take_release_error() {
    const error_code why = waiters ? std::exchange(waiters->release_error, {}) : error_code{};
    return why ? why : make_error_code(errc::connection_lost);
  }
  GroupWaiters& waiting() {
    if (!waiters) waiters = std::make_unique<GroupWaiters>();
    return *waiters;
  }
  std::vector<std::pair<std::uint64_t, TermHandler>> take_acquire_waiters() {
    return waiters ? std::exchange(waiters->acquire, {}) : decltype(GroupWaiters::acquire){};
  }
  std::vector<VoidHandler> take_step_down_waiters() {
    return waiters ? std::exchange(waiters->step_down, {}) : decltype(GroupWaiters::step_down){};
  }

  // Counters for metrics() (executor only).
  std::uint64_t terms_won = 0;
  std::uint64_t acquire_attempts = 0;
  std::uint64_t acquire_errors = 0;
  std::uint64_t renewals_failed = 0;
  std::array<std::uint32_t, revoke_reason_count> demotions{};  // widened for metrics()
  std::uint32_t drain_overruns = 0;  // releases made with guarded work still running
  std::uint32_t duplicate_ids = 0;   // episodes of another live process using our id
  Duration time_as_leader{};
  TimePoint leading_since{};

  /// Starts loading what a renewal touches (the members before ended_term).
  void prefetch() const noexcept {
    detail::prefetch(this, static_cast<std::size_t>(reinterpret_cast<const char*>(&ended_term) -
                                                    reinterpret_cast<const char*>(this)));
  }

  /// How late this group's renewal is at `now` (any thread).
  Duration heartbeat_lag(TimePoint now) const noexcept;
};

}  // namespace leasehold::detail
