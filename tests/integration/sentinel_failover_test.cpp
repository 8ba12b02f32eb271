// Leases across Sentinel failovers on a real topology (one master, two
// replicas, three sentinels): a killed master, a frozen master that comes
// back still believing it is the master, and SENTINEL FAILOVER. Two electors
// in one process; at every step of the event loop at most one may lead, and
// with confirm mode no token is handed out twice.
//
// Confirm mode promises no second leader with N = every replica. With fewer,
// SENTINEL FAILOVER can give one: after the promotion the other replica
// still follows the old master for a moment and acknowledges renewals there
// that the new master never sees (seen in CI with N = 1 of 2). The price of
// N = every replica: nothing is confirmed while a replica is missing.

#include "support/elector_fixture.hpp"
#include "support/sentinel_topology.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <optional>
#include <set>
#include <string>

namespace integration_sentinel_failover_test {
namespace {

namespace lh = leasehold;
using lh::test::Fleet;
using lh::test::expect_distinct_tokens;
using lh::test::SentinelTopology;
using namespace std::chrono_literals;

lh::ElectorOptions confirming(std::string id, int replicas = 2) {
  auto o = lh::test::fast_options(std::move(id));
  o.ttl = 2000ms;
  o.empty_restart_guard = false;  // a fresh group per test; the counter is replicated
  o.confirm_replicas = replicas;
  o.confirm_timeout = 200ms;
  return o;
}

lh::RedisOptions sentinel_redis(const SentinelTopology& topology) {
  auto options = lh::RedisOptions::from_url(topology.sentinel_url());
  options.command_timeout = 500ms;
  options.reconnect_max = 200ms;
  return options;
}

/// OverlapWatch, plus waiting for the sentinels' promotion.
struct Watch : lh::test::OverlapWatch {
  using OverlapWatch::OverlapWatch;

  /// Runs until the sentinels' majority names a node other than node 0 and
  /// its ROLE says master (20 s at most).
  std::optional<std::size_t> promotion(SentinelTopology& topology) {
    std::optional<std::size_t> promoted;
    const bool found = until([&] {
      promoted = topology.current_master();
      return promoted && *promoted != 0 && topology.has_master_role(*promoted);
    }, 20s);
    return found ? promoted : std::nullopt;
  }
};

/// Both electors campaign; returns once one leads. The first term waits for
/// the replicas' acknowledgements: a generous bound for a busy machine.
void start_two(Fleet& fleet, const SentinelTopology& topology, int replicas = 2) {
  fleet.add(confirming("a", replicas));
  fleet.add(confirming("b", replicas));
  ASSERT_TRUE(fleet.wait_single_leader("default", 30s)) << fleet.errors() << topology.log_tails();
}

bool someone_leads_on(Fleet& fleet, SentinelTopology& topology, std::size_t node) {
  const auto leaders = fleet.leaders();
  if (leaders.size() != 1) return false;
  const auto holder = topology.node(node).admin().get("leader:default");
  return holder && *holder == fleet.at(leaders.front()).instance_id();
}

// With N = every replica, the promoted replica alone cannot confirm: the
// group waits for the killed master to come back as its replica.
TEST(SentinelFailover, AfterTheMasterIsKilledTheGroupIsLedOnThePromotedReplicaOnceTheOldMasterRejoins) {
  SentinelTopology topology;
  Fleet fleet(sentinel_redis(topology));
  start_two(fleet, topology);
  topology.kill_master();
  Watch watch{fleet};
  const auto promoted = watch.promotion(topology);
  ASSERT_TRUE(promoted) << topology.log_tails();
  topology.restart_node(0);
  ASSERT_TRUE(watch.until([&] { return topology.is_replica_of(0, *promoted); }, 30s)) << topology.log_tails();
  EXPECT_TRUE(watch.until([&] { return someone_leads_on(fleet, topology, *promoted); }, 20s)) << topology.log_tails();
  EXPECT_FALSE(watch.overlap) << fleet.errors() << topology.log_tails();
  expect_distinct_tokens(fleet);
}

// N = replicas - 1 survives a crash without waiting: a killed master accepts
// nothing more, and Sentinel promotes the replica that is furthest ahead.
TEST(SentinelFailover, WithOneConfirmationOfTwoAKilledMasterIsFollowedWithoutWaitingForIt) {
  SentinelTopology topology;
  Fleet fleet(sentinel_redis(topology));
  start_two(fleet, topology, 1);
  topology.kill_master();
  Watch watch{fleet};
  const auto promoted = watch.promotion(topology);
  ASSERT_TRUE(promoted) << topology.log_tails();
  EXPECT_TRUE(watch.until([&] { return someone_leads_on(fleet, topology, *promoted); }, 20s)) << topology.log_tails();
  EXPECT_FALSE(watch.overlap) << fleet.errors() << topology.log_tails();
  expect_distinct_tokens(fleet);
}

// The dangerous one: the frozen master still holds connections and, resumed,
// still says it is the master until the sentinels demote it. Renewals there
// get no replica's acknowledgement, so they do not count.
TEST(SentinelFailover, AFrozenMasterThatComesBackAfterThePromotionNeverYieldsASecondLeader) {
  SentinelTopology topology;
  Fleet fleet(sentinel_redis(topology));
  start_two(fleet, topology);
  topology.pause_node(0);
  Watch watch{fleet};
  const auto promoted = watch.promotion(topology);
  ASSERT_TRUE(promoted) << topology.log_tails();
  topology.resume_node(0);
  ASSERT_TRUE(watch.until([&] { return topology.is_replica_of(0, *promoted); }, 30s)) << topology.log_tails();
  EXPECT_TRUE(watch.until([&] { return someone_leads_on(fleet, topology, *promoted); }, 20s))
      << fleet.errors() << topology.log_tails();
  EXPECT_FALSE(watch.overlap) << fleet.errors() << topology.log_tails();
  expect_distinct_tokens(fleet);
}

// SENTINEL FAILOVER: the old master keeps accepting writes for seconds; the
// +switch-master announcement moves both electors at once. The new master
// confirms once the sentinels have made the old one its replica (~10 s).
TEST(SentinelFailover, AManualFailoverMovesTheGroupToTheNewMasterWithoutASecondLeader) {
  SentinelTopology topology;
  Fleet fleet(sentinel_redis(topology));
  start_two(fleet, topology);
  topology.manual_failover();
  Watch watch{fleet};
  const auto promoted = watch.promotion(topology);
  ASSERT_TRUE(promoted) << topology.log_tails();
  EXPECT_TRUE(watch.until([&] { return someone_leads_on(fleet, topology, *promoted); }, 30s)) << topology.log_tails();
  watch.until([] { return false; }, 2s);  // two more seconds under watch
  EXPECT_FALSE(watch.overlap) << fleet.errors() << topology.log_tails();
  expect_distinct_tokens(fleet);
}

// A planned failover shorter than the ttl: +switch-master moves the leader's
// connection while its lease is still good; it renews on the new master,
// where the lease was replicated, and keeps its term and token. Without
// confirm mode: with N = 2 the renewal there would wait for the old master
// to become a replica (see above).
TEST(SentinelFailover, AManualFailoverShorterThanTheTtlKeepsTheLeaderAndItsToken) {
  SentinelTopology topology;
  Fleet fleet(sentinel_redis(topology));
  auto options = confirming("steady", 0);
  options.ttl = 10s;
  auto& leader = fleet.add(options);
  ASSERT_TRUE(fleet.wait_leading(0));
  auto standby_options = confirming("standby", 0);
  standby_options.ttl = 10s;
  fleet.add(standby_options);
  const auto token = fleet.events(0).elected.front().token;
  topology.manual_failover();
  Watch watch{fleet};
  const auto promoted = watch.promotion(topology);
  ASSERT_TRUE(promoted) << topology.log_tails();
  // Renewed there: the key's ttl on the new master was extended past what replication gave it.
  EXPECT_TRUE(watch.until([&] { return topology.node(*promoted).admin().call({"PTTL", "leader:default"}).integer > 9000; },
                          10s));
  EXPECT_TRUE(leader.is_leader());
  EXPECT_TRUE(fleet.events(0).revoked.empty()) << lh::to_string(fleet.events(0).revoked.front().reason);
  ASSERT_EQ(fleet.events(0).elected.size(), 1u);
  EXPECT_EQ(fleet.events(0).elected.front().token, token);
  EXPECT_TRUE(fleet.events(1).elected.empty());
  EXPECT_FALSE(watch.overlap);
}

}  // namespace
}  // namespace integration_sentinel_failover_test
