#pragma once
// The lease state machine of one election group: pure logic, no I/O, no clock.
// Every input carries `now`; every input answers with an Output saying what to
// send (at most one command at a time, plus a release that may overtake it)
// and when to be woken next. The elector turns Outputs into Redis commands and
// timers; the unit tests drive it with a simulated clock.
//
//            start          connection up          acquired
//   idle ────────► disconnected ────────► candidate ────────► leader
//                      ▲  connection lost     ▲  │ renew refused/failed,
//                      └──────────────────────┤  │ deadline passed
//                                             └──┘
//   leader ─ step_down ─► held_off ─ hold-off over ─► candidate
//   candidate ─ acquired, too few replicas acknowledged ─► held_off, the lease
//            kept and renewed every retry ─ a renewal confirmed ─► leader
//   leader ─ step_down/stop with drain ─► draining (term over, lease still
//            renewed) ─ drained or drain_timeout ─► held_off / stopping (release)
//   leader ─ a standby of higher priority bids ─► draining ─► held_off (hand-over)
//   leader ─ switching (new master) ─► leader, silent until connected or the deadline
//   any ─ stop ─► stopping (release in flight) ─► stopped
//
// Leadership is entered and left in exactly two functions (enter_leader and
// leave_leader), which set and clear the deadline and emit elected / revoked,
// so each fires exactly once per term and in order.

#include <leasehold/elector_options.hpp>
#include <leasehold/revoke_reason.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace leasehold::detail {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;
using Duration = Clock::duration;

struct LeaseTiming {
  Duration ttl;
  Duration heartbeat_interval;
  Duration retry_interval;
  /// Kept back from the ttl by the local deadline: the drift margin plus the
  /// skew between Redis nodes' clocks (ElectorOptions::effective_deadline_margin).
  Duration deadline_margin;
  Duration step_down_hold_off;
  /// The longest a step-down or stop keeps the lease for ended work to finish.
  Duration drain_timeout{};

  /// The timing an elector with these (validated) options runs its groups on.
  static LeaseTiming from(const ElectorOptions& options);
};

enum class Command : std::uint8_t { none, acquire, renew, release };

using leasehold::RevokeReason;

enum class LeaseState : std::uint8_t { idle, disconnected, candidate, leader, draining, held_off, stopping, stopped };

std::string_view to_string(LeaseState state) noexcept;

/// What the acquire script answered.
struct AcquireReply {
  bool acquired = false;
  std::string holder;       ///< the holder's id (this instance's id when acquired)
  std::int64_t pttl_ms = 0; ///< the holder's remaining TTL; -1: key without TTL
  std::int64_t token = 0;   ///< fencing token of the term (when acquired)
  /// Confirm mode: false when fewer replicas than required acknowledged the
  /// acquisition in time. Such a lease does not count: it is kept unled and
  /// renewed until a renewal is acknowledged.
  bool confirmed = true;
  /// Refused because another incarnation of this instance id holds the
  /// lease: that incarnation (a restart's predecessor, or a duplicate id).
  std::string rival{};
  /// Held by the empty-restart guard without its data marker: why (the
  /// server refused INFO or TIME in scripts).
  std::string unmarked{};
};

/// A standby's request to be handed the lease (lease_scripts.hpp: the bid).
struct Bid {
  std::string id;
  std::string incarnation;
  int priority = 0;
};

/// What the renew script answered.
struct RenewReply {
  bool renewed = false;
  /// Confirm mode: false when the replicas did not acknowledge the
  /// extension; it does not extend the deadline then (it is retried).
  bool confirmed = true;
  /// Not renewed because another incarnation of this id holds the lease.
  std::string rival{};
  /// Renewed, and this bid stands (another incarnation's).
  std::optional<Bid> bid{};
};

/// Kinds of command failure: a timeout leaves the outcome unknown.
enum class Failure : std::uint8_t { error, timeout };

struct Output {
  Command send = Command::none;   ///< send this command now, tagged with `seq`
  std::uint64_t seq = 0;
  std::optional<TimePoint> wake;  ///< call on_timer at this instant (replaces any earlier wake)
  /// Wake at `wake` exactly, not on the elector's whole-millisecond grid
  /// (a candidate at a lease that lapses unrenewed).
  bool exact_wake = false;

  bool elected = false;           ///< a term began (token() holds its token)
  std::optional<RevokeReason> revoked;  ///< the term ended
  bool holder_changed = false;    ///< holder() changed
  bool released = false;          ///< a release (step-down or stop) finished
  bool release_failed = false;    ///< ... without a confirmation: the key may still be there
  bool stopped = false;           ///< the machine reached `stopped`
  bool drain_overrun = false;     ///< drain_timeout passed while draining: released anyway
  /// Another live process uses this instance id: it bid while we led, took
  /// the lease from us, or renewed a lease under our id while we waited.
  bool duplicate_id = false;
  /// A reply showed no other process under this id (ends an episode).
  bool no_duplicate = false;
};

class LeaseMachine {
 public:
  /// `timing` and `instance_id` are referred to, not copied: both must
  /// outlive the machine (the elector's do, as do constants and literals).
  /// Thousands of machines share one of each. `priority`: this instance's
  /// for the group; a bid above it makes a leader hand over.
  LeaseMachine(const LeaseTiming& timing, std::string_view instance_id, int priority = 0);

  /// A candidate waiting for a holder's lease looks again this long before
  /// its end; a lease then that close to its end gets an exact wake.
  static constexpr Duration lapse_check = std::chrono::milliseconds(5);

  /// Where in the heartbeat this group renews, as a share of it in
  /// 1/65536ths: a term's first renewal comes that much sooner than one
  /// heartbeat after the acquire, and the later ones keep the phase. Groups
  /// elected together (an elector's start, a take-over of a dead leader's
  /// groups) then renew spread over the heartbeat instead of as one burst,
  /// behind which Redis would queue every other command. Default 0.
  void set_renewal_phase(std::uint16_t share) noexcept { phase_share_ = share; }
  /// The command `seq` left only at `now` (the elector's command window held
  /// it back): what it takes or extends counts from then, a later instant
  /// that is still before Redis runs it.
  void left_at(std::uint64_t seq, TimePoint now) noexcept {
    if (seq == in_flight_seq_ && now > in_flight_sent_at_) in_flight_sent_at_ = now;
  }
  Duration renewal_phase() const noexcept {
    return timing_.heartbeat_interval / 65536 * static_cast<std::int64_t>(phase_share_);
  }

  // Inputs. Replies and failures carry the seq of the command they answer;
  // answers to commands that are no longer in flight are ignored.
  Output start(TimePoint now);
  /// `drain`: a leader ends its term but keeps (and renews) the lease until
  /// drained() or drain_timeout, then releases; else it releases at once.
  Output stop(TimePoint now, bool drain = false);
  Output step_down(TimePoint now, bool drain = false);
  /// The ended term's work has finished: a draining machine releases now.
  Output drained(TimePoint now);
  Output on_timer(TimePoint now);
  /// Whether renew_early() would renew now: a leader with nothing in flight
  /// whose renewal falls due within `within`.
  bool may_renew_early(TimePoint now, Duration within) const noexcept;
  /// Renews now if may_renew_early(now, within), else as on_timer.
  /// Renewing early only moves the deadline later; it lets groups renew
  /// together (one script for several: the elector's batching).
  Output renew_early(TimePoint now, Duration within);
  Output on_connected(TimePoint now);
  /// `timed_out`: the connection was reset because a command timed out.
  Output on_disconnected(TimePoint now, bool timed_out = false);
  /// The connection is moving to a new master the sentinels announced while
  /// the old one still answered (a planned switch): a leader keeps its term
  /// until its deadline, sends nothing meanwhile, and renews at once on the
  /// new connection (on_connected). Anything else is as on_disconnected.
  Output on_switching(TimePoint now);
  /// `releaser`: the instance id the notice names (empty: unknown).
  Output on_release_notice(TimePoint now, std::string_view releaser = {});
  Output on_notices_available(TimePoint now, bool available);
  Output on_acquire_reply(TimePoint now, std::uint64_t seq, const AcquireReply& reply);
  /// A bid above this instance's priority makes a leader hand over: its term
  /// ends, it drains, and its release seats the bidder (hand_over_target()).
  Output on_renew_reply(TimePoint now, std::uint64_t seq, const RenewReply& reply);
  Output on_renew_reply(TimePoint now, std::uint64_t seq, bool renewed, bool confirmed = true) {
    return on_renew_reply(now, seq, RenewReply{.renewed = renewed, .confirmed = confirmed});
  }
  /// `deleted`: the script found the key ours and deleted it (a release
  /// notice naming this instance follows).
  Output on_release_reply(TimePoint now, std::uint64_t seq, bool deleted = true);
  Output on_failure(TimePoint now, std::uint64_t seq, Failure failure);

  LeaseState state() const noexcept { return state_; }
  bool is_leader() const noexcept { return state_ == LeaseState::leader; }
  /// The local deadline of the current term, or nullopt when not leader.
  std::optional<TimePoint> deadline() const noexcept;
  /// The instant the command that began the current term was sent.
  TimePoint term_started() const noexcept { return term_started_; }
  /// The send instant of the last confirming command of the current term.
  TimePoint confirmed_at() const noexcept { return confirmed_at_; }
  std::int64_t token() const noexcept { return token_; }
  /// The holder as last seen (this instance's id while leading; empty: unknown).
  std::string_view holder() const noexcept { return holder_is_self_ ? id_ : std::string_view(foreign_holder_); }
  Command in_flight() const noexcept { return in_flight_; }
  /// The sequence number of the command in flight (meaningless when none is).
  std::uint64_t in_flight_seq() const noexcept { return in_flight_seq_; }
  bool notices_available() const noexcept { return notices_available_; }
  const LeaseTiming& timing() const noexcept { return timing_; }
  int priority() const noexcept { return priority_; }
  /// The bidder the next release hands the lease to; null: a plain release.
  const Bid* hand_over_target() const noexcept {
    return rare_ && rare_->hand_over_to ? &*rare_->hand_over_to : nullptr;
  }
  /// When the leader renews next: one heartbeat after the last confirmation,
  /// or after the instant it was due when it was sent a little late.
  TimePoint renewal_due() const noexcept { return renew_from_ + timing_.heartbeat_interval; }
  /// When the machine asks to be woken for that renewal: renewal_due()
  /// rounded up to a step of a 64th of the heartbeat (at most 25 ms).
  TimePoint renewal_wake() const noexcept;

 private:
  Output send(Output out, Command command, TimePoint now);
  /// The instant a reply's lease counts from: the send instant of the command.
  TimePoint confirming_instant(TimePoint reply_instant) const;
  Output settle(Output out, TimePoint now);
  /// A renewal sent at `sent_at` was confirmed.
  void confirm_renewal(TimePoint sent_at);
  void enter_leader(Output& out, TimePoint sent_at, std::int64_t token);
  void leave_leader(Output& out, RevokeReason reason, LeaseState next);
  void see_holder(Output& out, std::string_view holder);
  void forget_holder();
  /// Ends a drain: on to the state the step-down or stop asked for, releasing.
  Output finish_drain(Output out, TimePoint now);
  /// Enters `draining` from leader, the term ending with `reason`.
  Output start_drain(Output out, RevokeReason reason, LeaseState after, TimePoint now);
  /// A renewal answered with a bid: hand over if it outranks us.
  Output consider_bid(Output out, const Bid& bid, TimePoint now);
  /// A refusal naming another incarnation of our id: a duplicate once it
  /// has renewed since the last look (a dead predecessor never does).
  void watch_rival(Output& out, const AcquireReply& reply, TimePoint sent_at, TimePoint now);
  TimePoint lease_end(TimePoint sent_at) const { return sent_at + timing_.ttl - timing_.deadline_margin; }

  struct Rival {
    std::string incarnation;
    TimePoint latest_expiry;  // the latest its lease can have ended, as last seen
  };
  // What few groups ever need, behind one pointer: idle groups stay small.
  struct Rare {
    std::optional<Bid> hand_over_to;
    std::optional<Rival> rival;
  };
  Rare& rare() {
    if (!rare_) rare_ = std::make_unique<Rare>();
    return *rare_;
  }
  const Rival* rival() const noexcept { return rare_ && rare_->rival ? &*rare_->rival : nullptr; }

  // Members ordered by size: one machine per group, thousands per elector.
  const LeaseTiming& timing_;
  std::string_view id_;
  std::unique_ptr<Rare> rare_;
  std::uint64_t in_flight_seq_ = 0;
  TimePoint in_flight_sent_at_{};
  std::uint64_t next_seq_ = 1;

  TimePoint term_started_{};     // send instant of the acquire that began the term
  TimePoint confirmed_at_{};     // send instant of the last confirming command
  TimePoint renew_from_{};       // the next renewal is due one heartbeat after this
  TimePoint next_attempt_{};     // candidate: when to try to acquire
  TimePoint hold_until_{};       // after step_down: no campaign before this
  TimePoint drain_until_{};      // draining: release by then whatever still runs
  std::int64_t token_ = 0;
  std::string foreign_holder_;  // the holder unless it is this instance
  int priority_ = 0;
  // Notices of this instance's own releases still to come: they name this
  // instance, but must not end a term won after the release.
  std::uint32_t own_notices_due_ = 0;
  std::uint16_t phase_share_ = 0;  // set_renewal_phase
  LeaseState state_ = LeaseState::idle;
  Command in_flight_ = Command::none;
  LeaseState after_drain_ = LeaseState::held_off;  // held_off (step_down) or stopping (stop)
  bool holder_is_self_ = false;
  bool notices_available_ = false;
  bool look_again_ = false;  // a notice came while an acquire was in flight
  bool exact_attempt_ = false;  // next_attempt_ is a lapsing lease's end (Output::exact_wake)
  bool switching_ = false;   // leader between masters (on_switching until on_connected)
  // held_off on a lease too few replicas acknowledged: kept (renewed every
  // retry_interval, token_ its token) until a renewal is confirmed.
  bool unconfirmed_claim_ = false;
};

}  // namespace leasehold::detail
