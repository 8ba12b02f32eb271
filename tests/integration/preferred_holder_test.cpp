// Preferred holder: a standby of higher priority bids through Redis, the
// leader hands the lease over at its next renewal (after draining its work),
// and equal priorities never hand over. A rolling deploy that gives each new
// instance a higher priority moves the group along, one hand-over each.

#include <leasehold/impl/lease/lease_scripts.hpp>
#include <leasehold/leasehold.hpp>
#include <leasehold/run_while_leader.hpp>

#include "support/elector_fixture.hpp"
#include "support/redis_server.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>

namespace integration_preferred_holder_test {
namespace {

namespace lh = leasehold;
namespace asio = boost::asio;
using lh::test::Fleet;
using lh::test::run_until;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// ttl 10 s, heartbeat 1 s: a hand-over that came by expiry would take ten
// heartbeats, so "within a few seconds" can only be the bid.
lh::ElectorOptions ranked(std::string id, int priority) {
  auto o = lh::test::fast_options(std::move(id));
  o.ttl = 10s;
  o.heartbeat_interval = 1s;
  o.empty_restart_guard = false;
  o.priority = priority;
  return o;
}

// Runs the fleet until `i` leads and its elected event has run (is_leader()
// turns true a turn before the event is delivered), checking on every turn
// that no two electors lead at once. Returns how long it took, or nullopt.
std::optional<Clock::duration> lead_alone(Fleet& fleet, std::size_t i, bool& overlap) {
  const auto start = Clock::now();
  const bool led = run_until(fleet.io, [&] {
    std::size_t leaders = 0;
    for (std::size_t k = 0; k < fleet.size(); ++k) leaders += fleet.at(k).is_leader() ? 1 : 0;
    overlap = overlap || leaders > 1;
    return fleet.leading_with_event(i);
  }, 8s);
  if (!led) return std::nullopt;
  return Clock::now() - start;
}

long long ms(Clock::duration d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); }

TEST(PreferredHolder, EachHigherPriorityNewcomerLeadsWithinTwoHeartbeatsOfItsStart) {
  lh::test::RedisServer server;
  Fleet fleet(server);
  bool overlap = false;
  fleet.add(ranked("low", 1));
  ASSERT_TRUE(fleet.wait_leading(0));

  // A rolling deploy: each new instance outranks the last.
  for (std::size_t next : {1u, 2u}) {
    fleet.add(ranked(next == 1 ? "middle" : "high", static_cast<int>(next) + 1));
    const auto took = lead_alone(fleet, next, overlap);
    ASSERT_TRUE(took.has_value()) << "instance " << next << " never led";
    std::printf("instance %zu led %lld ms after it started (heartbeat 1000 ms)\n", next, ms(*took));
    EXPECT_LT(*took, 5s) << "a hand-over by bid, not by expiry (ttl 10 s)";
    const auto& revoked = fleet.events(next - 1).revoked;
    ASSERT_TRUE(run_until(fleet.io, [&] { return !revoked.empty(); }, 5s));
    EXPECT_EQ(revoked.back().reason, lh::RevokeReason::handed_over);
    EXPECT_GT(fleet.events(next).elected.back().token, fleet.events(next - 1).elected.back().token);
  }
  EXPECT_FALSE(overlap) << "two electors led at once";

  // The highest keeps it: the lower ones do not bid.
  EXPECT_TRUE(fleet.run_checking_single_leader(3s));
  EXPECT_TRUE(fleet.at(2).is_leader());
  EXPECT_EQ(fleet.events(2).elected.size(), 1u);
  EXPECT_EQ(fleet.events(0).elected.size(), 1u);
  EXPECT_EQ(fleet.events(1).elected.size(), 1u);
  const lh::Metrics metrics = fleet.metrics(0);  // group() points into it
  const auto* low = metrics.group("default");
  ASSERT_NE(low, nullptr);
  EXPECT_EQ(low->demotions_for(lh::RevokeReason::handed_over), 1u);
}

TEST(PreferredHolder, EqualPrioritiesNeverHandOver) {
  lh::test::RedisServer server;
  Fleet fleet(server);
  fleet.add(ranked("first", 5));
  ASSERT_TRUE(fleet.wait_leading(0));
  fleet.add(ranked("second", 5));
  fleet.add(ranked("lower", 4));
  EXPECT_TRUE(fleet.run_checking_single_leader(4s));  // four heartbeats
  EXPECT_TRUE(fleet.at(0).is_leader());
  EXPECT_EQ(fleet.events(0).elected.size(), 1u);
  EXPECT_TRUE(fleet.events(0).revoked.empty());
  EXPECT_TRUE(fleet.events(1).elected.empty());
  EXPECT_TRUE(fleet.events(2).elected.empty());
  EXPECT_FALSE(server.admin().get("leader:default:bid").has_value()) << "nobody outranks the leader";
}

TEST(PreferredHolder, PerGroupPrioritiesPickEachGroupsLeader) {
  lh::test::RedisServer server;
  Fleet fleet(server);
  auto a = ranked("a", 0);
  a.groups = {"reports"};
  a.group_priorities = {{"reports", 10}};
  auto b = ranked("b", 5);
  b.groups = {"reports"};
  fleet.add(b);
  ASSERT_TRUE(fleet.wait_leading(0, "default"));
  ASSERT_TRUE(fleet.wait_leading(0, "reports"));
  fleet.add(a);
  // a outranks b only for "reports".
  ASSERT_TRUE(fleet.wait_leading(1, "reports", 5s));
  EXPECT_TRUE(fleet.run_checking_single_leader(2s, "reports"));
  EXPECT_TRUE(fleet.at(0).is_leader("default"));
  EXPECT_FALSE(fleet.at(1).is_leader("default"));
}

TEST(PreferredHolder, TheHandOverWaitsForTheLeadersWorkToWindDown) {
  lh::test::RedisServer server;
  Fleet fleet(server);
  fleet.add(ranked("old", 1));
  ASSERT_TRUE(fleet.wait_leading(0));
  std::optional<Clock::time_point> work_ended, newcomer_elected;
  lh::run_while_leader(fleet.at(0), "default", [&]() -> asio::awaitable<void> {
    asio::steady_timer timer(co_await asio::this_coro::executor, 1h);
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));  // until the term ends
    co_await asio::this_coro::reset_cancellation_state();
    timer.expires_after(300ms);  // slow to wind down
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    work_ended = Clock::now();
  }, asio::detached);
  lh::test::run_for(fleet.io, 200ms);
  auto& newcomer = fleet.add(ranked("new", 2));
  newcomer.on_elected([&](const lh::ElectedEvent&) { newcomer_elected = Clock::now(); });
  ASSERT_TRUE(run_until(fleet.io, [&] { return newcomer_elected.has_value(); }, 8s));
  ASSERT_TRUE(work_ended.has_value()) << "the newcomer led while the old leader's work still ran";
  EXPECT_LE(*work_ended, *newcomer_elected);
  EXPECT_EQ(fleet.events(0).revoked.back().reason, lh::RevokeReason::handed_over);
}

// Redis's cost per renewal: a renewal reads the bid only while the holder
// record's flag says one may stand, and lowers the flag once none does.
// Hash-tagged keys read the record on every renewal; plain keys on the
// change stamp's word read it seldom (a lone group's renewal too).
TEST(PreferredHolder, ARenewalReadsTheBidOnlyWhileOneMayStand) {
  for (const auto form : {lh::KeyLayout::Form::hash_tagged, lh::KeyLayout::Form::plain}) {
    const bool stamped = form == lh::KeyLayout::Form::plain;
    SCOPED_TRACE(stamped ? "plain keys, on the change stamp" : "hash-tagged keys");
    lh::test::RedisServer server;
    Fleet fleet(server);
    auto options = ranked("leader", 0);
    options.ttl = 2s;
    options.heartbeat_interval = 200ms;
    auto redis = server.options();
    redis.key_layout = form;
    fleet.add(options, redis);
    ASSERT_TRUE(fleet.wait_leading(0));
    auto admin = server.admin();
    ASSERT_FALSE(admin.call({"CONFIG", "RESETSTAT"}).is_error());
    lh::test::run_for(fleet.io, 1500ms);
    const long long renewals = admin.command_calls("pexpire");
    EXPECT_GE(renewals, 3);
    if (stamped) {
      EXPECT_LT(admin.command_calls("hmget"), renewals)
          << "the stamp spares most renewals the holder record, and no bid read";
      EXPECT_EQ(admin.command_calls("get"), 0) << "the lease key and the stamp are read with one MGET";
      EXPECT_EQ(admin.command_calls("mget"), renewals);
    } else {
      EXPECT_EQ(admin.command_calls("hmget"), renewals) << "one read of the holder record per renewal, no bid read";
    }

    // A flag with no bid behind it (the bid expired): read once, then
    // lowered. The bid that raised it replaced the change stamp, as here.
    const lh::KeyLayout layout("leader:", form);
    ASSERT_FALSE(admin.call({"HSET", layout.holder_key("default"), "bid", "1"}).is_error());
    ASSERT_FALSE(admin.call({"DEL", layout.change_stamp_key()}).is_error());
    ASSERT_TRUE(run_until(fleet.io, [&] {
      return admin.call({"HGET", layout.holder_key("default"), "bid"}).str == "0";
    }, 5s));
    EXPECT_TRUE(fleet.leading_with_event(0)) << "no leadership change";
  }
}

// An idle standby that does not outrank the leader looks on the change
// stamp's word: MGET and PTTL, no holder record. Once another holder of
// lower priority takes the lease (by a script that replaces the stamp, as
// every one of ours does), its next look reads the record and bids.
TEST(PreferredHolder, AnIdleStandbyLooksOnTheStampsWordAndStillBidsForALowerNewHolder) {
  lh::test::RedisServer server;
  Fleet fleet(server);
  auto high = ranked("high", 10);
  high.ttl = 1s;
  high.heartbeat_interval = 300ms;
  auto middle = high;
  middle.instance_id = "middle";
  middle.priority = 5;
  fleet.add(high);
  ASSERT_TRUE(fleet.wait_leading(0));
  fleet.add(middle);
  lh::test::run_for(fleet.io, 1500ms);  // the standby's first looks
  auto admin = server.admin();
  ASSERT_FALSE(admin.call({"CONFIG", "RESETSTAT"}).is_error());
  lh::test::run_for(fleet.io, 2500ms);
  const long long looks = admin.command_calls("pttl");
  EXPECT_GE(looks, 2);
  EXPECT_LT(admin.command_calls("hget"), looks) << "most looks skip the holder record";
  EXPECT_TRUE(fleet.at(0).is_leader());

  // "high" crashes, and "low" takes the lease at once through the acquire
  // script, which replaces the stamp.
  fleet.crash(0);
  const lh::KeyLayout layout("leader:");
  ASSERT_EQ(admin.call({"DEL", layout.lease_key("default")}).integer, 1);
  const auto taken = admin.call({"EVAL", lh::detail::acquire_script(false, true).body(), "5",
                                 layout.lease_key("default"), layout.token_key("default"),
                                 layout.holder_key("default"), layout.bid_key("default"), layout.change_stamp_key(),
                                 "low", "1500", "inc-low", "1", ""});
  ASSERT_TRUE(taken.is_array() && taken.elements.at(0).integer == 1) << lh::test::describe_reply(taken);
  EXPECT_TRUE(run_until(fleet.io, [&] {
    return admin.call({"HGET", layout.bid_key("default"), "id"}).str == "middle";
  }, 5s)) << "the standby read the new holder's record and bid";
  EXPECT_TRUE(run_until(fleet.io, [&] { return fleet.leading_with_event(1); }, 5s)) << "at the lease's expiry";
}

// A leader of 20 groups renews them in batches on the change stamp's word.
// A standby that outranks it in every group bids: each bid replaces the
// stamp, the next batch finds it changed (the trusted groups answer -1 and
// go again with every key) and hears the bids, and every group is handed
// over well before its ttl of ten heartbeats, never with two leaders.
TEST(PreferredHolder, ALeaderOfManyGroupsRenewingOnTheStampsWordHearsEveryBid) {
  lh::test::RedisServer server;
  Fleet fleet(server);
  auto low = ranked("low", 0);
  for (int i = 0; i < 20; ++i) low.groups.push_back("g" + std::to_string(i));
  auto high = ranked("high", 5);
  high.groups = low.groups;
  fleet.add(low);
  ASSERT_TRUE(run_until(fleet.io, [&] { return fleet.leads_every(0, low.groups); }, 10s));
  lh::test::run_for(fleet.io, 2500ms);  // trusted renewals by now
  fleet.add(high);
  bool overlap = false;
  const bool moved = run_until(fleet.io, [&] {
    for (const auto& g : low.groups) overlap = overlap || fleet.leaders(g).size() > 1;
    return fleet.leads_every(1, low.groups);
  }, 6s);
  EXPECT_TRUE(moved) << "every group handed over within six heartbeats";
  EXPECT_FALSE(overlap);
  for (const auto& g : low.groups) EXPECT_FALSE(fleet.at(0).is_leader(g)) << g;
}

// The renewals that read the holder record even though the stamp vouches
// for it (one in sixteen, for writers that do not stamp) are spread over
// the heartbeats: a leader's groups all read theirs at once after their
// first terms, and those would otherwise come all in one heartbeat of
// sixteen, doubling Redis's load then.
TEST(PreferredHolder, ALeaderOfManyGroupsSpreadsItsForcedRecordReadsOverTheHeartbeats) {
  lh::test::RedisServer server;
  Fleet fleet(server);
  auto options = ranked("leader", 0);
  options.ttl = 5s;  // a stall that cost a lease would start new terms: every record read at once
  options.heartbeat_interval = 200ms;
  for (int i = 0; i < 64; ++i) options.groups.push_back("g" + std::to_string(i));
  fleet.add(options);
  ASSERT_TRUE(run_until(fleet.io, [&] { return fleet.leads_every(0, options.groups); }, 10s));
  lh::test::run_for(fleet.io, 1s);
  auto admin = server.admin();
  long long last = admin.command_calls("hmget"), most = 0;
  const long long first = last, renewals_before = admin.command_calls("pexpire");
  for (int sample = 0; sample < 40; ++sample) {  // 4 s: twenty heartbeats
    lh::test::run_for(fleet.io, 100ms);
    const long long now = admin.command_calls("hmget");
    most = std::max(most, now - last);
    last = now;
  }
  const long long renewals = admin.command_calls("pexpire") - renewals_before;
  EXPECT_GE(renewals, 65 * 10) << "ten heartbeats at least";
  EXPECT_GE(last - first, renewals / 32) << "the forced reads happen";
  EXPECT_LE(most, 32) << "never half the groups' reads in one tenth of a second (all 65 at once before)";
  EXPECT_TRUE(fleet.leads_every(0, options.groups));
}

}  // namespace
}  // namespace integration_preferred_holder_test
