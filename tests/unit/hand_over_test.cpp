// LeaseMachine with bids and incarnations (lease_scripts.hpp): a leader
// hands over to a standby of higher priority, never to an equal; a bid or a
// refusal under this instance's own id from another incarnation is a
// duplicate, reported once it is proven alive; a restart's dead predecessor
// is not.

#include <leasehold/impl/lease/lease_machine.hpp>
#include <leasehold/impl/lease/lease_replies.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <limits>

namespace unit_hand_over_test {
namespace {

using namespace std::chrono_literals;
namespace d = leasehold::detail;
using d::Command;
using d::LeaseState;
using d::RevokeReason;
using d::TimePoint;

constexpr d::Duration kHeartbeat = 1000ms;
const d::LeaseTiming kDraining{3000ms, kHeartbeat, 500ms, 32ms, 500ms, 2000ms};
const d::LeaseTiming kNoDrain{3000ms, kHeartbeat, 500ms, 32ms, 500ms, 0ms};
constexpr TimePoint kT0 = TimePoint{} + 1h;

struct Machine {
  d::LeaseMachine m;
  TimePoint now = kT0;
  std::uint64_t seq = 0;

  Machine(const d::LeaseTiming& timing, int priority) : m(timing, "me", priority) {}

  d::Output sent(d::Output out) {
    if (out.send != Command::none) seq = out.seq;
    return out;
  }
  void lead() {
    sent(m.start(now));
    sent(m.on_connected(now));
    ASSERT_EQ(m.in_flight(), Command::acquire);
    ASSERT_TRUE(m.on_acquire_reply(now, seq, {true, "me", 3000, 7}).elected);
  }
  // The next renewal, answered with `reply`.
  d::Output renew(d::RenewReply reply) {
    now += kHeartbeat;
    sent(m.on_timer(now));
    EXPECT_EQ(m.in_flight(), Command::renew);
    now += 2ms;
    return sent(m.on_renew_reply(now, seq, reply));
  }
};

d::RenewReply bid(std::string id, int priority) {
  return {.renewed = true, .bid = d::Bid{std::move(id), "their-incarnation", priority}};
}

TEST(HandOver, AHigherBidEndsTheTermDrainsAndHandsTheLeaseToTheBidder) {
  Machine a(kDraining, 1);
  a.lead();
  const d::Output out = a.renew(bid("newcomer", 2));
  EXPECT_EQ(out.revoked, RevokeReason::handed_over);
  EXPECT_EQ(a.m.state(), LeaseState::draining) << "the term's work winds down first";
  EXPECT_EQ(out.send, Command::none);
  ASSERT_NE(a.m.hand_over_target(), nullptr);
  EXPECT_EQ(a.m.hand_over_target()->id, "newcomer");

  const d::Output drained = a.sent(a.m.drained(a.now));
  EXPECT_EQ(drained.send, Command::release) << "the release carries the hand-over";
  EXPECT_EQ(a.m.hand_over_target()->incarnation, "their-incarnation");
  EXPECT_TRUE(a.m.on_release_reply(a.now, a.seq, true).released);
  EXPECT_EQ(a.m.hand_over_target(), nullptr);
  EXPECT_EQ(a.m.state(), LeaseState::held_off);
}

TEST(HandOver, WithoutDrainTheHandOverIsSentAtOnce) {
  Machine a(kNoDrain, 0);
  a.lead();
  const d::Output out = a.renew(bid("newcomer", 1));
  EXPECT_EQ(out.revoked, RevokeReason::handed_over);
  EXPECT_EQ(out.send, Command::release);
  ASSERT_NE(a.m.hand_over_target(), nullptr);
  EXPECT_TRUE(a.m.on_failure(a.now, a.seq, d::Failure::error).release_failed);
  EXPECT_EQ(a.m.hand_over_target(), nullptr) << "the lease runs out; the bidder takes it then";
}

TEST(HandOver, EqualOrLowerBidsNeverHandOver) {
  Machine a(kDraining, 5);
  a.lead();
  for (const int priority : {5, 4, -1}) {
    const d::Output out = a.renew(bid("other", priority));
    EXPECT_FALSE(out.revoked.has_value()) << priority;
    EXPECT_TRUE(a.m.is_leader()) << priority;
    EXPECT_EQ(a.m.hand_over_target(), nullptr) << priority;
  }
}

TEST(HandOver, AStepDownDrainingWhenAHigherBidArrivesHandsOverInsteadOfReleasing) {
  Machine a(kDraining, 0);
  a.lead();
  a.sent(a.m.step_down(a.now, true));
  ASSERT_EQ(a.m.state(), LeaseState::draining);
  a.renew(bid("newcomer", 3));
  ASSERT_NE(a.m.hand_over_target(), nullptr);
  EXPECT_EQ(a.sent(a.m.drained(a.now)).send, Command::release);
  EXPECT_EQ(a.m.hand_over_target()->id, "newcomer");
}

TEST(DuplicateIncarnation, ABidUnderOurOwnIdIsADuplicateAndTheLeaderKeepsLeading) {
  Machine a(kDraining, 0);
  a.lead();
  const d::Output out = a.renew(bid("me", 0));
  EXPECT_TRUE(out.duplicate_id);
  EXPECT_FALSE(out.no_duplicate);
  EXPECT_TRUE(a.m.is_leader());
  const d::Output clean = a.renew({.renewed = true});
  EXPECT_FALSE(clean.duplicate_id);
  EXPECT_TRUE(clean.no_duplicate) << "the bid is gone: the episode ends";
}

TEST(DuplicateIncarnation, LosingTheLeaseToAnotherIncarnationIsADuplicate) {
  Machine a(kDraining, 0);
  a.lead();
  const d::Output out = a.renew({.renewed = false, .rival = "their-incarnation"});
  EXPECT_TRUE(out.duplicate_id);
  EXPECT_EQ(out.revoked, RevokeReason::renew_refused);
}

// A standby refused because another incarnation of its id holds the lease.
struct Standby : Machine {
  Standby() : Machine(kDraining, 0) {
    sent(m.start(now));
    sent(m.on_connected(now));
  }
  // Answers the acquire in flight after 2 ms; returns the output.
  d::Output refused(std::int64_t pttl_ms, std::string rival = "their-incarnation") {
    EXPECT_EQ(m.in_flight(), Command::acquire);
    now += 2ms;
    return sent(m.on_acquire_reply(now, seq, {false, "me", pttl_ms, 0, true, std::move(rival)}));
  }
  void next_attempt() {
    const d::Output out = sent(m.on_timer(now));
    ASSERT_TRUE(out.wake.has_value() || out.send == Command::acquire);
    if (out.send != Command::acquire) {
      EXPECT_LE(*out.wake - now, kHeartbeat) << "looks again within a heartbeat";
      now = *out.wake;
      sent(m.on_timer(now));
    }
  }
};

TEST(DuplicateIncarnation, ARestartsDeadPredecessorIsNoDuplicate) {
  Standby b;
  // Nobody renews: the lease ends at one fixed instant, and each refusal's
  // PTTL (read as the reply leaves Redis, 2 ms after the send) says so.
  const TimePoint end = b.now + 2800ms;
  auto pttl = [&] { return std::chrono::duration_cast<std::chrono::milliseconds>(end - (b.now + 2ms)).count(); };
  EXPECT_FALSE(b.refused(pttl()).duplicate_id) << "first sight proves nothing";
  for (int look = 0; look < 2; ++look) {
    b.next_attempt();
    EXPECT_FALSE(b.refused(pttl()).duplicate_id) << look;
  }
  EXPECT_FALSE(b.m.is_leader());
}

TEST(DuplicateIncarnation, AHolderUnderOurIdThatRenewsIsADuplicate) {
  Standby b;
  const d::Output first = b.refused(2500);
  EXPECT_FALSE(first.duplicate_id);
  EXPECT_FALSE(first.no_duplicate) << "not proven either way";
  b.next_attempt();
  EXPECT_TRUE(b.refused(2900).duplicate_id) << "its lease ends later than before: renewed";
  b.next_attempt();
  EXPECT_TRUE(b.refused(2950, "a-third-incarnation").duplicate_id) << "another incarnation took it meanwhile";
  b.next_attempt();
  const d::Output gone = b.refused(2000, "");
  EXPECT_FALSE(gone.duplicate_id) << "no rival named: someone else, or nobody";
  EXPECT_TRUE(gone.no_duplicate);
}

TEST(LeaseReplyListener, RenewAndAcquireShapes) {
  using leasehold::redis::Reply;
  auto integer = [](long long v) { Reply r; r.type = Reply::Type::integer; r.integer = v; return r; };
  auto string = [](std::string s) { Reply r; r.type = Reply::Type::string; r.str = std::move(s); return r; };
  auto array = [](std::vector<Reply> e) { Reply r; r.type = Reply::Type::array; r.elements = std::move(e); return r; };

  EXPECT_TRUE(d::parse_renew_reply(integer(1))->renewed);
  EXPECT_FALSE(d::parse_renew_reply(integer(0))->renewed);
  EXPECT_FALSE(d::parse_renew_reply(array({integer(1)}))) << "a one-element array is not an answer";
  EXPECT_EQ(d::parse_renew_reply(array({integer(0), string("inc")}))->rival, "inc");
  const auto with_bid = d::parse_renew_reply(array({integer(1), string("b"), string("inc"), integer(3)}));
  ASSERT_TRUE(with_bid && with_bid->bid);
  EXPECT_EQ(with_bid->bid->priority, 3);
  EXPECT_FALSE(d::parse_renew_reply(array({integer(1), string("inc")}))) << "a rival with a renewal";
  EXPECT_FALSE(d::parse_renew_reply(array({integer(0), string("b"), string("inc"), integer(3)})));
  EXPECT_FALSE(d::parse_renew_reply(array({integer(1), string("b"), string(""), integer(3)})));
  EXPECT_FALSE(d::parse_renew_reply(array({integer(1), string("b"), string("i"), integer(1LL << 40)})));

  const auto rival = d::parse_acquire_reply(array({integer(0), string("me"), integer(900), integer(0),
                                                   string("inc")}), "me");
  ASSERT_TRUE(rival);
  EXPECT_EQ(rival->rival, "inc");
  EXPECT_FALSE(d::parse_acquire_reply(array({integer(0), string("other"), integer(900), integer(0), string("inc")}),
                                      "me"))
      << "a rival is only ever named under our own id";
  EXPECT_FALSE(d::parse_acquire_reply(array({integer(1), string("me"), integer(900), integer(4), string("inc")}),
                                      "me"));
  // The guard's empty holder says why it had no data marker.
  const auto unmarked = d::parse_acquire_reply(array({integer(0), string(""), integer(900), integer(0),
                                                      string("INFO: NOPERM")}), "me");
  ASSERT_TRUE(unmarked);
  EXPECT_EQ(unmarked->unmarked, "INFO: NOPERM");
  EXPECT_TRUE(unmarked->rival.empty());

  // Found by the reply fuzzer: an enormous PTTL overflowed the instants the
  // machine computes from it. It reads as a year.
  const auto forever = d::parse_acquire_reply(
      array({integer(0), string("other"), integer(std::numeric_limits<std::int64_t>::max()), integer(0)}), "me");
  ASSERT_TRUE(forever);
  EXPECT_EQ(forever->pttl_ms, std::int64_t{365} * 24 * 3600 * 1000);
}

}  // namespace
}  // namespace unit_hand_over_test
