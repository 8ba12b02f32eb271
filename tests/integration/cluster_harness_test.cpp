// Tests of the Redis Cluster harness: real masters and replicas on loopback,
// for the integration tests of a Cluster transport. Each test starts its own
// cluster; every wait is bounded. They also check the library's pure cluster
// logic (key_slot, SlotMap) against what the servers say.

#include <leasehold/impl/protocol/key_slot.hpp>
#include <leasehold/impl/cluster/slot_map_replies.hpp>
#include "support/admin_client.hpp"
#include "support/cluster_topology.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace integration_cluster_harness_test {
namespace {

using namespace std::chrono_literals;
using leasehold::redis::Reply;
using leasehold::test::ClusterTopology;
using leasehold::test::ClusterTopologyOptions;
using leasehold::test::describe_reply;
namespace cluster = leasehold::cluster::detail;

// A key whose slot `topology` says node `master` serves (found by trying).
std::string key_served_by(const ClusterTopology& topology, std::size_t master, const std::string& prefix) {
  for (int i = 0; i < 10000; ++i) {
    std::string key = prefix + std::to_string(i);
    if (topology.master_of_slot(cluster::key_slot(key)) == master) return key;
  }
  throw std::runtime_error("no key for node " + std::to_string(master));
}

// "MOVED <slot> 127.0.0.1:<port>" / "ASK ...": the redirection a node gives.
std::string redirection(const char* kind, int slot, const ClusterTopology& topology, std::size_t to) {
  return std::string(kind) + " " + std::to_string(slot) +
         " 127.0.0.1:" + std::to_string(topology.node(to).port());
}

std::size_t other_master(const ClusterTopology& topology, std::size_t master) {
  for (const std::size_t m : topology.masters()) {
    if (m != master) return m;
  }
  throw std::runtime_error("no other master");
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(HarnessCluster, FormsWithThreeMastersEachServingSlotsAndAReplicaEach) {
  ClusterTopology topology;
  ASSERT_EQ(topology.node_count(), 6u);
  const auto masters = topology.masters();
  ASSERT_EQ(masters.size(), 3u);

  std::set<std::string> ids;
  std::size_t covered = 0;
  for (const auto& view : topology.nodes()) {
    EXPECT_EQ(view.id, topology.node_id(view.index));
    EXPECT_EQ(view.health, "online") << topology.describe_node(view.index);
    ids.insert(view.id);
    if (view.master) {
      EXPECT_FALSE(view.slots.empty()) << topology.describe_node(view.index);
      EXPECT_TRUE(topology.has_master_role(view.index));
      EXPECT_EQ(topology.replicas_of(view.index).size(), 1u) << topology.describe_node(view.index);
      for (const auto& range : view.slots) covered += static_cast<std::size_t>(range.last - range.first + 1);
    } else {
      EXPECT_TRUE(view.slots.empty());
      ASSERT_TRUE(view.replica_of.has_value());
      EXPECT_NE(std::find(masters.begin(), masters.end(), *view.replica_of), masters.end());
      EXPECT_FALSE(topology.has_master_role(view.index));
    }
  }
  EXPECT_EQ(ids.size(), 6u);
  EXPECT_EQ(covered, 16384u);
  for (std::size_t i = 0; i < topology.node_count(); ++i) {
    EXPECT_TRUE(topology.reports_ok(i)) << topology.describe_node(i);
    EXPECT_NE(topology.node(i).cluster_port(), 0);
  }
  EXPECT_NO_THROW(topology.master_of_slot(0));
  EXPECT_NO_THROW(topology.master_of_slot(16383));
}

TEST(HarnessCluster, SlotMapFromALiveClusterMatchesTheHarness) {
  ClusterTopology topology;
  auto client = topology.node(0).admin();
  const Reply shards_reply = client.call({"CLUSTER", "SHARDS"});
  const Reply slots_reply = client.call({"CLUSTER", "SLOTS"});
  const auto shards = cluster::read_cluster_shards(shards_reply);
  const auto slots = cluster::read_cluster_slots(slots_reply);
  ASSERT_FALSE(shards.error) << shards.error.message() << "\n" << describe_reply(shards_reply);
  ASSERT_FALSE(slots.error) << slots.error.message() << "\n" << describe_reply(slots_reply);
  EXPECT_TRUE(shards.map.covers_all()) << shards.map.describe();
  EXPECT_EQ(shards.map, slots.map) << shards.map.describe() << "\nvs\n" << slots.map.describe();

  for (const auto& view : topology.nodes()) {
    for (const auto& range : view.slots) {
      for (const int slot : {range.first, (range.first + range.last) / 2, range.last}) {
        const auto* master = shards.map.master_of(static_cast<std::uint16_t>(slot));
        ASSERT_NE(master, nullptr) << slot;
        EXPECT_EQ(master->port, topology.node(view.index).port()) << "slot " << slot;
        EXPECT_EQ(master->id, view.id);
        EXPECT_EQ(master->host, "127.0.0.1");
      }
    }
  }
  // Each master's replica is listed beside it.
  for (const auto& range : shards.map.ranges()) {
    ASSERT_EQ(range.replicas.size(), 1u) << range.master.to_string();
    const auto replica = topology.index_of_port(range.replicas[0].port);
    const auto master = topology.index_of_port(range.master.port);
    ASSERT_TRUE(replica && master);
    const auto replicas = topology.replicas_of(*master);
    EXPECT_EQ(replicas, std::vector<std::size_t>{*replica});
  }
}

TEST(HarnessCluster, KeySlotAgreesWithClusterKeyslot) {
  ClusterTopology topology;
  std::vector<std::string> keys{"",          "123456789",
                                "foo",       "{user1}.following",
                                "{}",        "{",
                                "}",         "}{",
                                "a{b}c{d}",  "{}{a}",
                                "{{a}}",     "x{ }y",
                                "lease:{g}", std::string("a\0b", 3),
                                "\x80\xff",  "caf\xc3\xa9"};
  for (int i = 0; i < 200; ++i) keys.push_back("leasehold:group:" + std::to_string(i * 7919));
  for (const auto& key : keys) {
    EXPECT_EQ(cluster::key_slot(key), topology.key_slot(key)) << "key \"" << key << "\"";
  }
}

TEST(HarnessCluster, WrongNodeAnswersMovedNamingTheRightOne) {
  ClusterTopologyOptions options;
  options.password = "cluster \"secret\"";
  ClusterTopology topology(options);

  const std::size_t owner = topology.masters().front();
  const std::string key = key_served_by(topology, owner, "moved:");
  const int slot = cluster::key_slot(key);
  const std::size_t wrong = other_master(topology, owner);

  const Reply refused = topology.node(wrong).admin().call({"SET", key, "v"});
  ASSERT_TRUE(refused.is_error()) << describe_reply(refused);
  EXPECT_EQ(refused.str, redirection("MOVED", slot, topology, owner));

  topology.node(owner).admin().set(key, "v");
  EXPECT_EQ(topology.node(owner).admin().get(key), "v");
  // A replica redirects too (no READONLY on the connection).
  const std::size_t replica = topology.replicas_of(owner).at(0);
  const Reply from_replica = topology.node(replica).admin().call({"GET", key});
  EXPECT_EQ(from_replica.str, redirection("MOVED", slot, topology, owner)) << describe_reply(from_replica);
}

TEST(HarnessCluster, MigrationGivesAskTryagainThenMoved) {
  ClusterTopology topology;
  const std::size_t from = topology.masters().front();
  const std::size_t to = other_master(topology, from);
  const std::string tag = key_served_by(topology, from, "tag");
  const std::string first = "{" + tag + "}:a";
  const std::string second = "{" + tag + "}:b";
  const int slot = cluster::key_slot(tag);
  auto source = topology.node(from).admin();
  source.set(first, "1");
  source.set(second, "2");

  topology.begin_migration(slot, to);
  // Keys still on the old master are served there.
  EXPECT_EQ(source.get(first), "1");
  // A key it does not have: ASK, in case the new master has it.
  EXPECT_EQ(source.call({"GET", "{" + tag + "}:missing"}).str, redirection("ASK", slot, topology, to));

  ASSERT_EQ(topology.migrate_keys(slot, 1), 1u);
  // One key moved, one not: a command on both cannot run anywhere yet.
  const Reply split = source.call({"MGET", first, second});
  ASSERT_TRUE(split.is_error()) << describe_reply(split);
  EXPECT_EQ(split.str.rfind("TRYAGAIN", 0), 0u) << split.str;

  ASSERT_EQ(topology.migrate_keys(slot), 1u);
  EXPECT_EQ(source.call({"GET", first}).str, redirection("ASK", slot, topology, to));
  auto target = topology.node(to).admin();
  // Without ASKING the new master sends the client back to the old one.
  EXPECT_EQ(target.call({"GET", first}).str, redirection("MOVED", slot, topology, from));
  // With ASKING it serves the next command, and only that one.
  EXPECT_EQ(target.call({"ASKING"}).str, "OK");
  const Reply both = target.call({"MGET", first, second});
  ASSERT_TRUE(both.is_array()) << describe_reply(both);
  EXPECT_EQ(both.elements.at(0).str, "1");
  EXPECT_EQ(both.elements.at(1).str, "2");
  EXPECT_EQ(target.call({"GET", first}).str, redirection("MOVED", slot, topology, from));

  topology.finish_migration(slot);
  EXPECT_EQ(topology.master_of_slot(slot), to);
  EXPECT_EQ(source.call({"GET", first}).str, redirection("MOVED", slot, topology, to));
  EXPECT_EQ(target.get(first), "1");
  EXPECT_EQ(topology.wait_until_ok()[static_cast<std::size_t>(slot)], static_cast<int>(to));
}

TEST(HarnessCluster, KilledMasterIsReplacedByItsReplicaAndRejoinsAsOne) {
  ClusterTopology topology;
  const std::size_t master = topology.masters().front();
  const std::size_t replica = topology.replicas_of(master).at(0);
  const std::string key = key_served_by(topology, master, "kill:");
  auto client = topology.node(master).admin();
  client.set(key, "kept");
  ASSERT_EQ(client.call({"WAIT", "1", "2000"}).integer, 1);

  const auto killed_at = std::chrono::steady_clock::now();
  topology.kill(master);
  const std::size_t promoted = topology.wait_for_promotion(master, 20s);
  const double promotion_s = seconds_since(killed_at);
  std::cout << "[ cluster  ] master killed -> replica promoted and every node ok: " << promotion_s << " s\n";
  ::testing::Test::RecordProperty("promotion_ms", static_cast<int>(promotion_s * 1000));
  EXPECT_EQ(promoted, replica);
  EXPECT_TRUE(topology.has_master_role(promoted));
  EXPECT_EQ(topology.master_of_slot(cluster::key_slot(key)), promoted);
  EXPECT_EQ(topology.node(promoted).admin().get(key), "kept");
  for (std::size_t i = 0; i < topology.node_count(); ++i) {
    if (i == master) continue;
    EXPECT_TRUE(topology.reports_ok(i)) << topology.describe_node(i);
  }

  // Back with its nodes.conf: the cluster makes it a replica of the node
  // that replaced it (its dataset comes back by full sync).
  topology.restart(master);
  topology.wait_until_settled();
  EXPECT_EQ(topology.replicas_of(promoted), std::vector<std::size_t>{master});
  EXPECT_EQ(topology.node(master).admin().call({"READONLY"}).str, "OK");
}

TEST(HarnessCluster, ClusterFailoverSwapsRoles) {
  ClusterTopology topology;
  const std::size_t master = topology.masters().front();
  const std::size_t replica = topology.replicas_of(master).at(0);
  int slot = -1;
  for (const auto& view : topology.nodes()) {
    if (view.index == master) slot = view.slots.at(0).first;
  }

  const auto started = std::chrono::steady_clock::now();
  topology.failover(replica);
  std::cout << "[ cluster  ] CLUSTER FAILOVER -> roles swapped, every node agrees: " << seconds_since(started)
            << " s\n";
  EXPECT_EQ(topology.master_of_slot(slot), replica);
  EXPECT_TRUE(topology.has_master_role(replica));
  EXPECT_FALSE(topology.has_master_role(master));
  EXPECT_EQ(topology.replicas_of(replica), std::vector<std::size_t>{master});
  for (std::size_t i = 0; i < topology.node_count(); ++i) {
    EXPECT_TRUE(topology.reports_ok(i)) << topology.describe_node(i);
  }
}

TEST(HarnessCluster, PausedMasterIsReplacedAndBecomesAReplicaWhenResumed) {
  ClusterTopology topology;
  const std::size_t master = topology.masters().front();
  const std::size_t replica = topology.replicas_of(master).at(0);

  topology.pause(master);
  EXPECT_FALSE(topology.is_live(master));
  EXPECT_EQ(topology.wait_for_promotion(master, 20s), replica);

  // Resumed, it learns from the cluster bus that its slots have a newer
  // owner and turns into that node's replica.
  topology.resume(master);
  topology.wait_until_settled();
  EXPECT_FALSE(topology.has_master_role(master));
  EXPECT_EQ(topology.replicas_of(replica), std::vector<std::size_t>{master});
}

}  // namespace
}  // namespace integration_cluster_harness_test
