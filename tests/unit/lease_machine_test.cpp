// LeaseMachine: every transition of the pure lease state machine, driven by
// hand with a simulated clock, and a randomized property test over the whole
// input set.
//
// Timing throughout (but for the clock-skew tests): ttl 5000 ms, heartbeat
// 1666 ms, retry 1000 ms, deadline margin 52 ms (the default drift margin, no
// clock skew), step-down hold-off 1000 ms. A term confirmed by a command sent
// at S therefore lasts until S + 4948 ms.

#include <leasehold/impl/lease/lease_machine.hpp>

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace leasehold::detail {

// Readable gtest output for the machine's enums (found by argument-dependent
// lookup; internal linkage so other test files may define their own).
[[maybe_unused]] static void PrintTo(Command command, std::ostream* os) {
  switch (command) {
    case Command::none: *os << "none"; return;
    case Command::acquire: *os << "acquire"; return;
    case Command::renew: *os << "renew"; return;
    case Command::release: *os << "release"; return;
  }
  *os << "Command(" << static_cast<int>(command) << ")";
}
[[maybe_unused]] static void PrintTo(RevokeReason reason, std::ostream* os) { *os << to_string(reason); }
[[maybe_unused]] static void PrintTo(LeaseState state, std::ostream* os) { *os << to_string(state); }

}  // namespace leasehold::detail

namespace unit_lease_machine_test {
namespace {

using namespace std::chrono_literals;
using leasehold::detail::AcquireReply;
using leasehold::detail::Command;
using leasehold::detail::Duration;
using leasehold::detail::Failure;
using leasehold::detail::LeaseMachine;
using leasehold::detail::LeaseState;
using leasehold::detail::LeaseTiming;
using leasehold::detail::Output;
using leasehold::detail::RevokeReason;
using leasehold::detail::TimePoint;

constexpr Duration kTtl = 5000ms;
constexpr Duration kHeartbeat = 1666ms;
constexpr Duration kRetry = 1000ms;
constexpr Duration kDrift = 52ms;
constexpr Duration kHoldOff = 1000ms;
constexpr Duration kLease = kTtl - kDrift;  // 4948 ms of local leadership per confirmation
constexpr LeaseTiming kTiming{kTtl, kHeartbeat, kRetry, kDrift, kHoldOff};
constexpr TimePoint kT0 = TimePoint{} + 1h;  // the simulated clock's starting instant
constexpr std::int64_t kToken = 7;

// The wake a renewal due at `due` asks for: rounded up to the machine's grid
// of a 64th of the heartbeat, at most 25 ms (25 ms here: 1666 ms / 64 is 26).
TimePoint renewal_grid(TimePoint due) {
  return TimePoint(std::chrono::ceil<std::chrono::milliseconds>(due.time_since_epoch() / 25) * 25);
}

// An optional instant that gtest prints as an offset from kT0.
struct At {
  std::optional<TimePoint> t;
  bool operator==(const At&) const = default;
};

std::string show(std::optional<TimePoint> t) {
  if (!t) return "none";
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(*t - kT0).count();
  const auto abs_ns = ns < 0 ? -ns : ns;
  std::ostringstream text;
  text << "T0" << (ns < 0 ? "-" : "+") << abs_ns / 1'000'000 << "ms";
  if (abs_ns % 1'000'000 != 0) text << "+" << abs_ns % 1'000'000 << "ns";
  return text.str();
}

[[maybe_unused]] void PrintTo(const At& at, std::ostream* os) { *os << show(at.t); }

// The exact Output a test expects; fields left out are expected empty.
// Designated initializers must follow this order.
struct Want {
  Command send = Command::none;
  std::uint64_t seq = 0;
  std::optional<TimePoint> wake = std::nullopt;
  bool exact_wake = false;
  bool elected = false;
  std::optional<RevokeReason> revoked = std::nullopt;
  bool holder_changed = false;
  bool released = false;
  bool stopped = false;
  bool drain_overrun = false;
};

void check_output(const Output& out, const Want& want) {
  EXPECT_EQ(out.send, want.send) << "send";
  EXPECT_EQ(out.seq, want.seq) << "seq";
  EXPECT_EQ(At{out.wake}, At{want.wake}) << "wake";
  EXPECT_EQ(out.exact_wake, want.exact_wake) << "exact_wake";
  EXPECT_EQ(out.elected, want.elected) << "elected";
  EXPECT_EQ(out.revoked, want.revoked) << "revoked";
  EXPECT_EQ(out.holder_changed, want.holder_changed) << "holder_changed";
  EXPECT_EQ(out.released, want.released) << "released";
  EXPECT_EQ(out.stopped, want.stopped) << "stopped";
  EXPECT_EQ(out.drain_overrun, want.drain_overrun) << "drain_overrun";
}

// EXPECT_OUT(m.on_timer(now), .send = Command::renew, .seq = 2, .wake = t):
// the whole Output, every field.
#define EXPECT_OUT(output, ...)                  \
  do {                                           \
    SCOPED_TRACE("EXPECT_OUT(" #output ")");     \
    check_output((output), Want{__VA_ARGS__});   \
  } while (false)

// ---------------------------------------------------------------------------
// Fixture: one machine (instance id "me") and a hand-driven clock.

class LeaseMachineTest : public ::testing::Test {
 protected:
  explicit LeaseMachineTest(const LeaseTiming& timing = kTiming) : m(timing, "me") {}

  LeaseMachine m;
  TimePoint now = kT0;

  void advance(Duration d) { now += d; }
  void advance_to(TimePoint t) { now = t; }

  // Inputs, all at `now`.
  Output start() { return m.start(now); }
  Output stop() { return m.stop(now); }
  Output step_down() { return m.step_down(now); }
  Output timer() { return m.on_timer(now); }
  Output connected() { return m.on_connected(now); }
  Output disconnected(bool timed_out = false) { return m.on_disconnected(now, timed_out); }
  Output notice(std::string_view releaser = {}) { return m.on_release_notice(now, releaser); }
  Output notices(bool available) { return m.on_notices_available(now, available); }
  Output acquired(std::uint64_t seq, std::int64_t token = kToken) {
    return m.on_acquire_reply(now, seq, AcquireReply{.acquired = true, .holder = "me", .pttl_ms = 5000, .token = token});
  }
  Output held_by(std::uint64_t seq, std::string holder, std::int64_t pttl_ms) {
    return m.on_acquire_reply(now, seq, AcquireReply{.acquired = false, .holder = std::move(holder), .pttl_ms = pttl_ms});
  }
  Output renewed(std::uint64_t seq, bool renewed = true) { return m.on_renew_reply(now, seq, renewed); }
  Output release_done(std::uint64_t seq) { return m.on_release_reply(now, seq); }
  Output failed(std::uint64_t seq, Failure failure = Failure::error) { return m.on_failure(now, seq, failure); }

  // Started and connected at kT0: acquire seq 1 is in flight, sent at kT0.
  void campaign() {
    ASSERT_EQ(now, kT0);
    EXPECT_OUT(start());
    EXPECT_OUT(connected(), .send = Command::acquire, .seq = 1);
  }

  // Leader: acquire seq 1 sent at kT0, acquired (token kToken) at kT0 + 10ms.
  void lead() {
    campaign();
    advance(10ms);
    EXPECT_OUT(acquired(1), .wake = renewal_grid(kT0 + kHeartbeat), .elected = true, .holder_changed = true);
    ASSERT_TRUE(m.is_leader());
  }

  // Leader with renew seq 2 in flight, sent at kT0 + 1666ms.
  void renewing() {
    lead();
    advance_to(kT0 + kHeartbeat);
    EXPECT_OUT(timer(), .send = Command::renew, .seq = 2, .wake = kT0 + kLease);
    ASSERT_EQ(m.in_flight(), Command::renew);
  }

  void expect_not_leader() {
    EXPECT_FALSE(m.is_leader());
    EXPECT_EQ(At{m.deadline()}, At{});
  }

  void expect_leader(TimePoint confirmed_at) {
    EXPECT_EQ(m.state(), LeaseState::leader);
    EXPECT_TRUE(m.is_leader());
    EXPECT_EQ(At{m.deadline()}, At{confirmed_at + kLease});
    EXPECT_EQ(m.holder(), "me");
  }

  // A renew that fails with `failure` demotes at once with `reason` and
  // re-claims after exactly one retry interval, keeping the token.
  void renew_failure_demotes(Failure failure, RevokeReason reason);
};

// ---------------------------------------------------------------------------
// Lifecycle and connection

TEST_F(LeaseMachineTest, StartsIdleAndStartWaitsForTheConnection) {
  EXPECT_EQ(m.state(), LeaseState::idle);
  expect_not_leader();
  EXPECT_OUT(start());
  EXPECT_EQ(m.state(), LeaseState::disconnected);
  EXPECT_EQ(m.in_flight(), Command::none);
  expect_not_leader();
  advance(10s);
  EXPECT_OUT(timer());
  EXPECT_OUT(notice());
  EXPECT_EQ(m.state(), LeaseState::disconnected);
}

TEST_F(LeaseMachineTest, InputsBeforeStartDoNothing) {
  EXPECT_OUT(connected());
  EXPECT_OUT(timer());
  EXPECT_OUT(notice());
  EXPECT_OUT(disconnected());
  EXPECT_EQ(m.state(), LeaseState::idle);
  // The connection is announced again after start(); the earlier one is not remembered.
  EXPECT_OUT(start());
  EXPECT_EQ(m.state(), LeaseState::disconnected);
}

TEST_F(LeaseMachineTest, StartTwiceChangesNothing) {
  lead();
  advance(5ms);
  EXPECT_OUT(start(), .wake = renewal_grid(kT0 + kHeartbeat));
  expect_leader(kT0);
}

TEST_F(LeaseMachineTest, ConnectedSendsAcquireAtOnce) {
  EXPECT_OUT(start());
  advance(250ms);
  EXPECT_OUT(connected(), .send = Command::acquire, .seq = 1);
  EXPECT_EQ(m.state(), LeaseState::candidate);
  EXPECT_EQ(m.in_flight(), Command::acquire);
  EXPECT_EQ(m.holder(), "");
  expect_not_leader();
  // A second connection notice while the acquire is in flight sends nothing.
  EXPECT_OUT(connected());
}

TEST_F(LeaseMachineTest, AcquireSuccessElectsWithDeadlineFromTheSendInstant) {
  campaign();
  advance(300ms);  // a slow reply: the lease still counts from the send instant
  EXPECT_OUT(acquired(1), .wake = renewal_grid(kT0 + kHeartbeat), .elected = true, .holder_changed = true);
  expect_leader(kT0);
  EXPECT_EQ(At{m.deadline()}, At{kT0 + 4948ms});
  EXPECT_EQ(m.token(), kToken);
  EXPECT_EQ(m.term_started(), kT0);
  EXPECT_EQ(m.in_flight(), Command::none);
}

// A command the elector's window held back counts from when it left: the
// lease it takes is no shorter for the wait (Redis ran it later still).
TEST_F(LeaseMachineTest, ACommandHeldBackCountsFromWhenItLeft) {
  campaign();
  advance(3000ms);
  m.left_at(1, now);
  const TimePoint left = now;
  m.left_at(0, now + 1s);  // another command's (stale) seq changes nothing
  m.left_at(1, kT0);       // nor an earlier instant
  advance(10ms);
  EXPECT_OUT(acquired(1), .wake = renewal_grid(left + kHeartbeat), .elected = true, .holder_changed = true);
  expect_leader(left);
  EXPECT_EQ(m.term_started(), left);

  // A renewal too.
  advance_to(left + kHeartbeat);
  EXPECT_OUT(timer(), .send = Command::renew, .seq = 2, .wake = left + kLease);
  advance(2000ms);
  const TimePoint renewal_left = now;
  m.left_at(2, now);
  advance(5ms);
  EXPECT_OUT(renewed(2), .wake = renewal_grid(renewal_left + kHeartbeat));
  expect_leader(renewal_left);
}

TEST_F(LeaseMachineTest, AcquireReplyAfterTheHeartbeatElectsAndRenewsAtOnce) {
  campaign();
  advance(1700ms);
  EXPECT_OUT(acquired(1), .send = Command::renew, .seq = 2, .wake = kT0 + kLease, .elected = true,
             .holder_changed = true);
  expect_leader(kT0);
}

TEST_F(LeaseMachineTest, AcquireReplyPastItsOwnDeadlineReclaimsInsteadOfLeading) {
  campaign();
  advance_to(kT0 + kLease);  // the lease it confirms is already over locally
  EXPECT_OUT(acquired(1), .send = Command::acquire, .seq = 2);
  EXPECT_EQ(m.state(), LeaseState::candidate);
  expect_not_leader();
  const TimePoint resent = now;
  advance(10ms);
  EXPECT_OUT(acquired(2), .wake = renewal_grid(resent + kHeartbeat), .elected = true, .holder_changed = true);
  expect_leader(resent);
  EXPECT_EQ(m.term_started(), resent);
}

TEST_F(LeaseMachineTest, AcquireReplyJustBeforeItsDeadlineStillLeads) {
  campaign();
  advance_to(kT0 + kLease - 1ms);
  EXPECT_OUT(acquired(1), .send = Command::renew, .seq = 2, .wake = kT0 + kLease, .elected = true,
             .holder_changed = true);
  expect_leader(kT0);
}

TEST_F(LeaseMachineTest, AcquireFailureRetriesAfterTheRetryInterval) {
  campaign();
  advance(20ms);
  const TimePoint failed_at = now;
  EXPECT_OUT(failed(1), .wake = failed_at + kRetry);
  EXPECT_EQ(m.state(), LeaseState::candidate);
  EXPECT_EQ(m.in_flight(), Command::none);
  advance_to(failed_at + kRetry - 1ms);
  EXPECT_OUT(timer(), .wake = failed_at + kRetry);
  advance(1ms);
  EXPECT_OUT(timer(), .send = Command::acquire, .seq = 2);
  advance(20ms);
  EXPECT_OUT(failed(2, Failure::timeout), .wake = now + kRetry);
  expect_not_leader();
}

// ---------------------------------------------------------------------------
// Heartbeats

TEST_F(LeaseMachineTest, HeartbeatSendsRenewAndTheReplyMovesTheDeadlineToItsSendInstant) {
  lead();
  advance_to(kT0 + kHeartbeat - 1ms);
  EXPECT_OUT(timer(), .wake = renewal_grid(kT0 + kHeartbeat));
  advance(1ms);
  EXPECT_OUT(timer(), .send = Command::renew, .seq = 2, .wake = kT0 + kLease);
  expect_leader(kT0);  // unchanged until the renewal is confirmed
  const TimePoint renew_sent = now;
  advance(40ms);
  EXPECT_OUT(renewed(2), .wake = renewal_grid(renew_sent + kHeartbeat));
  expect_leader(renew_sent);
  EXPECT_EQ(m.token(), kToken);
  EXPECT_EQ(m.term_started(), kT0);
}

TEST_F(LeaseMachineTest, ManyHeartbeatsNeverElectAgain) {
  lead();
  TimePoint confirmed = kT0;
  for (std::uint64_t seq = 2; seq < 12; ++seq) {
    advance_to(confirmed + kHeartbeat);
    EXPECT_OUT(timer(), .send = Command::renew, .seq = seq, .wake = confirmed + kLease);
    const TimePoint sent = now;
    advance(25ms);
    EXPECT_OUT(renewed(seq), .wake = renewal_grid(sent + kHeartbeat));
    confirmed = sent;
    expect_leader(confirmed);
  }
  EXPECT_EQ(m.term_started(), kT0);
}

// Groups of one slot renew together (ElectorCore): a leader renews early
// only within the window asked for, with nothing in flight, and the early
// renewal's reply counts from its own send instant, like any other.
TEST_F(LeaseMachineTest, AnEarlyRenewalWithinTheWindowCountsFromItsSendInstant) {
  lead();
  advance_to(kT0 + kHeartbeat - 900ms);
  EXPECT_FALSE(m.may_renew_early(now, 800ms));
  EXPECT_OUT(m.renew_early(now, 800ms), .wake = renewal_grid(kT0 + kHeartbeat));
  EXPECT_TRUE(m.may_renew_early(now, 900ms));
  EXPECT_OUT(m.renew_early(now, 900ms), .send = Command::renew, .seq = 2, .wake = kT0 + kLease);
  EXPECT_FALSE(m.may_renew_early(now, kHeartbeat)) << "a renewal is in flight";
  EXPECT_OUT(m.renew_early(now, kHeartbeat), .wake = kT0 + kLease);
  const TimePoint sent = now;
  advance(20ms);
  EXPECT_OUT(renewed(2), .wake = renewal_grid(sent + kHeartbeat));
  expect_leader(sent);
  EXPECT_EQ(m.token(), kToken);
}

// A timer a little late (a busy executor, the driver's whole milliseconds)
// must not move the schedule: groups woken together would renew together
// from then on and drift into bursts. The deadline still counts from the
// send instant; only the next renewal comes sooner.
TEST_F(LeaseMachineTest, ARenewalSentALittleLateKeepsTheScheduleButNotItsDeadline) {
  lead();
  for (std::uint64_t seq = 2; seq < 6; ++seq) {
    const TimePoint due = kT0 + static_cast<int>(seq - 1) * kHeartbeat;
    advance_to(due + 3ms);
    const TimePoint deadline = m.deadline().value();
    EXPECT_OUT(timer(), .send = Command::renew, .seq = seq, .wake = deadline);
    const TimePoint sent = now;
    advance(20ms);
    EXPECT_OUT(renewed(seq), .wake = renewal_grid(due + kHeartbeat));
    expect_leader(sent);
  }
}

// A group's renewal phase (from its key's hash slot in GroupState) brings a
// term's first renewal forward by that share of the heartbeat; the later
// renewals keep the phase, and every deadline still counts from a send
// instant. Groups elected together thus renew spread over the heartbeat.
TEST_F(LeaseMachineTest, ARenewalPhaseBringsTheFirstRenewalForwardAndTheLaterOnesKeepIt) {
  m.set_renewal_phase(16384);  // a quarter of the heartbeat
  const Duration phase = kHeartbeat / 65536 * 16384;
  ASSERT_EQ(m.renewal_phase(), phase);
  campaign();
  advance(10ms);
  EXPECT_OUT(acquired(1), .wake = renewal_grid(kT0 + kHeartbeat - phase), .elected = true, .holder_changed = true);
  expect_leader(kT0);
  for (std::uint64_t seq = 2; seq < 5; ++seq) {
    const TimePoint due = kT0 - phase + static_cast<int>(seq - 1) * kHeartbeat;
    advance_to(due - 1ms);
    EXPECT_OUT(timer(), .wake = renewal_grid(due));
    advance_to(renewal_grid(due));
    const TimePoint deadline = m.deadline().value();
    EXPECT_OUT(timer(), .send = Command::renew, .seq = seq, .wake = deadline);
    const TimePoint sent = now;
    advance(20ms);
    EXPECT_OUT(renewed(seq), .wake = renewal_grid(due + kHeartbeat));
    expect_leader(sent);
  }
}

TEST_F(LeaseMachineTest, ARenewalSentMuchLaterOrEarlyStartsTheScheduleAnew) {
  lead();
  advance_to(kT0 + kHeartbeat + kHeartbeat / 4);  // a quarter heartbeat late: a retry, not jitter
  EXPECT_OUT(timer(), .send = Command::renew, .seq = 2, .wake = kT0 + kLease);
  TimePoint sent = now;
  advance(20ms);
  EXPECT_OUT(renewed(2), .wake = renewal_grid(sent + kHeartbeat));
  advance_to(sent + kHeartbeat - 100ms);
  EXPECT_OUT(m.renew_early(now, 200ms), .send = Command::renew, .seq = 3, .wake = sent + kLease);
  sent = now;
  advance(20ms);
  EXPECT_OUT(renewed(3), .wake = renewal_grid(sent + kHeartbeat));
  expect_leader(sent);
}

TEST_F(LeaseMachineTest, OnlyALeaderRenewsEarly) {
  campaign();
  EXPECT_FALSE(m.may_renew_early(now, kHeartbeat)) << "acquire in flight";
  EXPECT_EQ(m.renew_early(now, kHeartbeat).send, Command::none);
  advance(10ms);
  held_by(1, "other", 3000);
  EXPECT_FALSE(m.may_renew_early(now, kHeartbeat)) << "a standby";
  EXPECT_EQ(m.renew_early(now, kHeartbeat).send, Command::none);
  EXPECT_EQ(m.in_flight(), Command::none);
}

TEST_F(LeaseMachineTest, TimerLateButBeforeTheDeadlineRenewsAtOnce) {
  lead();
  advance_to(kT0 + 3000ms);  // a stalled thread, not yet past the deadline
  EXPECT_OUT(timer(), .send = Command::renew, .seq = 2, .wake = kT0 + kLease);
  expect_leader(kT0);
}

TEST_F(LeaseMachineTest, TimerPastTheDeadlineDemotesAndReclaimsAtOnce) {
  lead();
  advance_to(kT0 + kLease);  // a thread stalled through the heartbeat and the deadline
  EXPECT_OUT(timer(), .send = Command::acquire, .seq = 2, .revoked = RevokeReason::deadline_passed);
  EXPECT_EQ(m.state(), LeaseState::candidate);
  expect_not_leader();
  EXPECT_EQ(m.holder(), "");
  const TimePoint resent = now;
  advance(5ms);
  EXPECT_OUT(acquired(2), .wake = renewal_grid(resent + kHeartbeat), .elected = true, .holder_changed = true);
  expect_leader(resent);
  EXPECT_EQ(m.token(), kToken);  // the token the script answered
}

TEST_F(LeaseMachineTest, RenewReplyAfterTheDeadlineDemotesThenReclaimsWithTheSameToken) {
  renewing();
  advance_to(kT0 + kLease - 1ns);
  EXPECT_OUT(timer(), .wake = kT0 + kLease);
  expect_leader(kT0);
  advance(1ns);
  // The renew is still in flight: demote, but send nothing until it is answered.
  EXPECT_OUT(timer(), .revoked = RevokeReason::deadline_passed);
  EXPECT_EQ(m.state(), LeaseState::candidate);
  expect_not_leader();
  EXPECT_EQ(m.in_flight(), Command::renew);
  advance(200ms);
  EXPECT_OUT(timer());
  // The late confirmation does not revive the term; it re-claims at once.
  EXPECT_OUT(renewed(2), .send = Command::acquire, .seq = 3);
  expect_not_leader();
  const TimePoint reclaim_sent = now;
  advance(15ms);
  EXPECT_OUT(acquired(3, kToken), .wake = renewal_grid(reclaim_sent + kHeartbeat), .elected = true, .holder_changed = true);
  expect_leader(reclaim_sent);
  EXPECT_EQ(m.token(), kToken);
  EXPECT_EQ(m.term_started(), reclaim_sent);
}

TEST_F(LeaseMachineTest, RenewReplyPastItsOwnDeadlineDemotesAndReclaims) {
  renewing();
  const TimePoint renew_sent = now;
  advance_to(renew_sent + kLease);  // no timer in between: even this renewal's lease is over
  EXPECT_OUT(renewed(2), .send = Command::acquire, .seq = 3, .revoked = RevokeReason::deadline_passed);
  expect_not_leader();
}

// No timer fired at the old deadline (both were due at once and the reply was
// handled first). The renewal was sent before the old deadline and confirms a
// lease until its own send instant + 4948ms, so the term goes on; the renew
// is overdue by then, so the next one goes out at once.
TEST_F(LeaseMachineTest, RenewReplyPastTheOldDeadlineWithoutATimerKeepsTheTerm) {
  renewing();
  const TimePoint renew_sent = now;
  advance_to(kT0 + kLease + 100ms);
  EXPECT_OUT(renewed(2), .send = Command::renew, .seq = 3, .wake = renew_sent + kLease);
  expect_leader(renew_sent);
}

TEST_F(LeaseMachineTest, RenewRefusedRevokesAndAcquiresAtOnce) {
  renewing();
  advance(30ms);
  EXPECT_OUT(renewed(2, false), .send = Command::acquire, .seq = 3, .revoked = RevokeReason::renew_refused);
  EXPECT_EQ(m.state(), LeaseState::candidate);
  expect_not_leader();
  EXPECT_EQ(m.holder(), "");
  EXPECT_EQ(m.in_flight(), Command::acquire);
  const TimePoint sent = now;
  advance(10ms);
  // Overwritten by hand: the new holder is seen; without notices, poll.
  EXPECT_OUT(held_by(3, "other", 4000), .wake = now + kRetry, .holder_changed = true);
  EXPECT_EQ(m.holder(), "other");
  EXPECT_LT(now + kRetry, sent + 4001ms);
}

void LeaseMachineTest::renew_failure_demotes(Failure failure, RevokeReason reason) {
  renewing();
  advance(30ms);
  const TimePoint failed_at = now;
  EXPECT_OUT(failed(2, failure), .wake = failed_at + kRetry, .revoked = reason);
  EXPECT_EQ(m.state(), LeaseState::candidate);
  expect_not_leader();
  EXPECT_EQ(m.in_flight(), Command::none);
  advance_to(failed_at + kRetry - 1ms);
  EXPECT_OUT(timer(), .wake = failed_at + kRetry);
  EXPECT_OUT(notices(false), .wake = failed_at + kRetry);
  advance(1ms);
  EXPECT_OUT(timer(), .send = Command::acquire, .seq = 3);
  const TimePoint reclaim_sent = now;
  advance(5ms);
  EXPECT_OUT(acquired(3, kToken), .wake = renewal_grid(reclaim_sent + kHeartbeat), .elected = true, .holder_changed = true);
  expect_leader(reclaim_sent);
  EXPECT_EQ(m.token(), kToken);
}

TEST_F(LeaseMachineTest, RenewErrorRevokesAndReclaimsAfterTheRetryInterval) {
  renew_failure_demotes(Failure::error, RevokeReason::renew_failed);
}

TEST_F(LeaseMachineTest, RenewTimeoutRevokesAndReclaimsAfterTheRetryInterval) {
  renew_failure_demotes(Failure::timeout, RevokeReason::timeout);
}

TEST_F(LeaseMachineTest, RenewTimeoutThenConnectionResetRevokesOnlyOnce) {
  renewing();
  advance(500ms);
  EXPECT_OUT(failed(2, Failure::timeout), .wake = now + kRetry, .revoked = RevokeReason::timeout);
  EXPECT_OUT(disconnected(true));
  EXPECT_EQ(m.state(), LeaseState::disconnected);
  advance(100ms);
  EXPECT_OUT(connected(), .send = Command::acquire, .seq = 3);
}

TEST_F(LeaseMachineTest, FailureOfTheRenewAfterTheDeadlineDoesNotRevokeTwice) {
  renewing();
  advance_to(kT0 + kLease);
  EXPECT_OUT(timer(), .revoked = RevokeReason::deadline_passed);
  advance(100ms);
  EXPECT_OUT(failed(2, Failure::timeout), .wake = now + kRetry);
  expect_not_leader();
}

TEST_F(LeaseMachineTest, FreshAcquisitionAfterLosingTheKeyTakesTheNewToken) {
  renewing();
  EXPECT_OUT(renewed(2, false), .send = Command::acquire, .seq = 3, .revoked = RevokeReason::renew_refused);
  advance(5ms);
  EXPECT_OUT(acquired(3, kToken + 1), .wake = renewal_grid(kT0 + kHeartbeat + kHeartbeat), .elected = true,
             .holder_changed = true);
  EXPECT_EQ(m.token(), kToken + 1);
}

// ---------------------------------------------------------------------------
// Connection loss

TEST_F(LeaseMachineTest, ConnectionLostWhileLeaderRevokesAndIgnoresLateReplies) {
  renewing();
  advance(20ms);
  EXPECT_OUT(disconnected(), .revoked = RevokeReason::connection_lost);
  EXPECT_EQ(m.state(), LeaseState::disconnected);
  expect_not_leader();
  EXPECT_EQ(m.in_flight(), Command::none);
  EXPECT_EQ(m.holder(), "");
  advance(10ms);
  // Replies to commands of the lost connection carry stale seqs.
  EXPECT_OUT(renewed(2));
  EXPECT_OUT(renewed(2, false));
  EXPECT_OUT(failed(2));
  EXPECT_OUT(acquired(1));
  EXPECT_OUT(release_done(2));
  EXPECT_OUT(timer());
  EXPECT_OUT(notice());
  EXPECT_EQ(m.state(), LeaseState::disconnected);
  expect_not_leader();
  advance(3s);
  EXPECT_OUT(connected(), .send = Command::acquire, .seq = 3);
  const TimePoint sent = now;
  advance(3ms);
  EXPECT_OUT(acquired(3), .wake = renewal_grid(sent + kHeartbeat), .elected = true, .holder_changed = true);
  expect_leader(sent);
}

TEST_F(LeaseMachineTest, ConnectionResetByATimeoutWhileLeaderRevokesWithTimeout) {
  lead();
  advance(1s);
  EXPECT_OUT(disconnected(true), .revoked = RevokeReason::timeout);
  EXPECT_EQ(m.state(), LeaseState::disconnected);
  expect_not_leader();
}

TEST_F(LeaseMachineTest, ConnectionLostWhileCandidateIgnoresTheAcquireReply) {
  campaign();
  advance(5ms);
  EXPECT_OUT(disconnected());
  EXPECT_EQ(m.state(), LeaseState::disconnected);
  EXPECT_EQ(m.in_flight(), Command::none);
  EXPECT_OUT(acquired(1));
  expect_not_leader();
  advance(1s);
  EXPECT_OUT(connected(), .send = Command::acquire, .seq = 2);
}

TEST_F(LeaseMachineTest, ConnectionLostWhileWaitingCancelsTheWake) {
  campaign();
  advance(5ms);
  EXPECT_OUT(held_by(1, "other", 3000), .wake = now + kRetry, .holder_changed = true);
  EXPECT_OUT(disconnected());
  advance(10s);
  EXPECT_OUT(timer());
  EXPECT_OUT(connected(), .send = Command::acquire, .seq = 2);
}

// ---------------------------------------------------------------------------
// Standbys

TEST_F(LeaseMachineTest, ForeignHolderWithALongerTtlIsCheckedAgainAfterOneOfOurs) {
  // A key deleted by hand sends no notice, and another implementation may
  // use a far longer TTL: never wait longer than our own ttl.
  EXPECT_OUT(start());
  EXPECT_OUT(notices(true));
  EXPECT_OUT(connected(), .send = Command::acquire, .seq = 1);
  advance(20ms);
  EXPECT_OUT(held_by(1, "other", 600000), .wake = now + kTtl, .holder_changed = true);
  advance(kTtl);
  EXPECT_OUT(timer(), .send = Command::acquire, .seq = 2);
}

TEST_F(LeaseMachineTest, ForeignHolderWithNoticesWaitsUntilItsLeaseCanHaveExpired) {
  EXPECT_OUT(start());
  EXPECT_OUT(notices(true));
  EXPECT_TRUE(m.notices_available());
  EXPECT_OUT(connected(), .send = Command::acquire, .seq = 1);
  advance(20ms);
  // PTTL was read after kT0: the holder's lease can end at kT0 + 3001ms at
  // the earliest. One more look lapse_check before that, on the grid.
  EXPECT_OUT(held_by(1, "other", 3000), .wake = kT0 + 3001ms - LeaseMachine::lapse_check, .holder_changed = true);
  EXPECT_EQ(m.holder(), "other");
  EXPECT_EQ(m.state(), LeaseState::candidate);
  EXPECT_EQ(m.in_flight(), Command::none);
  expect_not_leader();
  advance_to(kT0 + 2995ms);
  EXPECT_OUT(timer(), .wake = kT0 + 3001ms - LeaseMachine::lapse_check);
  advance(1ms);
  EXPECT_OUT(timer(), .send = Command::acquire, .seq = 2);
  const TimePoint look = now;
  advance(1ms);
  // Not renewed: 4 ms left. An exact wake at its end.
  EXPECT_OUT(held_by(2, "other", 4), .wake = look + 5ms, .exact_wake = true);
  advance(3ms);
  EXPECT_OUT(timer(), .wake = look + 5ms, .exact_wake = true);
  advance(1ms);
  EXPECT_OUT(timer(), .send = Command::acquire, .seq = 3);
  const TimePoint sent = now;
  advance(1ms);
  EXPECT_OUT(acquired(3, kToken + 1), .wake = renewal_grid(sent + kHeartbeat), .elected = true, .holder_changed = true);
  expect_leader(sent);
  EXPECT_EQ(m.token(), kToken + 1);
}

// A live holder renews long before its lease's last lapse_check: the look
// then finds a fresh lease, and the wait goes on on the grid.
TEST_F(LeaseMachineTest, AFreshLeaseSeenAtTheLastLookIsWaitedForOnTheGrid) {
  EXPECT_OUT(start());
  EXPECT_OUT(notices(true));
  EXPECT_OUT(connected(), .send = Command::acquire, .seq = 1);
  advance(1ms);
  EXPECT_OUT(held_by(1, "other", 3000), .wake = kT0 + 3001ms - LeaseMachine::lapse_check, .holder_changed = true);
  advance_to(kT0 + 3001ms - LeaseMachine::lapse_check);
  EXPECT_OUT(timer(), .send = Command::acquire, .seq = 2);
  const TimePoint look = now;
  advance(1ms);
  EXPECT_OUT(held_by(2, "other", 2000), .wake = look + 2001ms - LeaseMachine::lapse_check);
  // A lease at most lapse_check from its end is waited for exactly, and a
  // loss of notices ends that (a poll at the retry interval is no lapse).
  advance_to(look + 2001ms - LeaseMachine::lapse_check);
  EXPECT_OUT(timer(), .send = Command::acquire, .seq = 3);
  const TimePoint last = now;
  advance(1ms);
  EXPECT_OUT(held_by(3, "other", 5), .wake = last + 6ms, .exact_wake = true);
  EXPECT_OUT(notices(false), .wake = last + 6ms);
}

TEST_F(LeaseMachineTest, ForeignHolderWithoutNoticesPollsAtTheRetryInterval) {
  campaign();
  advance(20ms);
  EXPECT_OUT(held_by(1, "other", 3000), .wake = kT0 + 20ms + kRetry, .holder_changed = true);
  advance_to(kT0 + 20ms + kRetry);
  EXPECT_OUT(timer(), .send = Command::acquire, .seq = 2);
  advance(20ms);
  EXPECT_OUT(held_by(2, "other", 1980), .wake = now + kRetry);  // same holder: no change
  advance(kRetry);
  EXPECT_OUT(timer(), .send = Command::acquire, .seq = 3);
  const TimePoint sent3 = now;
  advance(20ms);
  // A lease that ends before the next poll is tried when it ends.
  EXPECT_OUT(held_by(3, "other", 300), .wake = sent3 + 301ms - LeaseMachine::lapse_check);
}

TEST_F(LeaseMachineTest, ForeignHolderWithoutTtlPollsAtTheRetryInterval) {
  EXPECT_OUT(start());
  EXPECT_OUT(notices(true));
  EXPECT_OUT(connected(), .send = Command::acquire, .seq = 1);
  advance(20ms);
  EXPECT_OUT(held_by(1, "other", -1), .wake = now + kRetry, .holder_changed = true);
  advance(kRetry);
  EXPECT_OUT(timer(), .send = Command::acquire, .seq = 2);
}

TEST_F(LeaseMachineTest, ForeignHolderWithZeroPttlIsTriedAgainAtOnceIfAlreadyDue) {
  EXPECT_OUT(start());
  EXPECT_OUT(notices(true));
  EXPECT_OUT(connected(), .send = Command::acquire, .seq = 1);
  advance(20ms);  // kT0 + 0 + 1ms is already past
  EXPECT_OUT(held_by(1, "other", 0), .send = Command::acquire, .seq = 2, .holder_changed = true);
}

TEST_F(LeaseMachineTest, HolderChangedOnlyWhenTheHolderChanges) {
  campaign();
  advance(5ms);
  EXPECT_OUT(held_by(1, "a", 3000), .wake = now + kRetry, .holder_changed = true);
  advance(kRetry);
  EXPECT_OUT(timer(), .send = Command::acquire, .seq = 2);
  advance(5ms);
  EXPECT_OUT(held_by(2, "a", 2000), .wake = now + kRetry);
  advance(kRetry);
  EXPECT_OUT(timer(), .send = Command::acquire, .seq = 3);
  advance(5ms);
  EXPECT_OUT(held_by(3, "b", 4000), .wake = now + kRetry, .holder_changed = true);
  EXPECT_EQ(m.holder(), "b");
}

TEST_F(LeaseMachineTest, ReleaseNoticeAcquiresAtOnce) {
  EXPECT_OUT(start());
  EXPECT_OUT(notices(true));
  EXPECT_OUT(connected(), .send = Command::acquire, .seq = 1);
  advance(20ms);
  EXPECT_OUT(held_by(1, "other", 3000), .wake = kT0 + 3001ms - LeaseMachine::lapse_check, .holder_changed = true);
  advance(500ms);
  EXPECT_OUT(notice(), .send = Command::acquire, .seq = 2);
  EXPECT_EQ(m.holder(), "");  // released: unknown until the reply says
  const TimePoint sent = now;
  advance(2ms);
  EXPECT_OUT(acquired(2, kToken + 1), .wake = renewal_grid(sent + kHeartbeat), .elected = true, .holder_changed = true);
  expect_leader(sent);
}

TEST_F(LeaseMachineTest, ReleaseNoticeWhileAnAcquireIsInFlightSendsNothingNew) {
  EXPECT_OUT(start());
  EXPECT_OUT(notices(true));
  EXPECT_OUT(connected(), .send = Command::acquire, .seq = 1);
  advance(5ms);
  EXPECT_OUT(notice());
  EXPECT_EQ(m.in_flight(), Command::acquire);
  EXPECT_EQ(m.state(), LeaseState::candidate);
  advance(5ms);
  EXPECT_OUT(acquired(1), .wake = renewal_grid(kT0 + kHeartbeat), .elected = true, .holder_changed = true);
}

// A release notice that arrives while an acquire is in flight is not lost
// when that acquire's reply (which ran just before the release) names the old
// holder: the standby looks again at once instead of waiting out the PTTL.
TEST_F(LeaseMachineTest, ReleaseNoticeDuringAnAcquireIsNotLost) {
  EXPECT_OUT(start());
  EXPECT_OUT(notices(true));
  EXPECT_OUT(connected(), .send = Command::acquire, .seq = 1);
  advance(5ms);
  EXPECT_OUT(notice());
  advance(1ms);
  EXPECT_OUT(held_by(1, "other", 3000), .send = Command::acquire, .seq = 2, .holder_changed = true);
}

// The same for notices becoming available while an acquire is in flight.
TEST_F(LeaseMachineTest, NoticesBecomingAvailableDuringAnAcquireAreNotLost) {
  campaign();
  advance(5ms);
  EXPECT_OUT(notices(true));
  advance(1ms);
  EXPECT_OUT(held_by(1, "other", 3000), .send = Command::acquire, .seq = 2, .holder_changed = true);
}

TEST_F(LeaseMachineTest, ReleaseNoticeNamingThisInstanceWhileLeaderDemotesAndHoldsOff) {
  // Someone released our lease as us (an operator's step-down): stop claiming
  // it at once instead of at the next renewal, and let a standby win.
  lead();
  advance(100ms);
  EXPECT_OUT(notice("someone-else"), .wake = renewal_grid(kT0 + kHeartbeat));  // not ours: nothing
  expect_leader(kT0);
  EXPECT_OUT(notice("me"), .wake = now + kHoldOff, .revoked = RevokeReason::released_elsewhere);
  expect_not_leader();
  EXPECT_EQ(m.state(), LeaseState::held_off);
  advance(kHoldOff);
  EXPECT_OUT(timer(), .send = Command::acquire, .seq = 2);
}

// With no step-down hold-off this instance may win the lease back before the
// notice of its own release arrives (the notice travels on the subscriber
// connection): that late notice must not end the new term, while a later
// notice naming it (an operator's release) still does.
class LeaseMachineNoHoldOff : public ::testing::Test {
 protected:
  static constexpr LeaseTiming kNoHoldOff{kTtl, kHeartbeat, kRetry, kDrift, Duration::zero()};
  LeaseMachine m{kNoHoldOff, "me"};
  TimePoint now = kT0;

  // Leads with token 1, steps down (the release deleting the key or not) and
  // leads again with token 2 at once.
  void step_down_and_lead_again(bool release_deleted) {
    m.start(now);
    m.on_notices_available(now, true);
    Output out = m.on_connected(now);
    ASSERT_EQ(out.send, Command::acquire);
    out = m.on_acquire_reply(now, out.seq, AcquireReply{true, "me", 5000, 1});
    ASSERT_TRUE(m.is_leader());
    out = m.step_down(now);
    ASSERT_EQ(out.send, Command::release);
    out = m.on_release_reply(now, out.seq, release_deleted);
    ASSERT_TRUE(out.released);
    if (out.send != Command::acquire) out = m.on_timer(now);  // the hold-off is over at once
    ASSERT_EQ(out.send, Command::acquire);
    now += 1ms;
    out = m.on_acquire_reply(now, out.seq, AcquireReply{true, "me", 5000, 2});
    ASSERT_TRUE(out.elected);
  }
};

TEST_F(LeaseMachineNoHoldOff, OwnReleaseNoticeArrivingAfterTheReacquireDoesNotRevoke) {
  step_down_and_lead_again(true);
  Output out = m.on_release_notice(now, "me");  // our own release's notice, late
  EXPECT_FALSE(out.revoked.has_value());
  EXPECT_TRUE(m.is_leader());
  out = m.on_release_notice(now, "me");  // a release nobody here made
  EXPECT_EQ(out.revoked, RevokeReason::released_elsewhere);
  EXPECT_FALSE(m.is_leader());
}

// A release that found the key gone deleted nothing: no notice follows, so a
// notice naming this instance afterwards is news.
TEST_F(LeaseMachineNoHoldOff, AReleaseThatDeletedNothingExpectsNoNotice) {
  step_down_and_lead_again(false);
  EXPECT_EQ(m.on_release_notice(now, "me").revoked, RevokeReason::released_elsewhere);
}

TEST_F(LeaseMachineTest, ReleaseNoticeIsIgnoredOutsideTheCandidateState) {
  EXPECT_OUT(start());
  EXPECT_OUT(notice());  // disconnected
  EXPECT_EQ(m.state(), LeaseState::disconnected);
  EXPECT_OUT(connected(), .send = Command::acquire, .seq = 1);
  advance(10ms);
  EXPECT_OUT(acquired(1), .wake = renewal_grid(kT0 + kHeartbeat), .elected = true, .holder_changed = true);
  EXPECT_OUT(notice(), .wake = renewal_grid(kT0 + kHeartbeat));  // leader
  expect_leader(kT0);
}

TEST_F(LeaseMachineTest, NoticesBecomingAvailableTriggersAnImmediateAttempt) {
  campaign();
  advance(20ms);
  EXPECT_OUT(held_by(1, "other", 3000), .wake = now + kRetry, .holder_changed = true);
  advance(300ms);
  const TimePoint sent = now;
  EXPECT_OUT(notices(true), .send = Command::acquire, .seq = 2);
  EXPECT_TRUE(m.notices_available());
  advance(5ms);
  // While the acquire is in flight nothing more is sent...
  EXPECT_OUT(notices(true));
  // ...but its reply may predate a release that went unheard: look again.
  EXPECT_OUT(held_by(2, "other", 2600), .send = Command::acquire, .seq = 3);
  (void)sent;
}

TEST_F(LeaseMachineTest, NoticesBecomingUnavailableClampsTheNextAttemptToTheRetryInterval) {
  EXPECT_OUT(start());
  EXPECT_OUT(notices(true));
  EXPECT_OUT(connected(), .send = Command::acquire, .seq = 1);
  advance(20ms);
  EXPECT_OUT(held_by(1, "other", 3000), .wake = kT0 + 3001ms - LeaseMachine::lapse_check, .holder_changed = true);
  advance(100ms);
  EXPECT_OUT(notices(false), .wake = now + kRetry);
  EXPECT_FALSE(m.notices_available());
  advance(kRetry);
  EXPECT_OUT(timer(), .send = Command::acquire, .seq = 2);
}

TEST_F(LeaseMachineTest, NoticesBecomingUnavailableNeverPostponesAnEarlierAttempt) {
  EXPECT_OUT(start());
  EXPECT_OUT(notices(true));
  EXPECT_OUT(connected(), .send = Command::acquire, .seq = 1);
  advance(20ms);
  EXPECT_OUT(held_by(1, "other", 300), .wake = kT0 + 296ms, .holder_changed = true);
  advance(100ms);
  EXPECT_OUT(notices(false), .wake = kT0 + 296ms);
}

TEST_F(LeaseMachineTest, NoticesTogglingWhileLeaderChangesNothing) {
  lead();
  EXPECT_OUT(notices(true), .wake = renewal_grid(kT0 + kHeartbeat));
  EXPECT_OUT(notices(false), .wake = renewal_grid(kT0 + kHeartbeat));
  expect_leader(kT0);
}

// ---------------------------------------------------------------------------
// Step-down

TEST_F(LeaseMachineTest, StepDownWhileLeaderReleasesAndHoldsOff) {
  lead();
  advance(500ms);
  const TimePoint t = now;
  EXPECT_OUT(step_down(), .send = Command::release, .seq = 2, .wake = t + kHoldOff,
             .revoked = RevokeReason::stepped_down);
  EXPECT_EQ(m.state(), LeaseState::held_off);
  expect_not_leader();
  EXPECT_EQ(m.holder(), "");
  EXPECT_EQ(m.in_flight(), Command::release);
  advance(5ms);
  EXPECT_OUT(release_done(2), .wake = t + kHoldOff, .released = true);
  EXPECT_EQ(m.in_flight(), Command::none);
  advance(5ms);
  // Our own release notice, a timer and notices coming back: no acquire yet.
  EXPECT_OUT(notice(), .wake = t + kHoldOff);
  EXPECT_OUT(notices(true), .wake = t + kHoldOff);
  advance_to(t + kHoldOff - 1ms);
  EXPECT_OUT(timer(), .wake = t + kHoldOff);
  EXPECT_EQ(m.state(), LeaseState::held_off);
  advance(1ms);
  EXPECT_OUT(timer(), .send = Command::acquire, .seq = 3);
  EXPECT_EQ(m.state(), LeaseState::candidate);
}

TEST_F(LeaseMachineTest, StepDownWithARenewInFlightIgnoresTheRenewReply) {
  renewing();
  advance(10ms);
  const TimePoint t = now;
  EXPECT_OUT(step_down(), .send = Command::release, .seq = 3, .wake = t + kHoldOff,
             .revoked = RevokeReason::stepped_down);
  advance(5ms);
  EXPECT_OUT(renewed(2), .wake = t + kHoldOff);
  EXPECT_OUT(renewed(2, false), .wake = t + kHoldOff);
  EXPECT_OUT(failed(2, Failure::timeout), .wake = t + kHoldOff);
  expect_not_leader();
  EXPECT_OUT(release_done(3), .wake = t + kHoldOff, .released = true);
}

TEST_F(LeaseMachineTest, HoldOffEndingBeforeTheReleaseReplyWaitsForIt) {
  lead();
  const TimePoint t = now;
  EXPECT_OUT(step_down(), .send = Command::release, .seq = 2, .wake = t + kHoldOff,
             .revoked = RevokeReason::stepped_down);
  advance_to(t + kHoldOff);
  EXPECT_OUT(timer());  // candidate again, but the release is still on the line
  EXPECT_EQ(m.state(), LeaseState::candidate);
  advance(50ms);
  EXPECT_OUT(release_done(2), .send = Command::acquire, .seq = 3, .released = true);
}

TEST_F(LeaseMachineTest, StepDownWhileAnAcquireIsInFlightReleasesAndIgnoresItsReply) {
  campaign();
  advance(5ms);
  const TimePoint t = now;
  EXPECT_OUT(step_down(), .send = Command::release, .seq = 2, .wake = t + kHoldOff);
  EXPECT_EQ(m.state(), LeaseState::held_off);
  advance(5ms);
  // The acquire ran first and succeeded; the release behind it deletes the key.
  EXPECT_OUT(acquired(1), .wake = t + kHoldOff);
  expect_not_leader();
  EXPECT_EQ(m.state(), LeaseState::held_off);
  EXPECT_OUT(release_done(2), .wake = t + kHoldOff, .released = true);
  advance_to(t + kHoldOff);
  EXPECT_OUT(timer(), .send = Command::acquire, .seq = 3);
}

TEST_F(LeaseMachineTest, StepDownWhileWaitingAsStandbyReleasesAnyStaleOwnLease) {
  campaign();
  advance(5ms);
  EXPECT_OUT(held_by(1, "other", 3000), .wake = now + kRetry, .holder_changed = true);
  advance(100ms);
  const TimePoint t = now;
  EXPECT_OUT(step_down(), .send = Command::release, .seq = 2, .wake = t + kHoldOff);
  EXPECT_EQ(m.state(), LeaseState::held_off);
  EXPECT_OUT(release_done(2), .wake = t + kHoldOff, .released = true);
}

TEST_F(LeaseMachineTest, StepDownDuringTheHoldOffExtendsIt) {
  lead();
  const TimePoint t = now;
  EXPECT_OUT(step_down(), .send = Command::release, .seq = 2, .wake = t + kHoldOff,
             .revoked = RevokeReason::stepped_down);
  EXPECT_OUT(release_done(2), .wake = t + kHoldOff, .released = true);
  advance(600ms);
  const TimePoint t2 = now;
  EXPECT_OUT(step_down(), .send = Command::release, .seq = 3, .wake = t2 + kHoldOff);
  advance_to(t + kHoldOff);
  EXPECT_OUT(timer(), .wake = t2 + kHoldOff);
  EXPECT_OUT(release_done(3), .wake = t2 + kHoldOff, .released = true);
  advance_to(t2 + kHoldOff);
  EXPECT_OUT(timer(), .send = Command::acquire, .seq = 4);
}

TEST_F(LeaseMachineTest, StepDownReleaseFailureStillFinishesTheRelease) {
  lead();
  const TimePoint t = now;
  EXPECT_OUT(step_down(), .send = Command::release, .seq = 2, .wake = t + kHoldOff,
             .revoked = RevokeReason::stepped_down);
  advance(5ms);
  EXPECT_OUT(failed(2), .wake = t + kHoldOff, .released = true);
  EXPECT_EQ(m.state(), LeaseState::held_off);
}

// The release fails with the connection (as in on_failure), so the step-down
// must finish: whoever waits for `released` must not wait forever.
TEST_F(LeaseMachineTest, ConnectionLostDuringTheStepDownReleaseFinishesTheRelease) {
  lead();
  const TimePoint t = now;
  EXPECT_OUT(step_down(), .send = Command::release, .seq = 2, .wake = t + kHoldOff,
             .revoked = RevokeReason::stepped_down);
  advance(5ms);
  EXPECT_OUT(disconnected(), .released = true);
  EXPECT_EQ(m.state(), LeaseState::disconnected);
  EXPECT_EQ(m.in_flight(), Command::none);
  EXPECT_OUT(release_done(2));  // stale now
  advance(100ms);
  EXPECT_OUT(connected(), .wake = t + kHoldOff);  // the hold-off still applies
  EXPECT_EQ(m.state(), LeaseState::held_off);
  advance_to(t + kHoldOff);
  EXPECT_OUT(timer(), .send = Command::acquire, .seq = 3);
}

TEST_F(LeaseMachineTest, StepDownWhileDisconnectedFinishesAtOnceAndHoldsOffAfterReconnect) {
  EXPECT_OUT(start());
  const TimePoint t = now;
  EXPECT_OUT(step_down(), .released = true);
  EXPECT_EQ(m.state(), LeaseState::disconnected);
  advance(400ms);
  EXPECT_OUT(connected(), .wake = t + kHoldOff);
  EXPECT_EQ(m.state(), LeaseState::held_off);
  EXPECT_OUT(notice(), .wake = t + kHoldOff);
  advance_to(t + kHoldOff - 1ms);
  EXPECT_OUT(timer(), .wake = t + kHoldOff);
  advance(1ms);
  EXPECT_OUT(timer(), .send = Command::acquire, .seq = 1);
  EXPECT_EQ(m.state(), LeaseState::candidate);
}

TEST_F(LeaseMachineTest, StepDownWhileDisconnectedWithTheHoldOffOverAtReconnectAcquiresAtOnce) {
  EXPECT_OUT(start());
  const TimePoint t = now;
  EXPECT_OUT(step_down(), .released = true);
  advance_to(t + kHoldOff);
  EXPECT_OUT(connected(), .send = Command::acquire, .seq = 1);
}

TEST_F(LeaseMachineTest, StepDownBeforeStartOrAfterStopFinishesAtOnce) {
  EXPECT_OUT(step_down(), .released = true);
  EXPECT_EQ(m.state(), LeaseState::idle);
  EXPECT_OUT(stop(), .stopped = true);
  EXPECT_OUT(step_down(), .released = true);
  EXPECT_EQ(m.state(), LeaseState::stopped);
}

// ---------------------------------------------------------------------------
// Stop

TEST_F(LeaseMachineTest, StopWhileLeaderRevokesReleasesAndStops) {
  lead();
  advance(100ms);
  EXPECT_OUT(stop(), .send = Command::release, .seq = 2, .revoked = RevokeReason::stopped);
  EXPECT_EQ(m.state(), LeaseState::stopping);
  expect_not_leader();
  advance(5ms);
  EXPECT_OUT(release_done(2), .released = true, .stopped = true);
  EXPECT_EQ(m.state(), LeaseState::stopped);
  EXPECT_EQ(m.in_flight(), Command::none);
  advance(10s);
  EXPECT_OUT(timer());
  EXPECT_OUT(notice());
  EXPECT_OUT(connected());
  EXPECT_OUT(disconnected());
  EXPECT_OUT(stop());
  EXPECT_EQ(m.state(), LeaseState::stopped);
}

TEST_F(LeaseMachineTest, StopWithARenewInFlightIgnoresTheRenewReply) {
  renewing();
  advance(10ms);
  EXPECT_OUT(stop(), .send = Command::release, .seq = 3, .revoked = RevokeReason::stopped);
  advance(5ms);
  EXPECT_OUT(renewed(2));
  EXPECT_OUT(renewed(2, false));
  EXPECT_OUT(failed(2, Failure::timeout));
  EXPECT_EQ(m.state(), LeaseState::stopping);
  expect_not_leader();
  EXPECT_OUT(release_done(3), .released = true, .stopped = true);
}

TEST_F(LeaseMachineTest, StopWhileAnAcquireIsInFlightReleasesAndIgnoresItsReply) {
  campaign();
  advance(5ms);
  EXPECT_OUT(stop(), .send = Command::release, .seq = 2);
  EXPECT_EQ(m.state(), LeaseState::stopping);
  EXPECT_OUT(acquired(1));
  expect_not_leader();
  EXPECT_OUT(release_done(2), .released = true, .stopped = true);
}

TEST_F(LeaseMachineTest, StopDuringTheHoldOffReleasesAgainAndStops) {
  lead();
  EXPECT_OUT(step_down(), .send = Command::release, .seq = 2, .wake = now + kHoldOff,
             .revoked = RevokeReason::stepped_down);
  advance(5ms);
  EXPECT_OUT(stop(), .send = Command::release, .seq = 3);
  EXPECT_EQ(m.state(), LeaseState::stopping);
  EXPECT_OUT(release_done(2));  // replaced
  EXPECT_OUT(release_done(3), .released = true, .stopped = true);
}

TEST_F(LeaseMachineTest, StopWhileDisconnectedStopsAtOnce) {
  lead();
  EXPECT_OUT(disconnected(), .revoked = RevokeReason::connection_lost);
  advance(5ms);
  EXPECT_OUT(stop(), .stopped = true);
  EXPECT_EQ(m.state(), LeaseState::stopped);
  EXPECT_OUT(connected());
  EXPECT_EQ(m.state(), LeaseState::stopped);
}

TEST_F(LeaseMachineTest, StopBeforeStartStopsAtOnce) {
  EXPECT_OUT(stop(), .stopped = true);
  EXPECT_EQ(m.state(), LeaseState::stopped);
}

TEST_F(LeaseMachineTest, StopTwiceIsIdempotent) {
  lead();
  EXPECT_OUT(stop(), .send = Command::release, .seq = 2, .revoked = RevokeReason::stopped);
  advance(5ms);
  EXPECT_OUT(stop());
  EXPECT_EQ(m.state(), LeaseState::stopping);
  EXPECT_EQ(m.in_flight(), Command::release);
  EXPECT_OUT(release_done(2), .released = true, .stopped = true);
  EXPECT_OUT(stop());
}

TEST_F(LeaseMachineTest, ConnectionLostWhileStoppingStops) {
  lead();
  EXPECT_OUT(stop(), .send = Command::release, .seq = 2, .revoked = RevokeReason::stopped);
  advance(5ms);
  EXPECT_OUT(disconnected(true), .released = true, .stopped = true);  // no second revoked
  EXPECT_EQ(m.state(), LeaseState::stopped);
  EXPECT_OUT(release_done(2));
}

TEST_F(LeaseMachineTest, StopReleaseFailureStillStops) {
  lead();
  EXPECT_OUT(stop(), .send = Command::release, .seq = 2, .revoked = RevokeReason::stopped);
  advance(5ms);
  EXPECT_OUT(failed(2, Failure::timeout), .released = true, .stopped = true);
  EXPECT_EQ(m.state(), LeaseState::stopped);
}

TEST_F(LeaseMachineTest, StartAfterStopCampaignsAgainWithFreshSeqs) {
  lead();
  EXPECT_OUT(stop(), .send = Command::release, .seq = 2, .revoked = RevokeReason::stopped);
  EXPECT_OUT(release_done(2), .released = true, .stopped = true);
  advance(1s);
  EXPECT_OUT(start());
  EXPECT_EQ(m.state(), LeaseState::disconnected);
  EXPECT_OUT(connected(), .send = Command::acquire, .seq = 3);
  const TimePoint sent = now;
  EXPECT_OUT(acquired(2));  // stale: the release's seq
  EXPECT_OUT(acquired(3, kToken + 1), .wake = renewal_grid(sent + kHeartbeat), .elected = true, .holder_changed = true);
  expect_leader(sent);
}

// ---------------------------------------------------------------------------
// Confirm mode: a lease counts only when enough replicas acknowledged it

// Too few replicas: the lease is kept, not led on, and renewed every retry
// interval; the first confirmed renewal starts the term with the acquire's
// token. Given back instead, every standby in turn would take it and spend a
// token, and the group's leader would change every retry.
TEST_F(LeaseMachineTest, UnconfirmedAcquireIsKeptAndRenewedUntilAReplicaAcknowledges) {
  campaign();
  advance(10ms);
  const TimePoint replied = now;
  EXPECT_OUT(m.on_acquire_reply(now, 1, AcquireReply{.acquired = true, .holder = "me", .pttl_ms = 5000,
                                                      .token = kToken, .confirmed = false}),
             .wake = replied + kRetry);
  expect_not_leader();
  EXPECT_EQ(m.state(), LeaseState::held_off);
  EXPECT_EQ(m.holder(), "");
  EXPECT_OUT(notice("other"), .wake = replied + kRetry);  // a notice does not end the claim

  advance_to(replied + kRetry);
  EXPECT_OUT(timer(), .send = Command::renew, .seq = 2);
  advance(10ms);
  const TimePoint still_too_few = now;
  EXPECT_OUT(m.on_renew_reply(now, 2, true, false), .wake = still_too_few + kRetry);
  expect_not_leader();

  advance_to(still_too_few + kRetry);
  EXPECT_OUT(timer(), .send = Command::renew, .seq = 3);
  advance(10ms);
  const TimePoint failed_at = now;
  EXPECT_OUT(failed(3), .wake = failed_at + kRetry);  // an error waits a retry interval too

  advance_to(failed_at + kRetry);
  EXPECT_OUT(timer(), .send = Command::renew, .seq = 4);
  const TimePoint sent = now;
  advance(10ms);
  EXPECT_OUT(renewed(4), .wake = renewal_grid(sent + kHeartbeat), .elected = true, .holder_changed = true);
  expect_leader(sent);
  EXPECT_EQ(m.token(), kToken) << "one token for the whole claim";
}

TEST_F(LeaseMachineTest, AnUnconfirmedClaimThatIsGoneIsCampaignedForAfresh) {
  campaign();
  advance(10ms);
  const TimePoint replied = now;
  m.on_acquire_reply(now, 1, AcquireReply{.acquired = true, .holder = "me", .pttl_ms = 5000, .token = kToken,
                                          .confirmed = false});
  advance_to(replied + kRetry);
  EXPECT_OUT(timer(), .send = Command::renew, .seq = 2);
  advance(10ms);
  EXPECT_OUT(renewed(2, false), .send = Command::acquire, .seq = 3);
  EXPECT_EQ(m.state(), LeaseState::candidate);
}

TEST_F(LeaseMachineTest, AnUnconfirmedClaimIsReleasedOnStopAndNotRenewedAfterADisconnect) {
  campaign();
  advance(10ms);
  m.on_acquire_reply(now, 1, AcquireReply{.acquired = true, .holder = "me", .pttl_ms = 5000, .token = kToken,
                                          .confirmed = false});
  EXPECT_OUT(disconnected());
  EXPECT_EQ(m.state(), LeaseState::disconnected);
  advance(2 * kRetry);
  EXPECT_OUT(connected(), .send = Command::acquire, .seq = 2);  // re-claimed by an acquire, not renewed
  advance(10ms);
  m.on_acquire_reply(now, 2, AcquireReply{.acquired = true, .holder = "me", .pttl_ms = 5000, .token = kToken + 1,
                                          .confirmed = false});
  EXPECT_OUT(m.stop(now), .send = Command::release, .seq = 3);
  EXPECT_EQ(m.state(), LeaseState::stopping);
}

TEST_F(LeaseMachineTest, UnconfirmedRenewalKeepsTheDeadlineAndRenewsAgainAtOnce) {
  renewing();
  advance(100ms);
  EXPECT_OUT(m.on_renew_reply(now, 2, true, false), .send = Command::renew, .seq = 3, .wake = kT0 + kLease);
  expect_leader(kT0);  // the deadline did not move
  const TimePoint resent = now;
  advance(100ms);
  // Resent 100 ms after it was due: the schedule stays, the deadline moves.
  EXPECT_OUT(renewed(3), .wake = renewal_grid(kT0 + 2 * kHeartbeat));
  expect_leader(resent);
  EXPECT_EQ(m.token(), kToken) << "the same term throughout";
}

TEST_F(LeaseMachineTest, RenewalsNeverConfirmedDemoteAtTheDeadline) {
  renewing();
  std::uint64_t seq = 2;
  while (now + 100ms < kT0 + kLease) {
    advance(100ms);
    const Output out = m.on_renew_reply(now, seq, true, false);
    ASSERT_EQ(out.send, Command::renew);
    seq = out.seq;
    expect_leader(kT0);
  }
  advance_to(kT0 + kLease);
  const Output out = timer();
  EXPECT_EQ(out.revoked, RevokeReason::deadline_passed);
  expect_not_leader();
}

// ---------------------------------------------------------------------------
// Clock skew between Redis nodes: the deadline keeps back drift + skew

// ElectorOptions with ttl 5000 ms (as kTtl) and `clock_skew`, the rest default.
leasehold::ElectorOptions options_with_skew(std::chrono::milliseconds clock_skew) {
  leasehold::ElectorOptions options;
  options.ttl = 5000ms;
  options.clock_skew = clock_skew;
  return options;
}

TEST(LeaseTimingFromOptions, WithoutASkewTheMarginIsTheDriftMargin) {
  const LeaseTiming timing = LeaseTiming::from(options_with_skew(0ms));
  EXPECT_EQ(timing.deadline_margin, kDrift);
  EXPECT_EQ(timing.heartbeat_interval, kHeartbeat);
}

// ttl 5000 ms, clock_skew 1000 ms: the default drift margin (52 ms) plus the
// skew, so a term confirmed by a command sent at S counts locally until
// S + 3948 ms. A replica whose clock runs 1000 ms ahead, once promoted,
// expires the key at S + 4000 - 1000 ms at the earliest: after that.
TEST(LeaseMachineClockSkew, TheDeadlineKeepsBackTheDriftMarginPlusTheSkew) {
  const LeaseTiming timing = LeaseTiming::from(options_with_skew(1000ms));
  ASSERT_EQ(timing.deadline_margin, 1052ms);
  constexpr Duration lease = 3948ms;
  LeaseMachine m{timing, "me"};
  TimePoint now = kT0;
  EXPECT_OUT(m.start(now));
  EXPECT_OUT(m.on_connected(now), .send = Command::acquire, .seq = 1);
  now += 10ms;
  EXPECT_OUT(m.on_acquire_reply(now, 1, AcquireReply{.acquired = true, .holder = "me", .pttl_ms = 5000, .token = 1}),
             .wake = renewal_grid(kT0 + kHeartbeat), .elected = true, .holder_changed = true);
  EXPECT_EQ(At{m.deadline()}, At{kT0 + lease});

  // A confirmed renewal moves the deadline to its send instant + 3948 ms.
  now = kT0 + kHeartbeat;
  EXPECT_OUT(m.on_timer(now), .send = Command::renew, .seq = 2, .wake = kT0 + lease);
  const TimePoint renewed_at = now;
  now += 30ms;
  EXPECT_OUT(m.on_renew_reply(now, 2, true), .wake = renewal_grid(renewed_at + kHeartbeat));
  EXPECT_EQ(At{m.deadline()}, At{renewed_at + lease});

  // The next renewal is never answered (a cut-off leader): the term ends at
  // that deadline, 1000 ms before the one without a skew.
  now = renewed_at + kHeartbeat;
  EXPECT_OUT(m.on_timer(now), .send = Command::renew, .seq = 3, .wake = renewed_at + lease);
  now = renewed_at + lease - 1ns;
  EXPECT_OUT(m.on_timer(now), .wake = renewed_at + lease);
  EXPECT_TRUE(m.is_leader());
  now += 1ns;
  EXPECT_OUT(m.on_timer(now), .revoked = RevokeReason::deadline_passed);
  EXPECT_FALSE(m.is_leader());
}

// ---------------------------------------------------------------------------
// Property test: random inputs from the whole input set, random time steps,
// replies with right and stale seqs. A model beside the machine tracks what a
// correct driver knows (what is on the line, when each command was sent, the
// events seen) and checks the invariants after every input.

enum class In : std::uint8_t {
  timer,
  timer_at_wake,
  start,
  stop,
  step_down,
  connected,
  disconnected,
  notice,
  notices_on,
  notices_off,
  reply,
  failure,
  stale,
};

constexpr std::array kInputNames = {"timer",      "timer_at_wake", "start",       "stop",   "step_down",
                                    "connected",  "disconnected",  "notice",      "notices_on",
                                    "notices_off", "reply",        "failure",     "stale"};

struct Coverage {
  std::map<RevokeReason, int> revoked;
  std::map<Command, int> sent;
  int elected = 0;
  int released = 0;
  int stopped = 0;
  int ignored_stale = 0;
};

class RandomRun {
 public:
  RandomRun(std::uint64_t seed, Coverage& coverage) : rng_(seed), coverage_(coverage) {}

  // Returns false after the first failed expectation.
  bool run(int steps) {
    for (int i = 0; i < steps; ++i) {
      step();
      if (::testing::Test::HasFailure()) {
        std::ostringstream tail;
        const std::size_t from = log_.size() > 40 ? log_.size() - 40 : 0;
        for (std::size_t j = from; j < log_.size(); ++j) tail << "  " << log_[j] << "\n";
        ADD_FAILURE() << "after step " << i << "; last inputs:\n" << tail.str();
        return false;
      }
    }
    return true;
  }

 private:
  struct Sent {
    Command command;
    TimePoint at;
  };

  std::uint64_t pick(std::uint64_t n) { return std::uniform_int_distribution<std::uint64_t>(0, n - 1)(rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  Duration ms(std::int64_t lo, std::int64_t hi) {
    return std::chrono::milliseconds(std::uniform_int_distribution<std::int64_t>(lo, hi)(rng_));
  }

  Duration time_step() {
    switch (pick(6)) {
      case 0: return Duration::zero();
      case 1: return 1ms;
      case 2: return Duration(1);  // one tick
      case 3: return ms(0, 200);
      case 4: return ms(0, 3000);
      default: return ms(0, 7000);
    }
  }

  In pick_input() {
    static constexpr std::array<double, 13> weights = {10, 15, 2, 2, 3, 8, 3, 4, 2, 2, 30, 5, 8};
    std::discrete_distribution<int> dist(weights.begin(), weights.end());
    return static_cast<In>(dist(rng_));
  }

  AcquireReply random_acquire_reply() {
    if (chance(0.5)) {
      return {.acquired = true, .holder = "me", .pttl_ms = 5000,
              .token = static_cast<std::int64_t>(1 + pick(100))};
    }
    static constexpr std::array<std::int64_t, 3> fixed = {-1, 0, 1};
    const std::int64_t pttl = chance(0.3) ? fixed[pick(3)] : static_cast<std::int64_t>(pick(5001));
    return {.acquired = false, .holder = chance(0.5) ? "a" : "b", .pttl_ms = pttl};
  }

  // A seq that is not on the line: an older one, zero, or one never used.
  std::uint64_t stale_seq() {
    std::vector<std::uint64_t> old;
    for (const auto& [seq, sent] : sent_) {
      if (!out_seq_ || seq != *out_seq_) old.push_back(seq);
    }
    switch (pick(4)) {
      case 0: return 0;
      case 1: return last_seq_ + 1 + pick(3);
      default: return old.empty() ? 0 : old[pick(old.size())];
    }
  }

  void step() {
    In in = pick_input();
    if (in == In::timer_at_wake) {
      if (wake_ && *wake_ > now_) {
        now_ = *wake_;
      } else {
        in = In::timer;
        now_ += time_step();
      }
    } else {
      now_ += time_step();
    }
    if ((in == In::reply || in == In::failure) && !out_seq_) in = In::stale;

    const LeaseState pre_state = m_.state();
    const bool pre_leader = leader_;
    std::ostringstream what;
    what << show(now_) << " " << kInputNames[static_cast<std::size_t>(in)];

    Output out;
    // What the input answers: the command on the line (cleared), if any.
    std::optional<Command> cleared;
    bool acquire_won = false;           // an acquired=true reply to the acquire on the line
    std::int64_t won_token = 0;
    TimePoint won_sent_at{};            // that acquire's send instant
    std::optional<TimePoint> renew_ok;  // send instant of the renew on the line confirmed now

    switch (in) {
      case In::timer:
      case In::timer_at_wake: out = m_.on_timer(now_); break;
      case In::start: out = m_.start(now_); break;
      case In::stop: out = m_.stop(now_); break;
      case In::step_down:
        if (pre_state == LeaseState::disconnected || pre_state == LeaseState::leader ||
            pre_state == LeaseState::candidate || pre_state == LeaseState::held_off) {
          hold_until_ = now_ + kHoldOff;
        }
        out = m_.step_down(now_);
        break;
      case In::connected:
        connected_ = true;
        out = m_.on_connected(now_);
        break;
      case In::disconnected: {
        const bool timed_out = chance(0.3);
        what << (timed_out ? "(timed_out)" : "");
        connected_ = false;
        if (out_seq_) cleared = out_cmd_;
        out_seq_.reset();
        out = m_.on_disconnected(now_, timed_out);
        break;
      }
      case In::notice: {
        // Sometimes the notice names this instance: an operator's step-down.
        const bool names_me = chance(0.3);
        what << (names_me ? "(me)" : "");
        out = m_.on_release_notice(now_, names_me ? "me" : "a");
        break;
      }
      case In::notices_on: out = m_.on_notices_available(now_, true); break;
      case In::notices_off: out = m_.on_notices_available(now_, false); break;
      case In::reply: {
        const std::uint64_t seq = *out_seq_;
        cleared = out_cmd_;
        out_seq_.reset();
        switch (out_cmd_) {
          case Command::acquire: {
            const AcquireReply reply = random_acquire_reply();
            what << "(acquire #" << seq << " acquired=" << reply.acquired << " holder=" << reply.holder
                 << " pttl=" << reply.pttl_ms << " token=" << reply.token << ")";
            acquire_won = reply.acquired;
            won_token = reply.token;
            won_sent_at = sent_.at(seq).at;
            out = m_.on_acquire_reply(now_, seq, reply);
            break;
          }
          case Command::renew: {
            const bool ok = chance(0.8);
            what << "(renew #" << seq << " " << ok << ")";
            if (ok) renew_ok = sent_.at(seq).at;
            out = m_.on_renew_reply(now_, seq, ok);
            break;
          }
          case Command::release:
            what << "(release #" << seq << ")";
            out = m_.on_release_reply(now_, seq);
            break;
          case Command::none: ADD_FAILURE() << "none on the line"; break;
        }
        break;
      }
      case In::failure: {
        const std::uint64_t seq = *out_seq_;
        const Failure failure = chance(0.5) ? Failure::error : Failure::timeout;
        what << "(#" << seq << (failure == Failure::error ? " error" : " timeout") << ")";
        cleared = out_cmd_;
        out_seq_.reset();
        out = m_.on_failure(now_, seq, failure);
        break;
      }
      case In::stale: {
        const std::uint64_t seq = stale_seq();
        ++coverage_.ignored_stale;
        switch (pick(4)) {
          case 0: {
            const AcquireReply reply = random_acquire_reply();
            what << "(acquire #" << seq << " acquired=" << reply.acquired << ")";
            out = m_.on_acquire_reply(now_, seq, reply);
            break;
          }
          case 1:
            what << "(renew #" << seq << ")";
            out = m_.on_renew_reply(now_, seq, chance(0.5));
            break;
          case 2:
            what << "(release #" << seq << ")";
            out = m_.on_release_reply(now_, seq);
            break;
          default:
            what << "(failure #" << seq << ")";
            out = m_.on_failure(now_, seq, chance(0.5) ? Failure::error : Failure::timeout);
            break;
        }
        // A stale answer changes nothing but what time alone changes.
        EXPECT_FALSE(out.elected) << "stale reply elected";
        EXPECT_FALSE(out.released) << "stale reply released";
        break;
      }
    }

    what << " -> " << to_string(m_.state());
    if (out.send != Command::none) what << " send#" << out.seq;
    if (out.elected) what << " elected";
    if (out.revoked) what << " revoked(" << to_string(*out.revoked) << ")";
    if (out.released) what << " released";
    if (out.stopped) what << " stopped";
    what << " wake=" << show(out.wake);
    log_.push_back(what.str());
    SCOPED_TRACE(log_.back());

    // Terms: elected and revoked alternate, and only the acquire on the line wins a term.
    EXPECT_FALSE(out.elected && out.revoked) << "elected and revoked at once";
    if (out.elected) {
      ++coverage_.elected;
      EXPECT_FALSE(pre_leader) << "elected twice without a revoked between";
      EXPECT_TRUE(acquire_won) << "elected without an acquired=true reply to the acquire in flight";
      EXPECT_EQ(m_.token(), won_token);
      leader_ = true;
      confirmed_ = won_sent_at;
    }
    if (out.revoked) {
      ++coverage_.revoked[*out.revoked];
      EXPECT_TRUE(pre_leader) << "revoked without a term";
      leader_ = false;
    }
    if (renew_ok && leader_ && pre_leader) confirmed_ = *renew_ok;
    EXPECT_EQ(m_.is_leader(), leader_) << "is_leader() disagrees with the events";
    EXPECT_EQ(m_.is_leader(), m_.deadline().has_value());
    if (m_.is_leader()) {
      EXPECT_EQ(m_.state(), LeaseState::leader);
      EXPECT_EQ(At{m_.deadline()}, At{confirmed_ + kLease}) << "deadline not from the last confirming send";
      EXPECT_LT(now_, *m_.deadline()) << "leader past its deadline";
      EXPECT_EQ(m_.holder(), "me");
    }

    // Releases finish exactly when the release on the line is answered or dies
    // with the connection (or at once when there is nothing to release).
    if (cleared == Command::release) {
      EXPECT_TRUE(out.released) << "release answered without released";
    }
    if (out.released) {
      ++coverage_.released;
      EXPECT_TRUE(cleared == Command::release || (in == In::step_down && out.send == Command::none))
          << "released out of nowhere";
    }

    // Commands: only on a live connection, one at a time (a release may replace).
    if (out.send != Command::none) {
      ++coverage_.sent[out.send];
      EXPECT_TRUE(connected_) << "sent without a connection";
      EXPECT_GT(out.seq, last_seq_) << "seq reused";
      if (out_seq_) {
        EXPECT_EQ(out.send, Command::release) << "sent while another command is in flight";
      }
      switch (out.send) {
        case Command::acquire:
          EXPECT_EQ(m_.state(), LeaseState::candidate);
          EXPECT_GE(now_, hold_until_) << "acquire during the step-down hold-off";
          break;
        case Command::renew: EXPECT_TRUE(leader_) << "renew while not leader"; break;
        case Command::release:
          EXPECT_TRUE(in == In::stop || in == In::step_down) << "release nobody asked for";
          break;
        case Command::none: break;
      }
      last_seq_ = std::max(last_seq_, out.seq);
      sent_[out.seq] = Sent{out.send, now_};
      out_seq_ = out.seq;
      out_cmd_ = out.send;
    } else {
      EXPECT_EQ(out.seq, 0u);
    }
    EXPECT_EQ(m_.in_flight(), out_seq_ ? out_cmd_ : Command::none) << "in_flight() disagrees with the line";

    // Wakes: never in the past, always present when something is due later.
    if (out.wake) {
      EXPECT_GT(*out.wake, now_) << "wake not in the future";
    }
    switch (m_.state()) {
      case LeaseState::leader:
        EXPECT_TRUE(out.wake.has_value()) << "leader without a wake";
        if (out.wake && m_.deadline()) {
          EXPECT_LE(*out.wake, *m_.deadline());
        }
        break;
      case LeaseState::held_off: EXPECT_TRUE(out.wake.has_value()) << "held off without a wake"; break;
      case LeaseState::candidate:
        if (m_.in_flight() == Command::none) {
          EXPECT_TRUE(out.wake.has_value()) << "idle candidate without a wake";
        }
        break;
      default: EXPECT_FALSE(out.wake.has_value()) << "wake in " << to_string(m_.state()); break;
    }
    // A timer at the requested instant always does something.
    if (in == In::timer_at_wake) {
      EXPECT_TRUE(out.send != Command::none || out.revoked || m_.state() != pre_state) << "spurious wake";
    }
    wake_ = out.wake;

    // Connected states need a connection; disconnected states have nothing on the line.
    switch (m_.state()) {
      case LeaseState::candidate:
      case LeaseState::leader:
      case LeaseState::held_off:
      case LeaseState::stopping: EXPECT_TRUE(connected_) << "connected state without a connection"; break;
      default: EXPECT_EQ(m_.in_flight(), Command::none); break;
    }
    if (m_.state() == LeaseState::stopping) {
      EXPECT_EQ(m_.in_flight(), Command::release);
    }

    // Stopping ends once, with `stopped`.
    const bool now_stopped = m_.state() == LeaseState::stopped && pre_state != LeaseState::stopped;
    EXPECT_EQ(out.stopped, now_stopped);
    if (out.stopped) ++coverage_.stopped;
  }

  std::mt19937_64 rng_;
  Coverage& coverage_;
  LeaseMachine m_{kTiming, "me"};
  TimePoint now_ = kT0;

  // The model.
  bool connected_ = false;
  std::optional<std::uint64_t> out_seq_;  // the command on the line
  Command out_cmd_ = Command::none;
  std::map<std::uint64_t, Sent> sent_;
  std::uint64_t last_seq_ = 0;
  bool leader_ = false;
  TimePoint confirmed_{};
  TimePoint hold_until_ = TimePoint::min();
  std::optional<TimePoint> wake_;
  std::vector<std::string> log_;
};

TEST(LeaseMachineProperty, RandomInputsKeepTheInvariants) {
  Coverage coverage;
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    RandomRun run(seed, coverage);
    if (!run.run(300)) return;
  }
  // The inputs must actually reach every kind of transition.
  EXPECT_GE(coverage.elected, 500);
  EXPECT_GE(coverage.released, 500);
  EXPECT_GE(coverage.stopped, 200);
  EXPECT_GE(coverage.ignored_stale, 1000);
  for (const Command command : {Command::acquire, Command::renew, Command::release}) {
    EXPECT_GE(coverage.sent[command], 300) << "too few sends of " << testing::PrintToString(command);
  }
  for (const RevokeReason reason :
       {RevokeReason::renew_refused, RevokeReason::renew_failed, RevokeReason::timeout,
        RevokeReason::connection_lost, RevokeReason::stepped_down, RevokeReason::stopped,
        RevokeReason::deadline_passed, RevokeReason::released_elsewhere}) {
    EXPECT_GE(coverage.revoked[reason], 20) << "too few revocations for " << to_string(reason);
  }
}

// ---------------------------------------------------------------------------
// A planned switch of master (Sentinel's +switch-master): the term survives
// the reconnect when the new master has the lease, and ends at the deadline
// when the reconnect takes longer.

TEST_F(LeaseMachineTest, ALeaderKeepsItsTermAcrossASwitchAndRenewsAtOnceOnTheNewMaster) {
  renewing();
  advance(5ms);
  // The renew in flight died with the old connection; nothing is sent until
  // the new one is up, and the only wake is the deadline of the last confirmation.
  EXPECT_OUT(m.on_switching(now), .wake = kT0 + kLease);
  expect_leader(kT0);
  advance(40ms);
  EXPECT_OUT(timer(), .wake = kT0 + kLease);
  EXPECT_OUT(connected(), .send = Command::renew, .seq = 3, .wake = kT0 + kLease);
  const TimePoint sent = now;
  advance(2ms);
  EXPECT_OUT(renewed(3), .wake = renewal_grid(kT0 + 2 * kHeartbeat));  // sent 45 ms after it was due: the schedule stays
  expect_leader(sent);
  EXPECT_EQ(m.token(), kToken) << "the same term";
}

TEST_F(LeaseMachineTest, ASwitchThatOutlastsTheDeadlineEndsTheTermAndReclaimsOnceConnected) {
  lead();
  advance(100ms);
  EXPECT_OUT(m.on_switching(now), .wake = kT0 + kLease);
  advance_to(kT0 + kLease);
  EXPECT_OUT(timer(), .revoked = RevokeReason::deadline_passed);
  EXPECT_EQ(m.state(), LeaseState::disconnected) << "nothing to campaign on until connected";
  advance(1s);
  EXPECT_OUT(connected(), .send = Command::acquire, .seq = 2);
}

TEST_F(LeaseMachineTest, StopAndStepDownDuringASwitchSendNothing) {
  lead();
  EXPECT_OUT(m.on_switching(now), .wake = kT0 + kLease);
  EXPECT_OUT(step_down(), .revoked = RevokeReason::stepped_down, .released = true);
  EXPECT_EQ(m.state(), LeaseState::disconnected);
  EXPECT_OUT(connected(), .wake = now + kTiming.step_down_hold_off);  // held off, as after any step-down

  LeaseMachine other{kTiming, "me"};
  other.start(kT0);
  other.on_connected(kT0);
  other.on_acquire_reply(kT0, 1, AcquireReply{.acquired = true, .holder = "me", .pttl_ms = 5000, .token = kToken});
  other.on_switching(kT0);
  EXPECT_OUT(other.stop(kT0), .revoked = RevokeReason::stopped, .stopped = true);
}

TEST_F(LeaseMachineTest, ASwitchWhenNotLeadingIsADisconnection) {
  campaign();
  EXPECT_OUT(m.on_switching(now));
  EXPECT_EQ(m.state(), LeaseState::disconnected);
  EXPECT_EQ(m.in_flight(), Command::none);
}

// ---------------------------------------------------------------------------
// Drain before release: the term ends at once, the lease stays (renewed)
// until the work is drained or drain_timeout passes, then it is released.

constexpr Duration kDrain = 3000ms;
constexpr LeaseTiming kDrainTiming{kTtl, kHeartbeat, kRetry, kDrift, kHoldOff, kDrain};

class DrainingMachineTest : public LeaseMachineTest {
 protected:
  DrainingMachineTest() : LeaseMachineTest(kDrainTiming) {}

  // Leader since kT0 (lead()), stepped down with a drain at kT0 + 510ms.
  TimePoint drain_step_down() {
    lead();
    advance(500ms);
    EXPECT_OUT(m.step_down(now, true), .wake = renewal_grid(kT0 + kHeartbeat), .revoked = RevokeReason::stepped_down);
    EXPECT_EQ(m.state(), LeaseState::draining);
    expect_not_leader();
    EXPECT_EQ(m.in_flight(), Command::none) << "no release before the drain";
    return now;
  }
};

TEST_F(DrainingMachineTest, StepDownEndsTheTermKeepsRenewingAndReleasesOnceDrained) {
  const TimePoint t = drain_step_down();
  advance_to(kT0 + kHeartbeat);
  EXPECT_OUT(timer(), .send = Command::renew, .seq = 2, .wake = t + kDrain);
  advance(5ms);
  EXPECT_OUT(renewed(2), .wake = renewal_grid(kT0 + 2 * kHeartbeat));
  expect_not_leader();
  advance(100ms);
  EXPECT_OUT(m.drained(now), .send = Command::release, .seq = 3, .wake = now + kHoldOff);
  EXPECT_EQ(m.state(), LeaseState::held_off);
  EXPECT_OUT(release_done(3), .wake = now + kHoldOff, .released = true);
}

TEST_F(DrainingMachineTest, DrainTimeoutReleasesAnywayAndSaysSo) {
  const TimePoint t = drain_step_down();
  advance_to(kT0 + kHeartbeat);
  EXPECT_OUT(timer(), .send = Command::renew, .seq = 2, .wake = t + kDrain);
  EXPECT_OUT(renewed(2), .wake = renewal_grid(kT0 + 2 * kHeartbeat));
  advance_to(kT0 + 2 * kHeartbeat);
  EXPECT_OUT(timer(), .send = Command::renew, .seq = 3, .wake = t + kDrain);
  advance_to(t + kDrain);  // the renewal still unanswered: the release overtakes it
  EXPECT_OUT(timer(), .send = Command::release, .seq = 4, .wake = now + kHoldOff, .drain_overrun = true);
  EXPECT_EQ(m.state(), LeaseState::held_off);
  EXPECT_OUT(m.drained(now), .send = Command::none, .seq = 0, .wake = now + kHoldOff);  // late: nothing more
}

TEST_F(DrainingMachineTest, AStopDuringTheDrainReleasesAfterItAndStops) {
  drain_step_down();
  advance(10ms);
  EXPECT_OUT(m.stop(now, true), .wake = renewal_grid(kT0 + kHeartbeat));
  EXPECT_OUT(m.step_down(now, true), .wake = renewal_grid(kT0 + kHeartbeat));
  EXPECT_EQ(m.state(), LeaseState::draining);
  EXPECT_OUT(m.drained(now), .send = Command::release, .seq = 2);
  EXPECT_EQ(m.state(), LeaseState::stopping);
  EXPECT_OUT(release_done(2), .released = true, .stopped = true);
}

TEST_F(DrainingMachineTest, StopWithADrainEndsTheTermFirstAndStopsAfterTheRelease) {
  lead();
  advance(100ms);
  EXPECT_OUT(m.stop(now, true), .wake = renewal_grid(kT0 + kHeartbeat), .revoked = RevokeReason::stopped);
  EXPECT_EQ(m.state(), LeaseState::draining);
  EXPECT_OUT(m.drained(now), .send = Command::release, .seq = 2);
  EXPECT_OUT(release_done(2), .released = true, .stopped = true);
}

TEST_F(DrainingMachineTest, ALostConnectionEndsTheDrainWithoutARelease) {
  drain_step_down();
  advance(10ms);
  const Output out = disconnected();
  EXPECT_TRUE(out.released);
  EXPECT_TRUE(out.release_failed) << "the lease runs out by itself: the caller learns why";
  EXPECT_EQ(out.send, Command::none);
  EXPECT_EQ(m.state(), LeaseState::disconnected);
}

TEST_F(DrainingMachineTest, ARefusedRenewalReleasesAtOnceAndAFailedOneIsRetried) {
  const TimePoint t = drain_step_down();
  advance_to(kT0 + kHeartbeat);
  EXPECT_OUT(timer(), .send = Command::renew, .seq = 2, .wake = t + kDrain);
  EXPECT_OUT(failed(2), .wake = now + kRetry);
  advance(kRetry);
  EXPECT_OUT(timer(), .send = Command::renew, .seq = 3, .wake = t + kDrain);
  EXPECT_OUT(renewed(3, false), .send = Command::release, .seq = 4, .wake = now + kHoldOff);
}

}  // namespace
}  // namespace unit_lease_machine_test
