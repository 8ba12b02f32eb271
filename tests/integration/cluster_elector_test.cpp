// Electors on a real Redis Cluster (redis-cluster:// options): groups spread
// over every shard with one leader each, keys hash-tagged into their
// group's slot, names with braces refused; and the cluster's own events
// under led groups: a slot migration (ASK, TRYAGAIN, MOVED), a shard's master
// killed (with and without confirm mode), a manual failover, and a shard
// with no master (CLUSTERDOWN everywhere).

#include "support/admin_client.hpp"
#include "support/cluster_topology.hpp"
#include "support/elector_fixture.hpp"
#include "support/log_capture.hpp"
#include "support/node_probe.hpp"
#include "support/slot_names.hpp"

#include <leasehold/leasehold.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <cstdio>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace integration_cluster_elector_test {
namespace {

using namespace std::chrono_literals;
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

// Runs `action` (a harness call that may block for seconds) on another
// thread while the fleet's electors keep running here, calling `check`
// between their turns. Rethrows what the action threw.
void while_running(Fleet& fleet, const std::function<void()>& action, const std::function<void()>& check) {
  std::exception_ptr failure;
  bool done = false;
  std::mutex mutex;
  std::thread worker([&] {
    try {
      action();
    } catch (...) {
      failure = std::current_exception();
    }
    std::lock_guard lock(mutex);
    done = true;
  });
  leasehold::test::run_until(fleet.io, [&] {
    check();
    std::lock_guard lock(mutex);
    return done;
  }, 120s);
  worker.join();
  if (failure) std::rethrow_exception(failure);
}

// Whether any group ever had two leaders, and whether the leaders of
// `steady` ever changed, over the checks made.
struct LeaderWatch {
  LeaderWatch(const Fleet& fleet, std::vector<std::string> groups, std::map<std::string, std::size_t> steady)
      : fleet(fleet), groups(std::move(groups)), steady(std::move(steady)) {}
  void check() {
    for (const auto& g : groups) never_two = never_two && fleet.leaders(g).size() <= 1;
    for (const auto& [g, leader] : steady) {
      const auto now = fleet.leaders(g);
      if (now.size() != 1 || now.front() != leader) changed.insert(g);
    }
  }
  std::function<void()> checker() {
    return [this] { check(); };
  }
  const Fleet& fleet;
  std::vector<std::string> groups;
  std::map<std::string, std::size_t> steady;
  bool never_two = true;
  std::set<std::string> changed;
};

std::map<std::string, std::size_t> leaders_now(const Fleet& fleet, const std::vector<std::string>& groups) {
  std::map<std::string, std::size_t> out;
  for (const auto& g : groups) out[g] = fleet.leaders(g).at(0);
  return out;
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

// Electors "a" and "b" campaigning for `groups` with a 30 s ttl and a 20 s
// retry interval (no empty-restart guard): a standby that takes over within
// 10 s of a step-down heard the release notice.
void add_notice_listeners(Fleet& fleet, const std::vector<std::string>& groups) {
  for (const char* id : {"a", "b"}) {
    ElectorOptions o = options_for(id, groups, 30000ms);
    o.retry_interval = 20000ms;
    o.empty_restart_guard = false;
    fleet.add(o);
  }
}

// Each group's leader steps down in turn; its standby must take over within
// 10 s, which (add_notice_listeners' timings) only the release notice does.
void step_down_each_heard_at_once(Fleet& fleet, const std::vector<std::string>& groups) {
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

// With a 30 s ttl and a 20 s retry interval, a standby that took over
// within 10 s of a step-down heard the release on the group's shard channel:
// it would otherwise look again only 20 s after its last attempt.
TEST(ClusterElector, AStepDownIsHeardOnTheGroupsShardChannel) {
  ClusterTopologyOptions topology_options;
  topology_options.replicas_per_master = 0;
  ClusterTopology topology(topology_options);
  const std::vector<std::string> groups{"orders", "billing", "reports"};
  Fleet fleet(cluster_url_options(topology));
  add_notice_listeners(fleet, groups);
  ASSERT_TRUE(leasehold::test::run_until(fleet.io, [&] { return one_leader_each(fleet, groups); }, 20s));
  // Both electors' channels confirmed before the step-downs (a standby
  // subscribes after its first acquire attempt at the latest).
  leasehold::test::run_for(fleet.io, 1s);
  step_down_each_heard_at_once(fleet, groups);
}

// A cluster without sharded pub/sub (Redis 6, KeyDB; here the commands are
// renamed away): the release scripts PUBLISH, which the cluster broadcasts,
// and the standbys SUBSCRIBE. As above, a takeover within 10 s is a notice's.
TEST(ClusterElector, WithoutShardedPubSubAStepDownIsHeardThroughPublish) {
  ClusterTopologyOptions topology_options;
  topology_options.replicas_per_master = 0;
  topology_options.extra_config = {"rename-command SPUBLISH \"\"", "rename-command SSUBSCRIBE \"\"",
                                   "rename-command SUNSUBSCRIBE \"\""};
  ClusterTopology topology(topology_options);
  leasehold::test::LogCapture log(leasehold::LogLevel::warning);
  const std::vector<std::string> groups{"orders", "billing", "reports"};
  Fleet fleet(cluster_url_options(topology));
  add_notice_listeners(fleet, groups);
  ASSERT_TRUE(leasehold::test::run_until(fleet.io, [&] { return one_leader_each(fleet, groups); }, 20s));
  leasehold::test::run_for(fleet.io, 1s);
  step_down_each_heard_at_once(fleet, groups);
  EXPECT_FALSE(log.matching({"has no sharded pub/sub", "SUBSCRIBE and PUBLISH"}).empty());
  for (std::size_t i = 0; i < 2; ++i) {
    for (const auto& e : fleet.events(i).errors) ADD_FAILURE() << i << " [" << e.group << "]: " << e.error.message();
  }
}

// Names "s<i>" whose keys (under the "cl:" prefix) share one slot.
std::vector<std::string> names_in_one_slot(std::size_t count) {
  return leasehold::test::names_in_one_slot(count, [](const std::string& name) { return "cl:{" + name + "}"; });
}

// The groups of one slot share its release channel: a step-down there is
// heard by that group's standby only (the others keep their leaders), and a
// group registered after the channel was confirmed hears its releases too.
// As above, a takeover within 10 s (ttl 30 s, retry 20 s) is a notice's.
TEST(ClusterElector, GroupsOfOneSlotShareItsChannelAndEachHearsItsOwnReleases) {
  ClusterTopologyOptions topology_options;
  topology_options.replicas_per_master = 0;
  ClusterTopology topology(topology_options);
  const auto same_slot = names_in_one_slot(3);
  const std::vector<std::string> groups{same_slot[0], same_slot[1]};
  const std::string late = same_slot[2];
  Fleet fleet(cluster_url_options(topology));
  add_notice_listeners(fleet, groups);
  ASSERT_TRUE(leasehold::test::run_until(fleet.io, [&] { return one_leader_each(fleet, groups); }, 20s));
  leasehold::test::run_for(fleet.io, 1s);  // both electors' channel confirmed
  for (std::size_t i = 0; i < 2; ++i) fleet.at(i).group(late);
  ASSERT_TRUE(leasehold::test::run_until(fleet.io, [&] { return fleet.leaders(late).size() == 1; }, 20s));
  leasehold::test::run_for(fleet.io, 1s);

  for (const auto& g : {groups[0], late}) {
    std::vector<std::string> others;
    for (const auto& o : same_slot) {
      if (o != g) others.push_back(o);
    }
    LeaderWatch watch(fleet, same_slot, leaders_now(fleet, others));
    const std::size_t leader = fleet.leaders(g).front();
    std::optional<leasehold::error_code> stepped;
    fleet.at(leader).step_down(g, [&](leasehold::error_code ec) { stepped = ec; });
    ASSERT_TRUE(leasehold::test::run_until(fleet.io, [&] {
      watch.check();
      return stepped.has_value() && fleet.leaders(g).size() == 1 && fleet.leaders(g).front() != leader;
    }, 10s)) << g << ": the standby did not take over at the release notice";
    EXPECT_FALSE(*stepped);
    leasehold::test::run_for(fleet.io, 500ms);
    watch.check();
    EXPECT_TRUE(watch.never_two);
    EXPECT_TRUE(watch.changed.empty()) << "a release of " << g << " moved another group of its slot";
  }
}

// Over three seconds: the renewals of the `counted` groups of the fleet's
// first elector (each must succeed) and the scripts `shard`'s master ran.
std::pair<std::uint64_t, std::uint64_t> renewals_and_scripts(Fleet& fleet, ClusterTopology& topology,
                                                             std::size_t shard, const std::set<std::string>& counted) {
  const auto renewals = [&] {
    std::uint64_t ok = 0;
    for (const auto& g : fleet.metrics(0).groups) {
      if (counted.contains(g.group)) ok += g.renewals_ok;
      EXPECT_EQ(g.renewals_failed, 0u) << g.group;
    }
    return ok;
  };
  auto admin = topology.node(shard).admin();
  const std::uint64_t renewals_before = renewals();
  const std::uint64_t scripts_before = leasehold::test::script_calls(admin);
  leasehold::test::run_for(fleet.io, 3000ms);
  return {renewals() - renewals_before, leasehold::test::script_calls(admin) - scripts_before};
}

// Without cross-slot renewals one script renews only groups of one slot, so
// the groups of a slot that were elected at different times renew together
// once one of them renews within half a heartbeat of the others: three
// cohorts of four, elected 300 ms apart, become one script per heartbeat
// (three apart would be three). The slot is on a shard the "default" group is not on.
TEST(ClusterElector, GroupsOfOneSlotElectedApartComeToRenewInOneScript) {
  ClusterTopologyOptions topology_options;
  topology_options.replicas_per_master = 0;
  ClusterTopology topology(topology_options);
  const std::size_t default_shard = shard_of(topology, "default");
  std::vector<std::string> same_slot;
  for (std::size_t n = 12;; ++n) {
    same_slot = names_in_one_slot(n);
    if (shard_of(topology, same_slot.front()) != default_shard) break;
  }
  same_slot.resize(12);
  const std::size_t shard = shard_of(topology, same_slot.front());
  leasehold::RedisOptions redis = cluster_url_options(topology);
  redis.cluster->cross_slot_renewals = false;  // one script per slot: as a node before Redis 7.0
  Fleet fleet(redis);
  ElectorOptions o = options_for("a", {}, 3000ms);  // heartbeat 1 s
  o.empty_restart_guard = false;
  auto& elector = fleet.add(o);
  ASSERT_TRUE(leasehold::test::run_until(fleet.io, [&] { return elector.is_leader(); }, 20s));
  for (std::size_t cohort = 0; cohort < 3; ++cohort) {
    for (std::size_t i = 0; i < 4; ++i) elector.group(same_slot[4 * cohort + i]);
    leasehold::test::run_for(fleet.io, 300ms);
  }
  ASSERT_TRUE(leasehold::test::run_until(fleet.io, [&] { return one_leader_each(fleet, same_slot); }, 20s));
  leasehold::test::run_for(fleet.io, 2500ms);  // every cohort renewed at least twice: together

  const auto [renewed, scripts] =
      renewals_and_scripts(fleet, topology, shard, {same_slot.begin(), same_slot.end()});
  EXPECT_GE(renewed, 24u) << "twelve groups, three heartbeats";
  EXPECT_LE(scripts * 5, renewed) << scripts << " scripts for " << renewed << " renewals";
  EXPECT_TRUE(fleet.events(0).revoked.empty());
}

// Groups of many slots on one shard, renewing in the same turns, leave in
// one script per node (renew_node_script: the node's slots together), and
// every renewal succeeds.
TEST(ClusterElector, GroupsOfManySlotsOfOneShardRenewInOneScript) {
  ClusterTopologyOptions topology_options;
  topology_options.replicas_per_master = 0;
  ClusterTopology topology(topology_options);
  const std::size_t shard = shard_of(topology, "default");
  std::vector<std::string> groups;
  std::set<int> slots;
  for (const std::string& g : group_names(200)) {
    if (shard_of(topology, g) == shard && slots.insert(topology.key_slot("cl:{" + g + "}")).second) groups.push_back(g);
    if (groups.size() == 12) break;
  }
  ASSERT_EQ(groups.size(), 12u);
  Fleet fleet(cluster_url_options(topology));
  ElectorOptions o = options_for("a", groups, 3000ms);  // heartbeat 1 s
  o.empty_restart_guard = false;
  fleet.add(o);
  ASSERT_TRUE(leasehold::test::run_until(fleet.io, [&] { return one_leader_each(fleet, groups); }, 20s));
  leasehold::test::run_for(fleet.io, 1500ms);

  std::set<std::string> counted(groups.begin(), groups.end());
  counted.insert("default");  // on the same shard
  const auto [renewed, scripts] = renewals_and_scripts(fleet, topology, shard, counted);
  EXPECT_GE(renewed, 24u) << "twelve groups in twelve slots, three heartbeats";
  EXPECT_LE(scripts * 5, renewed) << scripts << " scripts for " << renewed << " renewals";
  EXPECT_TRUE(fleet.events(0).revoked.empty());
}

// The data marker of `group`'s slot, as the master that serves it holds it.
std::optional<std::string> marker_of(ClusterTopology& topology, const std::string& group) {
  const leasehold::KeyLayout layout("cl:", leasehold::KeyLayout::Form::hash_tagged);
  return topology.node(shard_of(topology, group)).admin().get(layout.data_marker_key(group));
}

// Waits (the fleet running) until `group`'s slot has a marker naming the
// identity of the master that serves it; that marker, or nullopt.
std::optional<std::string> wait_for_current_marker(Fleet& fleet, ClusterTopology& topology, const std::string& group) {
  std::optional<std::string> marker;
  leasehold::test::run_until(fleet.io, [&] {
    const std::string identity = topology.node(shard_of(topology, group)).admin().data_identity();
    marker = marker_of(topology, group);
    return marker.has_value() && marker->starts_with(identity + " ");
  }, 20s);
  return marker;
}

// A cluster without replicas and elector "a" of group "g0" on it, which
// marks every slot as it starts.
struct MarkedCluster {
  static ClusterTopologyOptions without_replicas() {
    ClusterTopologyOptions o;
    o.replicas_per_master = 0;
    return o;
  }
  MarkedCluster() { fleet.add(options_for("a", {"g0"})); }

  ClusterTopology topology{without_replicas()};
  Fleet fleet{cluster_url_options(topology)};
};

// An elector marks every slot of the cluster as it starts, most of which no
// group has used: once a slot's marker is one ttl old, a group new to that
// slot is elected within a round trip instead of waiting out the guard. The
// marker is aged by an hour here, so that the new group's ttl (a minute)
// tells a guard's wait from a slow machine by far.
TEST(ClusterElector, AnElectorMarksEverySlotSoAGroupNewToItsSlotIsElectedAtOnce) {
  MarkedCluster cluster;
  auto& [topology, fleet] = cluster;
  ASSERT_TRUE(fleet.wait_leading(0, "g0", 20s)) << "the first group waits out the guard";

  // 300 names over about 300 slots of every shard, none used by a group.
  std::set<std::size_t> shards;
  for (int i = 0; i < 300; ++i) {
    const std::string name = "unused" + std::to_string(i);
    shards.insert(shard_of(topology, name));
    ASSERT_TRUE(wait_for_current_marker(fleet, topology, name).has_value()) << name << "'s slot has no marker";
  }
  EXPECT_EQ(shards.size(), 3u);

  const std::string group = "fresh";
  auto admin = topology.node(shard_of(topology, group)).admin();
  ASSERT_FALSE(admin.get("cl:{" + group + "}:token").has_value()) << "no group has used this one yet";
  const auto marker = wait_for_current_marker(fleet, topology, group);
  ASSERT_TRUE(marker.has_value());
  const auto space = marker->find(' ');
  const leasehold::KeyLayout layout("cl:", leasehold::KeyLayout::Form::hash_tagged);
  admin.set(layout.data_marker_key(group),
            marker->substr(0, space + 1) + std::to_string(std::stoll(marker->substr(space + 1)) - 3'600'000));

  fleet.add(options_for("b", {group}, 60s));
  ASSERT_TRUE(fleet.wait_leading(1, group, 15s)) << "a group new to its slot waited out the guard";
  EXPECT_EQ(fleet.events(1).elected.front().token, 1);
}

// A master restarted with an empty dataset keeps its slots but has lost its
// markers, and its new run_id makes any it kept foreign: the elector marks
// its slots again when it reconnects, in the restarted server's name.
TEST(ClusterElector, AMasterRestartedEmptyIsMarkedAgainWhenTheElectorReconnects) {
  MarkedCluster cluster;
  auto& [topology, fleet] = cluster;
  ASSERT_TRUE(fleet.wait_leading(0, "g0", 20s));
  const std::size_t restarted = topology.masters().front();
  std::string name;
  for (int i = 0; name.empty(); ++i) {
    if (shard_of(topology, "unused" + std::to_string(i)) == restarted) name = "unused" + std::to_string(i);
  }
  const auto before = wait_for_current_marker(fleet, topology, name);
  ASSERT_TRUE(before.has_value());

  // Here, not in while_running's thread: a node dies with the thread that
  // started it (process.hpp).
  topology.restart(restarted);
  while_running(fleet, [&] { topology.wait_until_settled(60s); }, [] {});
  const auto after = wait_for_current_marker(fleet, topology, name);
  ASSERT_TRUE(after.has_value()) << "the restarted master's slots were not marked again";
  EXPECT_NE(after->substr(0, after->find(' ')), before->substr(0, before->find(' ')));
}

// stop() on a cluster leaves nothing behind on the io_context: no slot
// marking pass or retry keeps io.run() going.
TEST(ClusterElector, AStoppedElectorLeavesItsIoContextWithNothingToDo) {
  ClusterTopologyOptions topology_options;
  topology_options.replicas_per_master = 0;
  ClusterTopology topology(topology_options);
  boost::asio::io_context io(1);
  leasehold::Elector elector(io.get_executor(), cluster_url_options(topology), options_for("a", {"g0"}));
  elector.start();
  ASSERT_TRUE(leasehold::test::run_until(io, [&] { return elector.is_leader("g0"); }, 20s));
  elector.stop();
  io.restart();
  io.run_for(15s);
  EXPECT_TRUE(io.stopped()) << "io.run() still had work after the stop";
  EXPECT_FALSE(elector.is_leader("g0"));
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

// What an operator is told when a shard's master dies: one error event and
// one log line naming the node, what it served and why; the node's own
// metrics series (connected 0, with its address and role); and the commands
// connection counted down while a master of the map is unreachable.
TEST(ClusterElector, AKilledShardMasterIsNamedOnceInTheLogEventsAndPerNodeMetrics) {
  ClusterTopologyOptions topology_options;
  topology_options.extra_config = {"cluster-require-full-coverage no"};
  ClusterTopology topology(topology_options);
  leasehold::test::LogCapture log(leasehold::LogLevel::warning);
  const auto groups = group_names(6);
  Fleet fleet(cluster_url_options(topology));
  fleet.add(options_for("a", groups, 5000ms));
  ASSERT_TRUE(leasehold::test::run_until(fleet.io, [&] { return one_leader_each(fleet, groups); }, 30s));
  const auto before = fleet.metrics(0);
  for (const std::size_t master : topology.masters()) {
    const std::string name = "127.0.0.1:" + std::to_string(topology.node(master).port());
    bool found = false;
    for (const auto& node : before.nodes) {
      if (node.node != name) continue;
      found = true;
      EXPECT_TRUE(node.connected) << name;
      EXPECT_EQ(node.role, "master") << name;
    }
    EXPECT_TRUE(found) << "no metrics for " << name;
  }
  EXPECT_TRUE(before.commands.connected);

  const std::size_t victim = topology.masters().front();
  const std::string address = "127.0.0.1:" + std::to_string(topology.node(victim).port());
  topology.kill(victim);
  const auto node_error = [&]() -> const leasehold::ErrorEvent* {
    for (const auto& e : fleet.events(0).errors) {
      if (e.group.empty() && e.error.detail.find("cluster node " + address + " (master of slots ") == 0) return &e;
    }
    return nullptr;
  };
  ASSERT_TRUE(leasehold::test::run_until(fleet.io, [&] { return node_error() != nullptr; }, 20s));
  const auto during = fleet.metrics(0);
  bool seen = false;
  for (const auto& node : during.nodes) {
    if (node.node != address) continue;
    seen = true;
    EXPECT_FALSE(node.connected);
    EXPECT_EQ(node.name, "node");
  }
  EXPECT_TRUE(seen) << "no metrics for " << address;

  // The replica takes the slots over; the dead node is still named once.
  EXPECT_TRUE(leasehold::test::run_until(fleet.io, [&] { return one_leader_each(fleet, groups); }, 40s));
  EXPECT_EQ(log.matching({"lost the connection to cluster node " + address}).size(), 1u);
  std::size_t events = 0;
  for (const auto& e : fleet.events(0).errors) events += e.error.detail.find("cluster node " + address) == 0;
  EXPECT_EQ(events, 1u);
}

// Moving a led group's slot to another master, step by step, while its
// leader renews and its standby polls: the old master answers ASK once the
// keys are gone, TRYAGAIN while they are split, MOVED at the end. Every
// answer is followed: no group changes leader and none is revoked; only the
// redirect counters tell.
TEST(ClusterElector, ASlotMigrationUnderLedGroupsChangesNoLeaderAndIsCountedOnly) {
  ClusterTopologyOptions topology_options;
  topology_options.replicas_per_master = 0;
  ClusterTopology topology(topology_options);
  const auto groups = group_names(12);
  Fleet fleet(cluster_url_options(topology));
  for (const char* id : {"a", "b"}) {
    ElectorOptions o = options_for(id, groups, 6000ms);
    o.heartbeat_interval = 300ms;  // renewals in every step of the migration
    fleet.add(o);
  }
  ASSERT_TRUE(leasehold::test::run_until(fleet.io, [&] { return one_leader_each(fleet, groups); }, 30s));
  LeaderWatch watch(fleet, groups, leaders_now(fleet, groups));

  for (const std::string moved : {"g0", "g5"}) {
    const int slot = topology.key_slot("cl:{" + moved + "}");
    const std::size_t from = topology.master_of_slot(slot);
    std::size_t to = from;
    for (const std::size_t m : topology.masters()) {
      if (m != from) to = m;
    }
    topology.begin_migration(slot, to);
    leasehold::test::run_until(fleet.io, [&] { watch.check(); return false; }, 1s);
    // One key over (a split group: TRYAGAIN), then the rest (ASK), then the slot (MOVED).
    while_running(fleet, [&] { ASSERT_GE(topology.migrate_keys(slot, 1), 1u); }, watch.checker());
    leasehold::test::run_until(fleet.io, [&] { watch.check(); return false; }, 300ms);
    while_running(fleet, [&] { topology.migrate_keys(slot); }, watch.checker());
    leasehold::test::run_until(fleet.io, [&] { watch.check(); return false; }, 1s);
    while_running(fleet, [&] { topology.finish_migration(slot); }, watch.checker());
    leasehold::test::run_until(fleet.io, [&] { watch.check(); return false; }, 1500ms);
    EXPECT_EQ(topology.master_of_slot(slot), to);
    // The lease is on the new master, still the same leader's.
    const auto holder = topology.node(to).admin().get("cl:{" + moved + "}");
    EXPECT_EQ(holder, std::optional<std::string>(fleet.leaders(moved).at(0) == 0 ? "a" : "b")) << moved;
  }
  EXPECT_TRUE(watch.never_two);
  EXPECT_TRUE(watch.changed.empty()) << "changed leader: " << *watch.changed.begin();
  std::uint64_t redirects = 0;
  std::uint64_t retries = 0;
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(fleet.events(i).revoked.empty()) << fleet.events(i).revoked.front().group;
    const auto m = fleet.metrics(i);
    redirects += m.commands.redirects;
    retries += m.commands.cluster_retries;
  }
  EXPECT_GT(redirects, 0u) << "no MOVED or ASK was followed";
  std::printf("redirects followed: %llu, TRYAGAIN/CLUSTERDOWN retries: %llu\n",
              static_cast<unsigned long long>(redirects), static_cast<unsigned long long>(retries));
}

// CLUSTER FAILOVER on a replica: a coordinated switch (the master stops
// writes until its replica caught up). The shard's groups end up led on the
// new master, never by two; other shards' leaders are not touched.
TEST(ClusterElector, AManualFailoverLeavesOtherShardsAloneAndItsGroupsLedOnTheNewMaster) {
  ClusterTopology topology;
  const auto groups = group_names(24);
  Fleet fleet(cluster_url_options(topology));
  fleet.add(options_for("a", groups, 5000ms));
  fleet.add(options_for("b", groups, 5000ms));
  ASSERT_TRUE(leasehold::test::run_until(fleet.io, [&] { return one_leader_each(fleet, groups); }, 30s));
  const std::size_t old_master = topology.masters().front();
  const std::size_t replica = topology.replicas_of(old_master).front();
  std::map<std::string, std::size_t> others;
  std::vector<std::string> shard;
  for (const auto& [g, leader] : leaders_now(fleet, groups)) {
    if (shard_of(topology, g) == old_master) {
      shard.push_back(g);
    } else {
      others[g] = leader;
    }
  }
  ASSERT_FALSE(shard.empty());
  LeaderWatch watch(fleet, groups, others);

  while_running(fleet, [&] { topology.failover(replica); }, watch.checker());
  EXPECT_TRUE(topology.has_master_role(replica));
  EXPECT_TRUE(leasehold::test::run_until(fleet.io, [&] { watch.check(); return one_leader_each(fleet, groups); },
                                         30s));
  // Each of the shard's leases is on the new master.
  for (const auto& g : shard) EXPECT_TRUE(topology.node(replica).admin().get("cl:{" + g + "}").has_value()) << g;
  EXPECT_TRUE(watch.never_two);
  EXPECT_TRUE(watch.changed.empty()) << "a group on another shard changed leader: " << *watch.changed.begin();
  for (std::size_t i = 0; i < 2; ++i) {
    for (const auto& ev : fleet.events(i).revoked) EXPECT_EQ(others.count(ev.group), 0u) << ev.group;
  }
}

// A shard whose master is unreachable and has no replica: with full
// coverage (Redis's default) every node answers CLUSTERDOWN, so every
// group's renewals are retried and then fail; leaders step down (never two)
// and every group is led again once the master is back.
TEST(ClusterElector, ClusterDownEverywhereDemotesSafelyAndEveryGroupIsLedAgainAfter) {
  ClusterTopologyOptions topology_options;
  topology_options.replicas_per_master = 0;
  ClusterTopology topology(topology_options);
  const auto groups = group_names(12);
  Fleet fleet(cluster_url_options(topology));
  fleet.add(options_for("a", groups, 3000ms));
  fleet.add(options_for("b", groups, 3000ms));
  ASSERT_TRUE(leasehold::test::run_until(fleet.io, [&] { return one_leader_each(fleet, groups); }, 30s));
  LeaderWatch watch(fleet, groups, {});
  const std::size_t frozen = topology.masters().front();
  std::size_t asked = topology.masters().back();

  topology.pause(frozen);
  // The other nodes mark it failed after the node timeout (1 s) and answer CLUSTERDOWN.
  ASSERT_TRUE(leasehold::test::run_until(fleet.io, [&] { watch.check(); return !topology.reports_ok(asked); }, 20s));
  EXPECT_TRUE(leasehold::test::run_until(fleet.io, [&] {
    watch.check();
    for (const auto& g : groups) {
      if (!fleet.leaders(g).empty()) return false;
    }
    return true;
  }, 20s)) << "leaders kept leading while the cluster was down";
  topology.resume(frozen);
  while_running(fleet, [&] { topology.wait_until_ok(); }, watch.checker());
  EXPECT_TRUE(leasehold::test::run_until(fleet.io, [&] { watch.check(); return one_leader_each(fleet, groups); },
                                         30s));
  EXPECT_TRUE(watch.never_two);
  std::uint64_t retries = 0;
  for (std::size_t i = 0; i < 2; ++i) retries += fleet.metrics(i).commands.cluster_retries;
  EXPECT_GT(retries, 0u) << "no CLUSTERDOWN was retried";
}

// Confirm mode on a cluster: a lease counts once WAIT says the shard's
// replica has it. The shard's master is killed: its replica, promoted, has
// every confirmed lease, but no replica of its own, so nobody may lead the
// shard's groups (a lease nobody copied does not count) until the old master
// is back as its replica; then they are led again, by the same instance or
// after a clean hand-over. Never two leaders; other shards untouched.
TEST(ClusterElector, ConfirmModeAcrossAKilledShardMasterNeverTwoLeaders) {
  ClusterTopologyOptions topology_options;
  topology_options.extra_config = {"cluster-require-full-coverage no"};
  ClusterTopology topology(topology_options);
  const auto groups = group_names(24);
  Fleet fleet(cluster_url_options(topology));
  for (const char* id : {"a", "b"}) {
    ElectorOptions o = options_for(id, groups, 5000ms);
    o.confirm_replicas = 1;
    o.confirm_timeout = 200ms;
    fleet.add(o);
  }
  ASSERT_TRUE(leasehold::test::run_until(fleet.io, [&] { return one_leader_each(fleet, groups); }, 30s));
  const std::size_t victim = topology.masters().front();
  const std::size_t heir = topology.replicas_of(victim).front();
  std::map<std::string, std::size_t> others;
  std::map<std::string, std::size_t> shard;
  for (const auto& [g, leader] : leaders_now(fleet, groups)) {
    (shard_of(topology, g) == victim ? shard : others)[g] = leader;
  }
  ASSERT_FALSE(shard.empty());
  // Every lease of the shard is on the replica already (WAIT said so).
  auto on_replica = topology.node(heir).admin();
  on_replica.call({"READONLY"});
  for (const auto& [g, leader] : shard) {
    EXPECT_EQ(on_replica.get("cl:{" + g + "}"), std::optional<std::string>(leader == 0 ? "a" : "b")) << g;
  }
  LeaderWatch watch(fleet, groups, others);

  topology.kill(victim);
  while_running(fleet, [&] { EXPECT_EQ(topology.wait_for_promotion(victim), heir); }, watch.checker());
  leasehold::test::run_until(fleet.io, [&] { watch.check(); return false; }, 3s);
  for (const auto& [g, leader] : shard) {
    EXPECT_TRUE(fleet.leaders(g).empty()) << g << " is led on a master without a replica";
  }
  topology.restart(victim);
  while_running(fleet, [&] { topology.wait_until_settled(60s); }, watch.checker());
  EXPECT_TRUE(leasehold::test::run_until(fleet.io, [&] { watch.check(); return one_leader_each(fleet, groups); },
                                         60s))
      << "the killed shard's groups were not led again";
  EXPECT_TRUE(watch.never_two);
  EXPECT_TRUE(watch.changed.empty()) << "a group on another shard changed leader: " << *watch.changed.begin();
  std::size_t same = 0;
  for (const auto& [g, leader] : shard) same += fleet.leaders(g) == std::vector<std::size_t>{leader} ? 1 : 0;
  std::printf("after the failover %zu of %zu groups of the shard are led by the same instance\n", same, shard.size());
}

// A leader-only schedule claiming each tick on a cluster: its tick record
// lives in the group's slot (`<prefix>{<group>}:ticks`, beside the lease), each tick runs
// on the leader only, once.
TEST(ClusterElector, ALeaderOnlyScheduleRecordsItsTicksInTheGroupsSlotAndRunsEachOnce) {
  ClusterTopologyOptions topology_options;
  topology_options.replicas_per_master = 0;
  ClusterTopology topology(topology_options);
  Fleet fleet(cluster_url_options(topology));
  std::vector<std::vector<std::int64_t>> ran(3);  // tick instants (ms) run by each instance
  std::vector<leasehold::Schedule> schedules;
  for (std::size_t i = 0; i < 3; ++i) {
    auto& e = fleet.add(options_for(std::string(1, static_cast<char>('a' + i)), {}));
    schedules.push_back(leasehold::every(e, "digest", 200ms, [&ran, i](const leasehold::Tick& t) {
      ran[i].push_back(std::chrono::duration_cast<std::chrono::milliseconds>(t.scheduled.time_since_epoch()).count());
    }, {.once_per_tick = true}));
  }
  const auto leader = fleet.wait_single_leader("digest");
  ASSERT_TRUE(leader.has_value());
  ASSERT_TRUE(leasehold::test::run_until(fleet.io, [&] { return ran[*leader].size() >= 5; }, 10s));
  std::set<std::int64_t> seen;
  for (std::size_t i = 0; i < 3; ++i) {
    if (i != *leader) {
      EXPECT_TRUE(ran[i].empty()) << "a standby ran a tick";
    }
    for (const auto t : ran[i]) EXPECT_TRUE(seen.insert(t).second) << "tick " << t << " ran twice";
  }
  auto admin = topology.node(shard_of(topology, "digest")).admin();
  const auto type = admin.call({"TYPE", "cl:{digest}:ticks"});
  EXPECT_EQ(type.str, "hash") << "the tick record is not on the group's master";
  for (auto& s : schedules) s.cancel();
}

}  // namespace
}  // namespace integration_cluster_elector_test
