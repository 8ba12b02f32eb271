// The cluster client against real Redis Clusters the harness starts: routing
// by slot to every shard, slot migrations (ASK, then MOVED), a killed master
// (its slots fail, then move to the promoted replica; other shards go on),
// CLUSTERDOWN retried within the budget, then given up; and the release
// notices' shard channels, followed through a slot migration.

#include <leasehold/impl/cluster/cluster_client.hpp>
#include <leasehold/impl/cluster/cluster_notices.hpp>
#include <leasehold/impl/protocol/key_slot.hpp>
#include "support/admin_client.hpp"
#include "support/cluster_topology.hpp"
#include "support/io_helpers.hpp"

#include <leasehold/redis/script.hpp>

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace integration_cluster_client_test {
namespace {

using namespace std::chrono_literals;
namespace cluster = leasehold::cluster::detail;
namespace redis = leasehold::redis;
using leasehold::errc;
using leasehold::error_code;
using leasehold::RedisOptions;
using leasehold::test::ClusterTopology;
using leasehold::test::ClusterTopologyOptions;
using leasehold::test::run_until;

// Sets KEYS[1] to ARGV[1] and answers with it: where the key lands is where
// the script ran.
const redis::Script& set_script() {
  static const redis::Script script("redis.call('SET', KEYS[1], ARGV[1]) return ARGV[1]");
  return script;
}

RedisOptions cluster_options(const ClusterTopology& topology, std::vector<std::size_t> seeds) {
  RedisOptions o;
  o.cluster.emplace();
  for (const std::size_t i : seeds) o.cluster->seeds.push_back({"127.0.0.1", topology.node(i).port()});
  o.command_timeout = 2s;
  o.reconnect_max = 200ms;
  return o;
}

struct EvalResult {
  error_code ec;
  redis::Reply reply;
};

// One SET through the client, run to completion (bounded).
EvalResult set_through(boost::asio::io_context& io, cluster::ClusterClient& client, const std::string& key,
                       const std::string& value) {
  std::optional<EvalResult> result;
  client.async_eval(cluster::key_slot(key), set_script(), {key}, {value},
                    [&](error_code ec, redis::Reply reply, redis::Client*) { result = EvalResult{ec, std::move(reply)}; });
  if (!run_until(io, [&] { return result.has_value(); }, 20s)) throw std::runtime_error("no answer for " + key);
  return *result;
}

// The value of `key` on node i, read directly (not through the client);
// ASKING first, so that a node importing the key's slot answers too.
std::optional<std::string> value_on(const ClusterTopology& topology, std::size_t i, const std::string& key) {
  auto admin = topology.node(i).admin();
  admin.call({"ASKING"});
  const redis::Reply r = admin.call({"GET", key});
  if (r.is_error() || r.is_nil()) return std::nullopt;
  return r.str;
}

std::string key_served_by(const ClusterTopology& topology, std::size_t master, const std::string& prefix) {
  for (int i = 0; i < 10000; ++i) {
    std::string key = prefix + std::to_string(i);
    if (topology.master_of_slot(cluster::key_slot(key)) == master) return key;
  }
  throw std::runtime_error("no key for node " + std::to_string(master));
}

bool started(boost::asio::io_context& io, cluster::ClusterClient& client) {
  client.start();
  return run_until(io, [&] { return client.ready(); }, 20s);
}

TEST(ClusterClient, SendsEveryKeyToTheMasterOfItsSlotOnEveryShard) {
  ClusterTopology topology;
  boost::asio::io_context io;
  // One seed, a replica: the map comes from wherever the client can ask.
  const std::size_t replica = topology.replicas_of(topology.masters().front()).front();
  cluster::ClusterClient client(io.get_executor(), cluster_options(topology, {replica}));
  client.preload(set_script());
  ASSERT_TRUE(started(io, client));
  EXPECT_TRUE(client.slot_map().covers_all());
  EXPECT_EQ(client.slot_map().masters().size(), 3u);
  // Up means the masters' connections are up too: a first command sent at
  // once must not find its master still connecting.
  for (const auto& master : client.slot_map().masters()) {
    bool connected = false;
    for (const auto& [address, node] : client.nodes()) connected = connected || (address == master.to_string() && node->connected());
    EXPECT_TRUE(connected) << master.to_string();
  }

  std::set<std::size_t> shards;
  for (int i = 0; i < 100; ++i) {
    const std::string key = "routing:{g" + std::to_string(i) + "}";
    const EvalResult r = set_through(io, client, key, "v" + std::to_string(i));
    ASSERT_FALSE(r.ec) << key << ": " << r.ec.message() << " " << r.reply.str;
    EXPECT_EQ(r.reply.str, "v" + std::to_string(i));
    // The server's KEYSLOT and the master the harness sees: the key is there.
    const std::size_t master = topology.master_of_slot(topology.key_slot(key));
    EXPECT_EQ(value_on(topology, master, key), "v" + std::to_string(i)) << key;
    shards.insert(master);
  }
  EXPECT_EQ(shards.size(), 3u);
  // A map read once, then every command straight to its master.
  EXPECT_EQ(client.stats().moved, 0u);
  EXPECT_EQ(client.stats().asked, 0u);
}

// CLUSTER SHARDS refused (an ACL here; Redis before 7.0 does not know it,
// other servers answer it in shapes of their own): the map comes from
// CLUSTER SLOTS, and later refreshes ask SLOTS straight away.
TEST(ClusterClient, ReadsTheSlotMapWithClusterSlotsWhereShardsIsRefused) {
  ClusterTopology topology;
  // The harness reads the topology with CLUSTER SHARDS: ask it everything first.
  const std::vector<std::size_t> masters = topology.masters();
  const std::string key = key_served_by(topology, masters.back(), "fallback:");
  std::vector<std::size_t> nodes = masters;
  for (const std::size_t master : masters) {
    for (const std::size_t replica : topology.replicas_of(master)) nodes.push_back(replica);
  }
  for (const std::size_t node : nodes) {
    auto admin = topology.node(node).admin();
    admin.call({"ACL", "SETUSER", "default", "-cluster|shards"});
    ASSERT_TRUE(admin.call({"CLUSTER", "SHARDS"}).is_error());
  }
  boost::asio::io_context io;
  cluster::ClusterClient client(io.get_executor(), cluster_options(topology, {masters.front()}));
  client.preload(set_script());
  ASSERT_TRUE(started(io, client));
  EXPECT_TRUE(client.slot_map().covers_all());
  EXPECT_EQ(client.slot_map().masters().size(), 3u);
  const EvalResult r = set_through(io, client, key, "v");
  ASSERT_FALSE(r.ec) << r.ec.message() << " " << r.reply.str;
  EXPECT_EQ(value_on(topology, masters.back(), key), "v");
  EXPECT_EQ(client.stats().map_failures, 0u) << "a refused SHARDS is not a failed read";
}

TEST(ClusterClient, FollowsAskDuringASlotMigrationAndMovedAfterIt) {
  ClusterTopologyOptions options;
  options.replicas_per_master = 0;
  ClusterTopology topology(options);
  boost::asio::io_context io;
  const auto masters = topology.masters();
  cluster::ClusterClient client(io.get_executor(), cluster_options(topology, masters));
  client.preload(set_script());
  ASSERT_TRUE(started(io, client));

  const std::size_t from = masters[0];
  const std::size_t to = masters[1];
  const std::string key = key_served_by(topology, from, "migrating:");
  const int slot = cluster::key_slot(key);
  ASSERT_FALSE(set_through(io, client, key, "before").ec);

  topology.begin_migration(slot, to);
  topology.migrate_keys(slot);
  ASSERT_EQ(value_on(topology, to, key), "before");
  // The old master no longer has the key: it answers ASK, and the client
  // follows with ASKING to the importing node.
  const EvalResult during = set_through(io, client, key, "during");
  ASSERT_FALSE(during.ec) << during.ec.message() << " " << during.reply.str;
  EXPECT_GE(client.stats().asked, 1u);
  EXPECT_EQ(value_on(topology, to, key), "during");
  EXPECT_EQ(client.stats().moved, 0u);

  topology.finish_migration(slot);
  const EvalResult after = set_through(io, client, key, "after");
  ASSERT_FALSE(after.ec) << after.ec.message() << " " << after.reply.str;
  EXPECT_EQ(value_on(topology, to, key), "after");
  // MOVED once (or never, when the periodic refresh came first); the map
  // then names the new master, so the next command goes there directly.
  ASSERT_TRUE(run_until(io, [&] { return client.slot_map().master_of(static_cast<std::uint16_t>(slot)) != nullptr &&
                                         client.slot_map().master_of(static_cast<std::uint16_t>(slot))->port ==
                                             topology.node(to).port(); }, 10s));
  const auto moved = client.stats().moved;
  EXPECT_LE(moved, 1u);
  ASSERT_FALSE(set_through(io, client, key, "again").ec);
  EXPECT_EQ(client.stats().moved, moved);
  EXPECT_EQ(client.stats().gave_up, 0u);
}

TEST(ClusterClient, AKilledMasterFailsOnlyItsOwnSlotsUntilItsReplicaServesThem) {
  // With full coverage required (Redis's default) every node answers
  // CLUSTERDOWN while a shard has no master: the next test. Without it the
  // other shards keep serving, which is what this test is about.
  ClusterTopologyOptions options;
  options.extra_config = {"cluster-require-full-coverage no"};
  ClusterTopology topology(options);
  boost::asio::io_context io;
  const auto masters = topology.masters();
  cluster::ClusterClient client(io.get_executor(), cluster_options(topology, masters));
  client.preload(set_script());
  ASSERT_TRUE(started(io, client));

  const std::size_t victim = masters[0];
  const std::string lost = key_served_by(topology, victim, "victim:");
  const std::string kept = key_served_by(topology, masters[1], "kept:");
  ASSERT_FALSE(set_through(io, client, lost, "0").ec);
  ASSERT_FALSE(set_through(io, client, kept, "0").ec);

  topology.kill(victim);
  // Until the replica is promoted, the victim's slots fail (connection
  // errors, or CLUSTERDOWN given up after retry_timeout); the other shard's
  // keys are written every time.
  int failed = 0;
  int written = 0;
  const auto bound = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < bound) {
    const EvalResult other = set_through(io, client, kept, std::to_string(written));
    ASSERT_FALSE(other.ec) << "the other shard's key failed: " << other.ec.message() << " " << other.reply.str;
    ++written;
    const EvalResult r = set_through(io, client, lost, "after");
    if (!r.ec) break;
    ++failed;
    leasehold::test::run_for(io, 100ms);
  }
  EXPECT_GT(failed, 0) << "the victim's slot never failed: was it killed?";
  const std::size_t promoted = topology.wait_for_promotion(victim);
  const EvalResult r = set_through(io, client, lost, "promoted");
  ASSERT_FALSE(r.ec) << r.ec.message() << " " << r.reply.str;
  EXPECT_EQ(value_on(topology, promoted, lost), "promoted");
  EXPECT_EQ(client.slot_map().master_of(cluster::key_slot(lost))->port, topology.node(promoted).port());
  EXPECT_GE(client.stats().map_changes, 2u);  // the first map, then the promotion
}

// The error given up with says what was tried: the retries, the time and
// the bound that ended them, then the node's reply.
TEST(ClusterClient, RetriesClusterDownWithinItsBudgetThenGivesUpSayingHowLong) {
  ClusterTopologyOptions options;
  options.replicas_per_master = 0;
  ClusterTopology topology(options);
  boost::asio::io_context io;
  const auto masters = topology.masters();
  RedisOptions o = cluster_options(topology, masters);
  o.cluster->retry_timeout = 500ms;
  o.cluster->retry_backoff_min = 20ms;
  cluster::ClusterClient client(io.get_executor(), o);
  ASSERT_TRUE(started(io, client));

  // A master with no replica killed: once the others mark it failed, every
  // node answers CLUSTERDOWN (full coverage is required by default).
  topology.kill(masters[0]);
  const std::string key = key_served_by(topology, masters[1], "down:");
  EvalResult r;
  const bool down = run_until(io, [&] {
    r = set_through(io, client, key, "x");
    return r.ec && r.reply.is_error() && r.reply.str.starts_with("CLUSTERDOWN");
  }, 30s);
  ASSERT_TRUE(down) << "last: " << r.ec.message() << " " << r.reply.str;
  EXPECT_EQ(r.ec, errc::server_error);
  EXPECT_NE(r.reply.str.find(" (still CLUSTERDOWN after "), std::string::npos) << r.reply.str;
  EXPECT_NE(r.reply.str.find("(retry_timeout): CLUSTERDOWN"), std::string::npos) << r.reply.str;
  EXPECT_GT(client.stats().retries, 0u);
  EXPECT_GT(client.stats().gave_up, 0u);
}

TEST(ClusterClient, RefusesOptionsWithoutSeedsAndFailsCommandsBeforeStart) {
  boost::asio::io_context io;
  EXPECT_THROW(cluster::ClusterClient(io.get_executor(), RedisOptions{}), std::invalid_argument);
  RedisOptions o;
  o.cluster.emplace();
  EXPECT_THROW(cluster::ClusterClient(io.get_executor(), o), std::invalid_argument);

  o.cluster->seeds.push_back({"127.0.0.1", 1});
  cluster::ClusterClient client(io.get_executor(), o);
  std::optional<error_code> ec;
  client.async_eval(0, set_script(), {"k"}, {"v"}, [&](error_code e, redis::Reply, redis::Client*) { ec = e; });
  EXPECT_FALSE(ec.has_value()) << "completed inside the call";
  ASSERT_TRUE(run_until(io, [&] { return ec.has_value(); }));
  EXPECT_EQ(*ec, errc::not_connected);
}

// ---- release notices through sharded pub/sub ---------------------------------

// A hash-tagged channel whose slot `master` serves.
std::string channel_served_by(const ClusterTopology& topology, std::size_t master) {
  for (int i = 0; i < 10000; ++i) {
    std::string channel = "notice:{g" + std::to_string(i) + "}:released";
    if (topology.master_of_slot(cluster::key_slot(channel)) == master) return channel;
  }
  throw std::runtime_error("no channel for node " + std::to_string(master));
}

TEST(ClusterNotices, HearsTheShardChannelOfEverySlotAndFollowsAMigratedSlot) {
  ClusterTopologyOptions options;
  options.replicas_per_master = 0;
  ClusterTopology topology(options);
  boost::asio::io_context io;
  const auto masters = topology.masters();
  cluster::ClusterClient client(io.get_executor(), cluster_options(topology, masters));
  cluster::ClusterNotices notices(client, cluster_options(topology, masters));
  std::vector<std::pair<std::string, std::string>> heard;
  std::map<std::string, bool> available;
  notices.on_message([&](std::string_view c, std::string_view p) { heard.emplace_back(c, p); });
  notices.on_availability([&](std::string_view c, bool up) { available[std::string(c)] = up; });
  client.start();
  notices.start();
  // Channels on every shard, watched before the map is known.
  std::vector<std::string> channels;
  for (const std::size_t m : masters) channels.push_back(channel_served_by(topology, m));
  for (const auto& c : channels) notices.watch(c);
  ASSERT_TRUE(run_until(io, [&] { return notices.confirmed() == channels.size(); }, 20s));

  auto publish = [&](const std::string& channel, const std::string& payload) {
    const std::size_t master = topology.master_of_slot(topology.key_slot(channel));
    return topology.node(master).admin().call({"SPUBLISH", channel, payload});
  };
  for (const auto& c : channels) EXPECT_EQ(publish(c, "from " + c).integer, 1) << c;
  ASSERT_TRUE(run_until(io, [&] { return heard.size() == channels.size(); }));
  // Each shard's message comes on its own connection: in any order.
  std::vector<std::pair<std::string, std::string>> expected;
  for (const auto& c : channels) expected.emplace_back(c, "from " + c);
  std::sort(heard.begin(), heard.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(heard, expected);

  // The first channel's slot moves to another master: the old one ends the
  // subscription, the channel is subscribed again on the new one.
  const int slot = cluster::key_slot(channels[0]);
  const std::size_t to = masters[1];
  topology.begin_migration(slot, to);
  topology.finish_migration(slot);
  ASSERT_TRUE(run_until(io, [&] {
    const auto* master = client.slot_map().master_of(static_cast<std::uint16_t>(slot));
    return master != nullptr && master->port == topology.node(to).port() && available[channels[0]] &&
           notices.confirmed() == channels.size();
  }, 20s));
  heard.clear();
  EXPECT_EQ(publish(channels[0], "after the move").integer, 1);
  ASSERT_TRUE(run_until(io, [&] { return heard.size() == 1; }));
  EXPECT_EQ(heard[0].second, "after the move");
}

}  // namespace
}  // namespace integration_cluster_client_test
