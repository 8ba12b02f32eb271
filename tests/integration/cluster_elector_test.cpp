// Electors on a real Redis Cluster (redis-cluster:// options): groups spread
// over every shard with one leader each, keys hash-tagged into their
// group's slot, names with braces refused, and a shard's master killed with
// the other shards' leaders left alone.

#include "cluster/key_slot.hpp"
#include "support/admin_client.hpp"
#include "support/cluster_topology.hpp"
#include "support/elector_fixture.hpp"

#include <leasehold/leasehold.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
namespace cluster = leasehold::cluster::detail;
using leasehold::ElectorOptions;
using leasehold::RedisOptions;
using leasehold::test::ClusterTopology;
using leasehold::test::ClusterTopologyOptions;
using leasehold::test::Fleet;

RedisOptions cluster_url_options(const ClusterTopology& topology) {
  RedisOptions o = RedisOptions::from_url(topology.url() + "?refresh_interval=1000");
  o.reconnect_max = std::chrono::milliseconds(200);
  return o;
}

std::vector<std::string> group_names(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back("g" + std::to_string(i));
  return out;
}

ElectorOptions options_for(std::string id, const std::vector<std::string>& groups,
                           std::chrono::milliseconds ttl = 1500ms) {
  ElectorOptions o = leasehold::test::fast_options(std::move(id));
  o.ttl = ttl;
  o.groups = groups;
  o.key_prefix = "cl:";
  return o;
}

// Every group led by exactly one of the fleet's electors now.
bool one_leader_each(const Fleet& fleet, const std::vector<std::string>& groups) {
  for (const auto& g : groups) {
    if (fleet.leaders(g).size() != 1) return false;
  }
  return true;
}

// The shard (master index) that serves `group`'s keys, per the harness.
std::size_t shard_of(const ClusterTopology& topology, const std::string& group) {
  return topology.master_of_slot(topology.key_slot("cl:{" + group + "}"));
}

TEST(ClusterElector, GroupsSpreadOverEveryShardHaveOneLeaderEachWithTheirKeysInOneSlot) {
  ClusterTopologyOptions topology_options;
  topology_options.replicas_per_master = 0;
  ClusterTopology topology(topology_options);
  const auto groups = group_names(60);
  Fleet fleet(cluster_url_options(topology));
  fleet.add(options_for("a", groups));
  fleet.add(options_for("b", groups));

  ASSERT_TRUE(leasehold::test::run_until(fleet.io, [&] { return one_leader_each(fleet, groups); }, 30s));
  std::set<std::size_t> shards;
  for (const auto& g : groups) {
    const std::size_t shard = shard_of(topology, g);
    shards.insert(shard);
    // The lease and its token are on the master of the group's slot,
    // holding the leader's id and the term's token.
    auto admin = topology.node(shard).admin();
    const auto holder = admin.get("cl:{" + g + "}");
    ASSERT_TRUE(holder.has_value()) << g;
    const std::size_t leader = fleet.leaders(g).front();
    EXPECT_EQ(*holder, leader == 0 ? "a" : "b") << g;
    EXPECT_TRUE(admin.get("cl:{" + g + "}:token").has_value()) << g;
  }
  EXPECT_EQ(shards.size(), 3u) << "60 groups should land on every shard";

  // Standbys keep standing by: one leader per group over a few heartbeats.
  bool single = true;
  leasehold::test::run_until(fleet.io, [&] {
    for (const auto& g : groups) single = single && fleet.leaders(g).size() == 1;
    return false;
  }, 2s);
  EXPECT_TRUE(single);
  EXPECT_TRUE(fleet.metrics(0).commands.connected);
  EXPECT_GT(fleet.metrics(0).commands.commands_sent, 0u);

  // A step-down hands the group over.
  const std::size_t first = fleet.leaders("g0").front();
  std::optional<leasehold::error_code> stepped;
  fleet.at(first).step_down("g0", [&](leasehold::error_code ec) { stepped = ec; });
  ASSERT_TRUE(leasehold::test::run_until(fleet.io, [&] {
    return stepped.has_value() && fleet.leaders("g0").size() == 1 && fleet.leaders("g0").front() != first;
  }, 10s));
  EXPECT_FALSE(*stepped);
}

// With a 30 s ttl and a 20 s retry interval, a standby that took over
// within 10 s of a step-down heard the release on the group's shard channel:
// it would otherwise look again only 20 s after its last attempt.
TEST(ClusterElector, AStepDownIsHeardOnTheGroupsShardChannel) {
  ClusterTopologyOptions topology_options;
  topology_options.replicas_per_master = 0;
  ClusterTopology topology(topology_options);
  const std::vector<std::string> groups{"orders", "billing", "reports"};
  Fleet fleet(cluster_url_options(topology));
  for (const char* id : {"a", "b"}) {
    ElectorOptions o = options_for(id, groups, 30000ms);
    o.retry_interval = 20000ms;
    o.empty_restart_guard = false;
    fleet.add(o);
  }
  ASSERT_TRUE(leasehold::test::run_until(fleet.io, [&] { return one_leader_each(fleet, groups); }, 20s));
  // Both electors' channels confirmed before the step-downs (a standby
  // subscribes after its first acquire attempt at the latest).
  leasehold::test::run_for(fleet.io, 1s);
  for (const auto& g : groups) {
    const std::size_t leader = fleet.leaders(g).front();
    std::optional<leasehold::error_code> stepped;
    fleet.at(leader).step_down(g, [&](leasehold::error_code ec) { stepped = ec; });
    ASSERT_TRUE(leasehold::test::run_until(fleet.io, [&] {
      return stepped.has_value() && fleet.leaders(g).size() == 1 && fleet.leaders(g).front() != leader;
    }, 10s)) << g << ": the standby did not take over at the release notice";
    EXPECT_FALSE(*stepped);
  }
}

TEST(ClusterElector, GroupNamesWithBracesAreRefusedNamingTheGroup) {
  ClusterTopologyOptions topology_options;
  topology_options.replicas_per_master = 0;
  ClusterTopology topology(topology_options);
  boost::asio::io_context io;
  try {
    leasehold::Elector elector(io.get_executor(), cluster_url_options(topology), options_for("a", {"a{b}"}));
    FAIL() << "a group name with braces was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("a{b}"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Cluster"), std::string::npos) << e.what();
  }
  Fleet fleet(cluster_url_options(topology));
  auto& elector = fleet.add(options_for("a", {}));
  std::optional<leasehold::error_code> acquired;
  elector.acquire("x}y", [&](leasehold::error_code ec, leasehold::Term) { acquired = ec; });
  ASSERT_TRUE(leasehold::test::run_until(fleet.io, [&] { return acquired.has_value(); }));
  EXPECT_EQ(*acquired, leasehold::errc::invalid_argument);
}

TEST(ClusterElector, AKilledShardMasterLeavesOtherShardsLeadersInPlaceAndItsGroupsAreLedAgain) {
  ClusterTopologyOptions topology_options;
  // Without it every node answers CLUSTERDOWN until the promotion, and every
  // group's renewals fail (docs/cluster.md).
  topology_options.extra_config = {"cluster-require-full-coverage no"};
  ClusterTopology topology(topology_options);
  const auto groups = group_names(30);
  Fleet fleet(cluster_url_options(topology));
  fleet.add(options_for("a", groups, 5000ms));
  fleet.add(options_for("b", groups, 5000ms));
  ASSERT_TRUE(leasehold::test::run_until(fleet.io, [&] { return one_leader_each(fleet, groups); }, 30s));

  const std::size_t victim = topology.masters().front();
  std::vector<std::string> victims;
  std::map<std::string, std::size_t> kept;  // other shards' groups and their leaders
  for (const auto& g : groups) {
    if (shard_of(topology, g) == victim) {
      victims.push_back(g);
    } else {
      kept[g] = fleet.leaders(g).front();
    }
  }
  ASSERT_FALSE(victims.empty());
  ASSERT_FALSE(kept.empty());
  const std::size_t heir = topology.replicas_of(victim).front();

  topology.kill(victim);
  bool never_two = true;
  bool kept_in_place = true;
  auto watching = [&](auto done) {
    return [&, done] {
      for (const auto& g : groups) never_two = never_two && fleet.leaders(g).size() <= 1;
      for (const auto& [g, leader] : kept) {
        const auto now = fleet.leaders(g);
        kept_in_place = kept_in_place && now.size() == 1 && now.front() == leader;
      }
      return done();
    };
  };
  // The killed shard's leaders step back at their next renewal...
  EXPECT_TRUE(leasehold::test::run_until(fleet.io, watching([&] { return fleet.leaders(victims.front()).empty(); }),
                                         15s));
  // ... and its groups are led again once the replica serves their slots.
  EXPECT_TRUE(leasehold::test::run_until(fleet.io, watching([&] { return one_leader_each(fleet, groups); }), 40s))
      << "the killed shard's groups were not led again";
  EXPECT_TRUE(topology.has_master_role(heir));
  EXPECT_TRUE(never_two);
  EXPECT_TRUE(kept_in_place) << "a group on another shard changed leader";
  // Revocations only for the killed shard's groups.
  for (std::size_t i = 0; i < 2; ++i) {
    for (const auto& ev : fleet.events(i).revoked) {
      EXPECT_EQ(kept.count(ev.group), 0u) << ev.group << " was revoked but lives on another shard";
    }
  }
}

}  // namespace
