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

// A server with a fault proxy in front: electors added through_proxy() can
// be cut off (proxy.blackhole()) while the server restarts.
struct ProxiedServer {
  lh::Elector& through_proxy(lh::ElectorOptions options) {
    return fleet.add(std::move(options), proxy.options_for(server.options()));
  }

  lh::test::RedisServer server;
  lh::test::FaultProxy proxy{server.port()};
  Fleet fleet{server};
};

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
  ProxiedServer s;
  auto& fleet = s.fleet;
  s.through_proxy(three_second_lease("cut-off"));
  ASSERT_TRUE(fleet.wait_leading(0));

  s.proxy.blackhole();
  s.server.restart();
  fleet.add(three_second_lease("standby"));
  ASSERT_TRUE(leads_without_overlap(fleet, 1, "default"));
  EXPECT_EQ(fleet.events(1).elected.front().token, 1) << "Redis lost the counter: tokens start again";
}

// Once the server's data marker is one ttl old (written by the first
// group's guard), a new group is elected within a round trip. The marker is
// aged by an hour here, so that the new group's ttl (a minute) can tell a
// guard's wait from a slow machine by far.
TEST(EmptyRestartGuard, ANewGroupOnAServerThatKeptItsDataIsElectedAtOnce) {
  lh::test::RedisServer server;
  Fleet fleet(server);
  fleet.add(three_second_lease("first"));
  ASSERT_TRUE(fleet.wait_leading(0, "default", 15s)) << "the first group waits out the guard";
  auto admin = server.admin();
  const auto marker = admin.get("leader:");
  ASSERT_TRUE(marker.has_value()) << "the guard wrote the data marker";
  const auto space = marker->find(' ');
  ASSERT_NE(space, std::string::npos) << *marker;
  const long long written = std::stoll(marker->substr(space + 1));
  admin.set("leader:", marker->substr(0, space + 1) + std::to_string(written - 3'600'000));

  auto options = three_second_lease("second");
  options.ttl = 60s;
  options.groups = {"reports"};
  fleet.add(options);
  ASSERT_TRUE(fleet.wait_leading(1, "reports", 15s)) << "a new group waited for the guard";
  EXPECT_EQ(fleet.events(1).elected.front().token, 1);
  EXPECT_EQ(admin.get("leader:reports"), "second");
}

// A restart from a snapshot keeps an old marker but changes the server's
// run_id: a group begun after the snapshot lost its counter and lease, and
// still waits out the guard while its cut-off leader trusts its lease.
TEST(EmptyRestartGuard, ARestartFromASnapshotWhileTheLeaderIsCutOffNeverGivesTwoLeaders) {
  ProxiedServer s;
  auto& fleet = s.fleet;
  s.through_proxy(three_second_lease("first"));
  ASSERT_TRUE(fleet.wait_leading(0, "default", 15s)) << "the first group waits out the guard";
  ASSERT_FALSE(s.server.admin().call({"SAVE"}).is_error());

  auto late = three_second_lease("cut-off");
  late.groups = {"late"};
  s.through_proxy(late);
  ASSERT_TRUE(fleet.wait_leading(1, "late", 1500ms)) << "the marker is a ttl old: no guard";

  s.proxy.blackhole();
  s.server.restart_from_snapshot();
  ASSERT_TRUE(s.server.admin().get("leader:").has_value()) << "the snapshot's marker is back";
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
