// The empty-restart guard (ElectorOptions::empty_restart_guard): a group
// whose fencing counter is missing is held by nobody for one ttl, so that a
// Redis that lost its data cannot hand a group to a new leader while the old
// one still trusts its lease.

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
  bool overlap = false;
  ASSERT_TRUE(run_until(fleet.io, [&] {
    overlap = overlap || fleet.leaders().size() > 1;
    return fleet.leading_with_event(1);
  }, 20s));
  EXPECT_FALSE(overlap) << "the standby led while the cut-off leader still trusted its lease";
  EXPECT_EQ(fleet.events(1).elected.front().token, 1) << "Redis lost the counter: tokens start again";
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
