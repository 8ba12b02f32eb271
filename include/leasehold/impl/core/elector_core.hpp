#pragma once
// The elector's logic, free of I/O: every group of one elector, their lease
// machines, the command window and the wake scheduler, driven by inputs that
// carry `now`. It sends lease commands through a LeaseTransport and tells an
// ElectorListener about terms, errors, and when to wake it. The Asio
// elector (elector/elector_impl.hpp) and the simulation (tests/simulation) drive it.
//
// Threading: register_group(), find(), groups() and lifecycle() from any
// thread; everything else on the driver's executor only.

#include <leasehold/impl/core/command_window.hpp>
#include <leasehold/impl/options/name_rules.hpp>
#include <leasehold/impl/core/elector_listener.hpp>
#include <leasehold/impl/core/group_applier.hpp>
#include <leasehold/impl/core/group_registry.hpp>
#include <leasehold/impl/core/group_state.hpp>
#include <leasehold/impl/core/lease_transport.hpp>
#include <leasehold/impl/core/wake_scheduler.hpp>

#include <leasehold/elector_options.hpp>
#include <leasehold/key_layout.hpp>

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace leasehold::detail {

/// How much work one turn of the executor takes on.
struct CoreLimits {
  /// Lease commands awaiting replies at most (see CommandWindow), where a
  /// renewal counts a quarter: renewals leave and are answered in batches,
  /// and hold a few bytes each while in flight, an acquire or a release its
  /// own pending entry and reply.
  std::size_t max_in_flight = 1024;
  /// Groups woken, or told of a new connection, in one turn.
  std::size_t groups_per_pass = 1024;
};

enum class Lifecycle : std::uint8_t { idle, running, stopping, stopped };

class ElectorCore final : public LeaseReplyListener, private CommandSink {
 public:
  /// `incarnation`: this elector's (new_incarnation(); a simulation picks
  /// its own, to stay deterministic).
  /// `form`: RedisOptions::effective_key_layout() (hash_tagged on a Redis
  /// Cluster; group names then may not hold braces).
  ElectorCore(ElectorOptions options, std::string instance_id, std::string incarnation, LeaseTransport& transport,
              ElectorListener& listener, CoreLimits limits = {}, KeyLayout::Form form = KeyLayout::Form::plain);
  ElectorCore(const ElectorCore&) = delete;
  ElectorCore& operator=(const ElectorCore&) = delete;

  const ElectorOptions& options() const noexcept { return options_; }
  const std::string& id() const noexcept { return id_; }
  const std::string& incarnation() const noexcept { return incarnation_; }
  const KeyLayout& layout() const noexcept { return layout_; }

  // ---- any thread ----
  GroupState* find(std::string_view group) const noexcept { return registry_.find(group); }
  /// Registers `group` (validated: throws std::invalid_argument naming the
  /// problem). Returns the group and whether it is new; a new group must
  /// then be begun on the executor (begin()) if the core runs.
  std::pair<GroupState*, bool> register_group(std::string_view group);
  std::vector<GroupState*> groups() const { return registry_.snapshot(); }
  Lifecycle lifecycle() const noexcept { return lifecycle_.load(std::memory_order_acquire); }
  /// Marks the core stopped and withdraws every deadline at once, from any
  /// thread (an elector going away); the executor then calls finish_stop().
  void abandon() noexcept;

  // ---- executor only ----
  void start(TimePoint now);
  /// Starts campaigning for a group registered after start().
  void begin(GroupState& group, TimePoint now);
  void connection_up(TimePoint now);
  /// `timed_out`: the connection was reset because a command timed out.
  void connection_down(TimePoint now, bool timed_out);
  /// The connection is moving to the master the sentinels announced: leaders
  /// keep their terms until their deadlines (LeaseMachine::on_switching).
  void connection_switching(TimePoint now);
  bool connected() const noexcept { return connected_; }
  void notices_available(bool available, TimePoint now);
  /// The notices of the groups whose release channel is `channel` (a Redis
  /// Cluster, where each slot's channel is subscribed on its own shard).
  void channel_notices(std::string_view channel, bool available, TimePoint now);
  /// A message on a release channel (KeyLayout::read_release_notice).
  void release_notice(std::string_view channel, std::string_view message, TimePoint now);
  /// Ends the group's term; releases once its guarded work has finished
  /// (bounded by drain_timeout), at once when none runs.
  void step_down(GroupState& group, TimePoint now);
  /// The group's ended term has no guarded work left (listener.work_running()).
  void work_drained(GroupState& group, TimePoint now);
  /// Releases every lease; finishes (listener.stopped()) when every release
  /// was answered, or when finish_stop() is called (the stop timeout).
  void stop(TimePoint now);
  void finish_stop(TimePoint now);
  /// The timer armed through listener.arm_timer(armed_for) expired.
  void timer_expired(TimePoint armed_for, TimePoint now);
  /// Continues work spread over several turns (listener.resume_later()).
  void resume(TimePoint now);

  void on_lease_reply(GroupState& group, Command command, std::uint64_t seq, error_code ec,
                      const redis::Reply& reply, Replicated replicated, TimePoint now) override;

  const std::vector<GroupState*>& begun() const noexcept { return begun_; }
  /// The command window's weight in flight (a renewal weighs 1, another
  /// command window_weight(); the limit is max_in_flight of the latter) and
  /// the commands it holds back.
  std::size_t window_in_flight() const noexcept { return window_.in_flight(); }
  std::size_t held_back() const noexcept { return window_.held_back(); }
  static constexpr std::size_t window_weight(Command command) noexcept { return command == Command::renew ? 1 : 4; }

 private:
  struct Queued {
    GroupState* group;
    Command command;
    std::uint64_t seq;
  };

  void apply(GroupState& group, const Output& out, TimePoint now) { applier_.apply(group, out, now); }
  void send(GroupState& group, Command command, std::uint64_t seq, TimePoint now) override;
  void schedule(GroupState& group, std::optional<TimePoint> wake, bool exact) override;
  void machine_stopped(GroupState& group, TimePoint now) override;
  void write(const Queued& command, TimePoint now);
  void renew_slot_groups(GroupState& group, TimePoint now);
  void arm();
  void connect_pass(TimePoint now);
  void on_acquire_result(GroupState& g, std::uint64_t seq, error_code ec, const redis::Reply& reply,
                         Replicated replicated, TimePoint now);
  void on_renew_result(GroupState& g, std::uint64_t seq, error_code ec, const redis::Reply& reply,
                       Replicated replicated, TimePoint now);
  /// Reports a lease (or extension) too few replicas acknowledged.
  void unconfirmed(GroupState& g, std::string_view what);
  void on_release_result(GroupState& g, std::uint64_t seq, error_code ec, const redis::Reply& reply, TimePoint now);
  void fail(GroupState& g, std::uint64_t seq, error_code ec, const redis::Reply& reply, std::string_view what,
            TimePoint now);
  void recovered(GroupState& g, std::string_view what);
  /// Logs (at most once per ttl) that groups wait out the empty-restart guard.
  /// `unmarked`: why the guard could not read its data marker (logged once).
  void report_guard(const GroupState& g, std::int64_t remaining_ms, std::string_view unmarked, TimePoint now);
  void maybe_finish_stop(TimePoint now);
  /// Applies a step-down or stop (`end`, given whether to drain): a leader
  /// drains when drain_timeout allows, and releases at once if nothing runs.
  template <typename End>
  void end_term(GroupState& g, End end, TimePoint now);

  const ElectorOptions options_;
  const std::string id_;
  const std::string incarnation_;
  const KeyLayout layout_;
  const LeaseTiming timing_;
  const std::string ttl_ms_;
  LeaseArgv lease_argv_;
  const GroupContext context_;
  const CoreLimits limits_;
  LeaseTransport& transport_;
  ElectorListener& listener_;
  GroupApplier applier_;
  GroupRegistry<GroupState> registry_;
  std::atomic<std::size_t> groups_made_{0};  // registration order: GroupState's index
  std::atomic<Lifecycle> lifecycle_{Lifecycle::idle};

  // Executor only.
  std::vector<GroupState*> begun_;
  std::size_t stopped_prefix_ = 0;  // begun_[0, this) are known to be stopped
  std::size_t connect_next_ = 0;    // begun_[connect_next_, connect_end_) still to be told of the connection
  std::size_t connect_end_ = 0;
  bool connected_ = false;
  bool notices_ = false;            // the server confirmed the release pattern
  bool finished_ = false;           // finish_stop() ran
  bool renewing_slot_ = false;      // renew_slot_groups() is under way
  std::optional<TimePoint> guard_logged_at_;  // the last "empty-restart guard" log line
  bool unmarked_logged_ = false;              // "the guard has no data marker" was logged
  // Hash-tagged layout only: the begun groups by release channel (one per
  // slot), and whether that channel's subscription is confirmed.
  struct ChannelGroups {
    std::vector<GroupState*> groups;
    bool available = false;
  };
  struct ChannelHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view channel) const noexcept { return std::hash<std::string_view>{}(channel); }
  };
  std::unordered_map<std::string, ChannelGroups, ChannelHash, std::equal_to<>> channels_;
  CommandWindow<Queued> window_;
  WakeScheduler<GroupState> wakes_;
};

}  // namespace leasehold::detail
