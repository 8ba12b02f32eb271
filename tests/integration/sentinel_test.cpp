// The Sentinel transport (redis-sentinel:// URLs) on a real topology: one
// master, two replicas and three sentinels, each a redis-server the harness
// started on loopback.

#include "support/elector_fixture.hpp"
#include "support/sentinel_topology.hpp"

#include <leasehold/redis/client.hpp>

#include <gtest/gtest.h>

#include <string>

namespace lh = leasehold;
using lh::test::Fleet;
using lh::test::run_until;
using lh::test::SentinelTopology;
using namespace std::chrono_literals;

namespace {

lh::ElectorOptions sentinel_options(std::string id) {
  auto o = lh::test::fast_options(std::move(id));
  o.empty_restart_guard = false;  // each test starts from a fresh group
  return o;
}

lh::RedisOptions sentinel_redis(const SentinelTopology& topology) {
  auto options = lh::RedisOptions::from_url(topology.sentinel_url());
  options.command_timeout = 500ms;
  options.reconnect_max = 200ms;
  return options;
}

}  // namespace

TEST(Sentinel, AnElectorFindsTheMasterThroughTheSentinelsAndLeads) {
  SentinelTopology topology;
  Fleet fleet(sentinel_redis(topology));
  fleet.add(sentinel_options("first"));
  ASSERT_TRUE(fleet.wait_leading(0));
  EXPECT_EQ(topology.node(0).admin().get("leader:default"), "first");
}

TEST(Sentinel, AfterTheMasterIsKilledTheLeaseMovesToThePromotedReplica) {
  SentinelTopology topology;
  Fleet fleet(sentinel_redis(topology));
  fleet.add(sentinel_options("a"));
  ASSERT_TRUE(fleet.wait_leading(0));
  topology.kill_master();
  const auto promoted = topology.wait_for_new_master(0);
  ASSERT_TRUE(run_until(fleet.io, [&] {
    return fleet.at(0).is_leader() && topology.node(promoted).admin().get("leader:default") == "a";
  }, 20s)) << topology.log_tails();
}
