// The empty-restart guard (ElectorOptions::empty_restart_guard): a group
// whose fencing counter is missing is held by nobody for one ttl, so that a
// Redis that lost its data cannot hand a group to a new leader while the old
// one still trusts its lease; unless the server's data marker proves that
// this server process has kept its data for one ttl (a new group).

#include "support/elector_fixture.hpp"
#include "support/fault_proxy.hpp"

#include <gtest/gtest.h>

namespace integration_empty_restart_test {
namespace {

namespace lh = leasehold;
using lh::test::Fleet;
using lh::test::run_until;
using namespace std::chrono_literals;

lh::ElectorOptions three_second_lease(std::string id) {
  auto o = lh::test::fast_options(std::move(id));
  o.ttl = 3000ms;  // the window in which the marker is inspected below
  return o;
}

// Runs until elector `standby` leads `group`; false if it never did, or if
// it led while another elector still did (the cut-off leader's trust).
testing::AssertionResult leads_without_overlap(Fleet& fleet, std::size_t standby, std::string_view group) {
  bool overlap = false;
  const bool led = run_until(fleet.io, [&] {
    overlap = overlap || fleet.leaders(group).size() > 1;
    return fleet.leading_with_event(standby, group);
  }, 20s);
  if (!led) return testing::AssertionFailure() << "the standby never led " << group;
  if (overlap) return testing::AssertionFailure() << "the standby led while the cut-off leader still trusted its lease";
  return testing::AssertionSuccess();
}

TEST(EmptyRestartGuard, ABrandNewGroupIsHeldByNobodyForOneTtlThenElectedWithTokenOne) {
  lh::test::RedisServer server;
  Fleet fleet(server);
  auto& e = fleet.add(three_second_lease("first"));
  auto admin = server.admin();
  ASSERT_TRUE(run_until(fleet.io, [&] { return admin.get("leader:default:token").has_value(); }));
  // The marker: an empty holder with the ttl, and the counter at 0.
  EXPECT_EQ(admin.get("leader:default"), "");
  EXPECT_GT(admin.pttl("leader:default"), 0);
  EXPECT_EQ(admin.get("leader:default:token"), "0");
  EXPECT_FALSE(e.is_leader());
  lh::LeaderInfo info;
  e.leader_of("default", [&](lh::error_code, lh::LeaderInfo i) { info = std::move(i); });
  ASSERT_TRUE(run_until(fleet.io, [&] { return info.remaining.count() != 0; }));
  EXPECT_TRUE(info.holder.empty()) << "nobody leads while the guard holds the group";

  ASSERT_TRUE(fleet.wait_leading(0));
  EXPECT_EQ(fleet.events(0).elected.front().token, 1);
  EXPECT_EQ(admin.get("leader:default"), "first");
}

// The counter exists once a group has had its first term: a later step-down
// hands over at once, with no guard in between.
TEST(EmptyRestartGuard, AGroupWithACounterHandsOverWithoutWaiting) {
  lh::test::RedisServer server;
  server.admin().set("leader:default:token", "7");
  Fleet fleet(server);
  auto options = three_second_lease("first");
  options.ttl = 20s;  // a wait for the guard or an expiry would show
  fleet.add(options);
  ASSERT_TRUE(fleet.wait_leading(0, "default", 5s)) << "the counter exists: no guard";
  EXPECT_EQ(fleet.events(0).elected.front().token, 8);
}

// The overlap the guard exists for: the leader is cut off (it keeps trusting
// its lease until its deadline), Redis comes back empty, and a standby
// campaigns at once. With the guard the standby leads only after the cut-off
// leader's term ended.
TEST(EmptyRestartGuard, AnEmptyRestartWhileTheLeaderIsCutOffNeverGivesTwoLeaders) {
  lh::test::RedisServer server;
  lh::test::FaultProxy proxy(server.port());
  Fleet fleet(server);
  fleet.add(three_second_lease("cut-off"), proxy.options_for(server.options()));
  ASSERT_TRUE(fleet.wait_leading(0));

  proxy.blackhole();
  server.restart();
  fleet.add(three_second_lease("standby"));
  ASSERT_TRUE(leads_without_overlap(fleet, 1, "default"));
  EXPECT_EQ(fleet.events(1).elected.front().token, 1) << "Redis lost the counter: tokens start again";
}

// Once the server's data marker is one ttl old (written by the first
// group's guard), a new group is elected within a round trip.
TEST(EmptyRestartGuard, ANewGroupOnAServerThatKeptItsDataIsElectedAtOnce) {
  lh::test::RedisServer server;
  Fleet fleet(server);
  auto options = three_second_lease("first");
  options.ttl = 4000ms;
  fleet.add(options);
  ASSERT_TRUE(fleet.wait_leading(0, "default", 15s)) << "the first group waits out the guard";

  options.instance_id = "second";
  options.groups = {"reports"};
  const auto added = std::chrono::steady_clock::now();
  fleet.add(options);
  ASSERT_TRUE(fleet.wait_leading(1, "reports", 15s));
  EXPECT_LT(std::chrono::steady_clock::now() - added, options.ttl / 2) << "a new group waited for the guard";
  EXPECT_EQ(fleet.events(1).elected.front().token, 1);
}

// A restart from a snapshot keeps an old marker but changes the server's
// run_id: a group begun after the snapshot lost its counter and lease, and
// still waits out the guard while its cut-off leader trusts its lease.
TEST(EmptyRestartGuard, ARestartFromASnapshotWhileTheLeaderIsCutOffNeverGivesTwoLeaders) {
  lh::test::RedisServer server;
  lh::test::FaultProxy proxy(server.port());
  Fleet fleet(server);
  fleet.add(three_second_lease("first"), proxy.options_for(server.options()));
  ASSERT_TRUE(fleet.wait_leading(0, "default", 15s)) << "the first group waits out the guard";
  auto admin = server.admin();
  ASSERT_FALSE(admin.call({"SAVE"}).is_error());

  auto late = three_second_lease("cut-off");
  late.groups = {"late"};
  fleet.add(late, proxy.options_for(server.options()));
  ASSERT_TRUE(fleet.wait_leading(1, "late", 1500ms)) << "the marker is a ttl old: no guard";

  proxy.blackhole();
  server.restart_from_snapshot();
  ASSERT_TRUE(server.admin().get("leader:").has_value()) << "the snapshot's marker is back";
  late.instance_id = "standby";
  fleet.add(late);
  EXPECT_TRUE(leads_without_overlap(fleet, 2, "late"));
}

// Something else in the marker's place: the plain guard, not an error.
TEST(EmptyRestartGuard, AKeyOfAnotherTypeInTheMarkersPlaceGivesThePlainGuard) {
  lh::test::RedisServer server;
  ASSERT_FALSE(server.admin().call({"HSET", "leader:", "not", "a marker"}).is_error());
  Fleet fleet(server);
  fleet.add(three_second_lease("first"));
  ASSERT_TRUE(fleet.wait_leading(0, "default", 15s));
  EXPECT_TRUE(fleet.events(0).errors.empty());
  EXPECT_EQ(server.admin().call({"TYPE", "leader:"}).str, "hash") << "left alone";
}

// Off, a brand-new group is taken at once (for throwaway test servers).
TEST(EmptyRestartGuard, OffABrandNewGroupIsTakenAtOnce) {
  lh::test::RedisServer server;
  Fleet fleet(server);
  auto options = three_second_lease("first");
  options.ttl = 20s;
  options.empty_restart_guard = false;
  fleet.add(options);
  ASSERT_TRUE(fleet.wait_leading(0, "default", 5s));
  EXPECT_EQ(fleet.events(0).elected.front().token, 1);
}

}  // namespace
}  // namespace integration_empty_restart_test
