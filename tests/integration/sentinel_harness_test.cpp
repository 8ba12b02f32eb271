// Tests of the Sentinel harness: a real master, replicas and sentinels on
// loopback, for the integration tests of a Sentinel transport. Each test
// starts its own topology; every wait is bounded.

#include "support/admin_client.hpp"
#include "support/sentinel_topology.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>

namespace integration_sentinel_harness_test {
namespace {

using namespace std::chrono_literals;
using leasehold::test::AdminClient;
using leasehold::test::AdminClientOptions;
using leasehold::test::reply_fields;
using leasehold::test::SentinelTopology;
using leasehold::test::SentinelTopologyOptions;

// The master as sentinel j describes it (SENTINEL MASTER).
std::map<std::string, std::string> master_seen_by(const SentinelTopology& topology, std::size_t j) {
  return reply_fields(topology.sentinel_admin(j).call(
      {"SENTINEL", "MASTER", topology.topology_options().master_name}));
}

void expect_sees_whole_topology(const SentinelTopology& topology, std::size_t master) {
  const std::string master_port = std::to_string(topology.node(master).port());
  for (std::size_t j = 0; j < topology.sentinel_count(); ++j) {
    const auto seen = master_seen_by(topology, j);
    EXPECT_EQ(seen.at("port"), master_port) << "sentinel " << j;
    EXPECT_EQ(seen.at("flags"), "master") << "sentinel " << j;
    EXPECT_EQ(seen.at("num-slaves"), "2") << "sentinel " << j;
    EXPECT_EQ(seen.at("num-other-sentinels"), "2") << "sentinel " << j;
    EXPECT_EQ(topology.reported_master(j), master) << "sentinel " << j;
  }
}

// Of nodes 1 and 2 (the initial replicas), the one not promoted.
std::size_t other_replica(std::size_t promoted) { return promoted == 1 ? 2 : 1; }

// SET on the master, then WAIT for both replicas to acknowledge it.
long long write_and_wait_for_replicas(const SentinelTopology& topology, std::size_t master) {
  auto client = topology.node(master).admin();
  client.set("harness:sentinel", "replicated");
  return client.call({"WAIT", "2", "1000"}).integer;
}

TEST(HarnessSentinel, StartsWithEverySentinelSeeingMasterReplicasAndSentinels) {
  SentinelTopology topology;
  ASSERT_EQ(topology.node_count(), 3u);
  ASSERT_EQ(topology.sentinel_count(), 3u);
  EXPECT_EQ(topology.master_index(), 0u);
  expect_sees_whole_topology(topology, 0);
  EXPECT_EQ(topology.current_master(), 0u);
  EXPECT_TRUE(topology.has_master_role(0));
  EXPECT_FALSE(topology.has_master_role(1));
  EXPECT_TRUE(topology.is_replica_of(2, 0));

  EXPECT_EQ(write_and_wait_for_replicas(topology, 0), 2);
  EXPECT_EQ(topology.node(1).admin().get("harness:sentinel"), "replicated");
  EXPECT_EQ(topology.node(2).admin().get("harness:sentinel"), "replicated");

  const auto port = [&](std::size_t j) { return std::to_string(topology.sentinel_port(j)); };
  EXPECT_EQ(topology.sentinel_url(), "redis-sentinel://127.0.0.1:" + port(0) + ",127.0.0.1:" +
                                         port(1) + ",127.0.0.1:" + port(2) + "#leasehold");
}

TEST(HarnessSentinel, KilledMasterIsReplacedAndRejoinsAsAReplica) {
  SentinelTopology topology;
  ASSERT_EQ(write_and_wait_for_replicas(topology, 0), 2);

  topology.kill_master();
  const std::size_t promoted = topology.wait_for_new_master(0, 20s);
  EXPECT_NE(promoted, 0u);
  EXPECT_EQ(topology.master_index(), promoted);
  EXPECT_TRUE(topology.has_master_role(promoted));
  EXPECT_EQ(topology.node(promoted).admin().get("harness:sentinel"), "replicated");
  EXPECT_NO_THROW(topology.wait_for_replica_of(other_replica(promoted), promoted, 20s));

  // Back empty, pointed at the new master: it resynchronises from it.
  topology.restart_node(0);
  EXPECT_NO_THROW(topology.wait_for_replica_of(0, promoted, 20s));
  EXPECT_EQ(topology.node(0).admin().get("harness:sentinel"), "replicated");
}

TEST(HarnessSentinel, ManualFailoverMovesTheMasterWithoutKillingAnything) {
  SentinelTopology topology;

  topology.manual_failover();
  const std::size_t promoted = topology.wait_for_new_master(0, 20s);
  EXPECT_NE(promoted, 0u);
  EXPECT_TRUE(topology.has_master_role(promoted));
  for (std::size_t i = 0; i < topology.node_count(); ++i) {
    EXPECT_TRUE(topology.node(i).running()) << "node " << i;
  }
  EXPECT_NO_THROW(topology.wait_for_replica_of(other_replica(promoted), promoted, 20s));
  // Sentinel does not demote the old master during the failover: it stays a
  // master until a sentinel converts it (+convert-to-slave, seconds later).
  EXPECT_NO_THROW(topology.wait_for_replica_of(0, promoted, 30s));
}

TEST(HarnessSentinel, PasswordsOnDataNodesAndSentinels) {
  SentinelTopologyOptions options;
  options.data_password = "data \"secret\"";
  options.sentinel_password = "sentinel secret";
  SentinelTopology topology(options);
  expect_sees_whole_topology(topology, 0);
  EXPECT_EQ(write_and_wait_for_replicas(topology, 0), 2);

  const auto unauthenticated_ping = [](std::uint16_t port) {
    AdminClientOptions anonymous;
    anonymous.port = port;
    return AdminClient(anonymous).call({"PING"});
  };
  const auto sentinel_reply = unauthenticated_ping(topology.sentinel_port(0));
  EXPECT_TRUE(sentinel_reply.is_error() && sentinel_reply.str.rfind("NOAUTH", 0) == 0)
      << leasehold::test::describe_reply(sentinel_reply);
  const auto node_reply = unauthenticated_ping(topology.node(0).port());
  EXPECT_TRUE(node_reply.is_error() && node_reply.str.rfind("NOAUTH", 0) == 0)
      << leasehold::test::describe_reply(node_reply);

  // A sentinel that cannot authenticate to another still lists it as healthy
  // for down-after-milliseconds; a failover needs their votes, so it proves
  // the sentinel password works between them (and the data password to the
  // replicas).
  topology.kill_master();
  const std::size_t promoted = topology.wait_for_new_master(0, 20s);
  EXPECT_NO_THROW(topology.wait_for_replica_of(other_replica(promoted), promoted, 20s));
}

TEST(HarnessSentinel, RestartedSentinelComesBackWithItsIdentity) {
  SentinelTopology topology;

  topology.kill_sentinel(2);
  EXPECT_FALSE(topology.reported_master(2).has_value());
  EXPECT_EQ(topology.current_master(), 0u);  // two of three still answer

  topology.restart_sentinel(2);
  EXPECT_NO_THROW(topology.wait_until_settled());
  // Same id from its rewritten config: the others do not count it twice.
  expect_sees_whole_topology(topology, 0);
}

}  // namespace
}  // namespace integration_sentinel_harness_test
