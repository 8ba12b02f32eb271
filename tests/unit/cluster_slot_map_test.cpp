// The slot map of a Redis Cluster, read from CLUSTER SHARDS and CLUSTER SLOTS
// replies: fixtures shaped like what Redis 7.0.15 sends (see
// HarnessCluster.SlotMapFromALiveClusterMatchesTheHarness for the live
// replies), holes, odd endpoints and malformed entries.

#include <leasehold/impl/cluster/slot_map.hpp>
#include <leasehold/impl/cluster/slot_map_replies.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace unit_cluster_slot_map_test {
namespace {

namespace lh = leasehold;
using lh::redis::Reply;
using namespace lh::cluster::detail;

Reply str(std::string s) { return Reply::make_string(std::move(s)); }
Reply num(std::int64_t v) { return Reply::make_integer(v); }
Reply arr(std::vector<Reply> v) { return Reply::make_array(std::move(v)); }

const std::string id_a(40, 'a');
const std::string id_b(40, 'b');
const std::string id_c(40, 'c');
const std::string id_d(40, 'd');
const std::string id_e(40, 'e');
const std::string id_f(40, 'f');
const std::string id_x(40, '9');

// One node of a CLUSTER SHARDS shard, with Redis 7.0's fields.
Reply shard_node(const std::string& id, std::int64_t port, const std::string& role,
                 const std::string& health = "online") {
  return arr({str("id"), str(id), str("port"), num(port), str("ip"), str("127.0.0.1"), str("endpoint"),
              str("127.0.0.1"), str("role"), str(role), str("replication-offset"), num(1297), str("health"),
              str(health)});
}

Reply shard(std::vector<std::int64_t> slots, std::vector<Reply> nodes) {
  std::vector<Reply> slot_replies;
  for (const auto s : slots) slot_replies.push_back(num(s));
  return arr({str("slots"), arr(std::move(slot_replies)), str("nodes"), arr(std::move(nodes))});
}

// What Redis 7.0.15 answered after slot 12182 moved to the first master and
// the master on 7001 was killed and replaced by its replica on 7005.
Reply shards_fixture() {
  return arr({
      shard({}, {shard_node(id_x, 7001, "master", "fail")}),
      shard({5461, 10922}, {shard_node(id_f, 7005, "master")}),
      shard({10923, 12181, 12183, 16383},
            {shard_node(id_c, 7002, "master"), shard_node(id_d, 7003, "replica")}),
      shard({0, 5460, 12182, 12182}, {shard_node(id_a, 7000, "master"), shard_node(id_e, 7004, "replica")}),
  });
}

// A CLUSTER SLOTS node: [endpoint, port, id, metadata].
Reply slots_node(std::int64_t port, const std::string& id, Reply metadata = arr({})) {
  return arr({str("127.0.0.1"), num(port), str(id), std::move(metadata)});
}

Reply slots_entry(std::int64_t first, std::int64_t last, std::vector<Reply> nodes) {
  std::vector<Reply> entry{num(first), num(last)};
  for (auto& node : nodes) entry.push_back(std::move(node));
  return arr(std::move(entry));
}

// The same cluster as shards_fixture(), as CLUSTER SLOTS lists it.
Reply slots_fixture() {
  return arr({
      slots_entry(0, 5460, {slots_node(7000, id_a), slots_node(7004, id_e)}),
      slots_entry(5461, 10922, {slots_node(7005, id_f)}),
      slots_entry(10923, 12181, {slots_node(7002, id_c), slots_node(7003, id_d)}),
      slots_entry(12182, 12182, {slots_node(7000, id_a), slots_node(7004, id_e)}),
      slots_entry(12183, 16383, {slots_node(7002, id_c), slots_node(7003, id_d)}),
  });
}

ClusterNode node(const std::string& id, std::uint16_t port) { return {id, "127.0.0.1", port}; }

void expect_fixture_map(const SlotMap& map) {
  EXPECT_TRUE(map.covers_all()) << map.describe();
  EXPECT_EQ(map.covered_slots(), 16384u);
  EXPECT_EQ(*map.master_of(0), node(id_a, 7000));
  EXPECT_EQ(*map.master_of(5460), node(id_a, 7000));
  EXPECT_EQ(*map.master_of(5461), node(id_f, 7005));
  EXPECT_EQ(*map.master_of(12181), node(id_c, 7002));
  EXPECT_EQ(*map.master_of(12182), node(id_a, 7000));
  EXPECT_EQ(*map.master_of(12183), node(id_c, 7002));
  EXPECT_EQ(*map.master_of(16383), node(id_c, 7002));
  EXPECT_EQ(map.master_of(16384), nullptr);
  ASSERT_NE(map.range_of(12182), nullptr);
  EXPECT_EQ(map.range_of(12182)->replicas, std::vector<ClusterNode>{node(id_e, 7004)});
  EXPECT_TRUE(map.range_of(6000)->replicas.empty());
  EXPECT_EQ(map.masters(), (std::vector<ClusterNode>{node(id_a, 7000), node(id_f, 7005), node(id_c, 7002)}));
  EXPECT_EQ(map.ranges().size(), 5u);
}

// The error of reading `reply`, which must not be a map.
lh::Error shards_error(const Reply& reply) {
  const auto reading = read_cluster_shards(reply);
  EXPECT_TRUE(reading.map.empty());
  return reading.error;
}

lh::Error slots_error(const Reply& reply) {
  const auto reading = read_cluster_slots(reply);
  EXPECT_TRUE(reading.map.empty());
  return reading.error;
}

TEST(ClusterSlotMap, FromClusterShards) {
  const auto reading = read_cluster_shards(shards_fixture());
  ASSERT_FALSE(reading.error) << reading.error.message();
  expect_fixture_map(reading.map);
}

TEST(ClusterSlotMap, FromClusterSlots) {
  const auto reading = read_cluster_slots(slots_fixture());
  ASSERT_FALSE(reading.error) << reading.error.message();
  expect_fixture_map(reading.map);
}

TEST(ClusterSlotMap, BothRepliesOfOneClusterGiveTheSameMap) {
  EXPECT_EQ(read_cluster_shards(shards_fixture()).map, read_cluster_slots(slots_fixture()).map);
}

TEST(ClusterSlotMap, OlderSlotsRepliesWithoutIdOrMetadata) {
  const auto reading = read_cluster_slots(arr({arr({num(0), num(16383), arr({str("10.0.0.1"), num(6379)})})}));
  ASSERT_FALSE(reading.error) << reading.error.message();
  EXPECT_EQ(*reading.map.master_of(100), (ClusterNode{"", "10.0.0.1", 6379}));
}

TEST(ClusterSlotMap, SlotsNoRangeCoversHaveNoMaster) {
  const auto reading = read_cluster_slots(arr({
      slots_entry(0, 99, {slots_node(7000, id_a)}),
      slots_entry(200, 299, {slots_node(7001, id_b)}),
  }));
  ASSERT_FALSE(reading.error) << reading.error.message();
  const SlotMap& map = reading.map;
  EXPECT_EQ(map.covered_slots(), 200u);
  EXPECT_FALSE(map.covers_all());
  EXPECT_NE(map.master_of(99), nullptr);
  EXPECT_EQ(map.master_of(100), nullptr);
  EXPECT_EQ(map.master_of(199), nullptr);
  EXPECT_EQ(map.master_of(200)->port, 7001);
  EXPECT_EQ(map.master_of(300), nullptr);
  EXPECT_EQ(map.describe(), "0-99 127.0.0.1:7000, 200-299 127.0.0.1:7001");

  // A cluster with no slots assigned yet: an empty map, not an error.
  const auto empty = read_cluster_shards(arr({shard({}, {shard_node(id_a, 7000, "master")})}));
  ASSERT_FALSE(empty.error) << empty.error.message();
  EXPECT_TRUE(empty.map.empty());
  EXPECT_EQ(empty.map.master_of(0), nullptr);
  EXPECT_EQ(empty.map.describe(), "no slots");
  EXPECT_TRUE(read_cluster_slots(arr({})).map.empty());
}

TEST(ClusterSlotMap, AdjacentRangesOfOneMasterMerge) {
  const auto reading = SlotMap::from_ranges({
      {10, 19, node(id_a, 7000), {}},
      {0, 9, node(id_a, 7000), {}},
      {20, 29, node(id_b, 7001), {}},
      {30, 39, node(id_a, 7000), {}},
      {40, 49, node(id_a, 7000), {node(id_e, 7004)}},  // other replicas: kept apart
  });
  ASSERT_FALSE(reading.error) << reading.error.message();
  ASSERT_EQ(reading.map.ranges().size(), 4u);
  EXPECT_EQ(reading.map.ranges()[0].first, 0);
  EXPECT_EQ(reading.map.ranges()[0].last, 19);
  EXPECT_EQ(reading.map.range_of(35)->first, 30);
  EXPECT_EQ(reading.map.range_of(45)->first, 40);
  EXPECT_EQ(reading.map.masters().size(), 2u);
}

TEST(ClusterSlotMap, ShardsEndpointFallsBackToTheIpAndTlsTakesTheTlsPort) {
  auto node_reply = arr({str("id"), str(id_a), str("port"), num(7000), str("tls-port"), num(7443), str("ip"),
                         str("10.0.0.7"), str("endpoint"), str("?"), str("hostname"), str(""), str("role"),
                         str("master"), str("health"), str("online")});
  const Reply reply = arr({shard({0, 16383}, {node_reply})});
  const auto plain = read_cluster_shards(reply);
  ASSERT_FALSE(plain.error) << plain.error.message();
  EXPECT_EQ(*plain.map.master_of(0), (ClusterNode{id_a, "10.0.0.7", 7000}));

  const auto tls = read_cluster_shards(reply, {.answering_host = {}, .tls = true});
  ASSERT_FALSE(tls.error) << tls.error.message();
  EXPECT_EQ(tls.map.master_of(0)->port, 7443);

  // Without a tls-port there is nothing to connect to over TLS.
  const auto no_tls_port = read_cluster_shards(shards_fixture(), {.answering_host = {}, .tls = true});
  EXPECT_EQ(no_tls_port.error.code, lh::errc::unexpected_reply);
  EXPECT_NE(no_tls_port.error.detail.find("tls-port"), std::string::npos) << no_tls_port.error.detail;
}

TEST(ClusterSlotMap, SlotsNullEndpointIsTheNodeThatAnswered) {
  const Reply reply = arr({arr({num(0), num(16383), arr({Reply{}, num(7000), str(id_a), arr({})})})});
  const auto answered = read_cluster_slots(reply, {.answering_host = "redis-0.example", .tls = false});
  ASSERT_FALSE(answered.error) << answered.error.message();
  EXPECT_EQ(*answered.map.master_of(0), (ClusterNode{id_a, "redis-0.example", 7000}));

  const auto error = slots_error(reply);
  EXPECT_EQ(error.code, lh::errc::unexpected_reply);
  EXPECT_NE(error.detail.find("null endpoint"), std::string::npos) << error.detail;

  // "?" (hostname not known yet) with the ip in the metadata.
  const auto unknown = read_cluster_slots(
      arr({slots_entry(0, 16383, {arr({str("?"), num(7000), str(id_a), arr({str("ip"), str("10.0.0.9")})})})}));
  ASSERT_FALSE(unknown.error) << unknown.error.message();
  EXPECT_EQ(unknown.map.master_of(0)->host, "10.0.0.9");
  EXPECT_EQ(slots_error(arr({slots_entry(0, 16383, {arr({str("?"), num(7000), str(id_a), arr({})})})})).code,
            lh::errc::unexpected_reply);
}

TEST(ClusterSlotMap, AnErrorReplyKeepsTheServersWords) {
  const auto disabled = shards_error(Reply::make_error("ERR This instance has cluster support disabled"));
  EXPECT_EQ(disabled.code, lh::errc::server_error);
  EXPECT_EQ(disabled.detail, "CLUSTER SHARDS answered ERR This instance has cluster support disabled");

  const auto old_server = shards_error(Reply::make_error("ERR unknown subcommand 'shards'. Try CLUSTER HELP."));
  EXPECT_EQ(old_server.code, lh::errc::server_error);

  const auto refused = slots_error(Reply::make_error("NOPERM this user has no permissions to run 'cluster'"));
  EXPECT_EQ(refused.code, lh::errc::no_permission);
  EXPECT_NE(refused.detail.find("CLUSTER SLOTS"), std::string::npos);
}

TEST(ClusterSlotMap, MalformedShardsRepliesAreErrorsNamingTheEntry) {
  const auto master = shard_node(id_a, 7000, "master");
  const auto without = [&](std::vector<std::string> names) {
    std::vector<Reply> fields;
    for (std::size_t i = 0; i + 1 < master.elements.size(); i += 2) {
      if (std::find(names.begin(), names.end(), master.elements[i].str) != names.end()) continue;
      fields.push_back(master.elements[i]);
      fields.push_back(master.elements[i + 1]);
    }
    return arr(std::move(fields));
  };
  const std::vector<std::pair<Reply, std::string>> cases{
      {Reply::make_integer(3), "expected an array of shards"},
      {Reply{}, "expected an array of shards"},
      {arr({str("slots")}), "shard 0 is not a field/value array"},
      {arr({arr({str("nodes"), arr({master})})}), "shard 0 has no \"slots\""},
      {arr({arr({str("slots"), arr({num(0)}), str("nodes"), arr({master})})}), "shard 0 has no \"slots\""},
      {arr({arr({str("slots"), num(0), str("nodes"), arr({master})})}), "shard 0 has no \"slots\""},
      {arr({arr({str("slots"), arr({num(0), num(1)})})}), "shard 0 has no \"nodes\""},
      {arr({shard({0, 16384}, {master})}), "not two slot numbers"},
      {arr({shard({-1, 5}, {master})}), "not two slot numbers"},
      {arr({arr({str("slots"), arr({str("0"), str("5")}), str("nodes"), arr({master})})}),
       "not two slot numbers"},
      {arr({shard({10, 5}, {master})}), "10-5 is not within"},
      {arr({shard({0, 5}, {shard_node(id_e, 7004, "replica")})}), "shard 0 serves slots but lists no master"},
      {arr({shard({0, 5}, {master, shard_node(id_b, 7001, "master")})}), "shard 0 lists two masters"},
      {arr({shard({0, 5}, {master, str("node")})}), "shard 0 node 1 is not a field/value array"},
      {arr({shard({0, 5}, {without({"port"})})}), "shard 0 node 0 (" + id_a + ") has no valid \"port\""},
      {arr({shard({0, 5}, {shard_node(id_a, 70000, "master")})}), "has no valid \"port\""},
      {arr({shard({0, 5}, {shard_node(id_a, 0, "master")})}), "has no valid \"port\""},
      {arr({shard({0, 5}, {without({"role"})})}), "has no role"},
      {arr({shard({0, 5}, {without({"endpoint", "ip"})})}), "neither a known endpoint nor an ip"},
      {arr({shard({0, 100}, {master}), shard({50, 60}, {shard_node(id_b, 7001, "master")})}),
       "slot 50 is in two ranges"},
  };
  for (const auto& [reply, expected] : cases) {
    const auto error = shards_error(reply);
    EXPECT_EQ(error.code, lh::errc::unexpected_reply) << reply.debug_string();
    EXPECT_EQ(error.detail.rfind("CLUSTER SHARDS: ", 0), 0u) << error.detail;
    EXPECT_NE(error.detail.find(expected), std::string::npos)
        << "detail: " << error.detail << "\nexpected: " << expected << "\nreply: " << reply.debug_string();
  }
}

TEST(ClusterSlotMap, MalformedSlotsRepliesAreErrorsNamingTheEntry) {
  const auto master = slots_node(7000, id_a);
  const std::vector<std::pair<Reply, std::string>> cases{
      {str("0 16383"), "expected an array of slot ranges"},
      {arr({num(0)}), "entry 0 is not [first, last, master, ...]"},
      {arr({arr({num(0), num(16383)})}), "entry 0 is not [first, last, master, ...]"},
      {arr({slots_entry(0, 16384, {master})}), "entry 0 does not start with two slot numbers"},
      {arr({arr({str("0"), num(5), master})}), "entry 0 does not start with two slot numbers"},
      {arr({slots_entry(9, 3, {master})}), "9-3 is not within"},
      {arr({slots_entry(0, 5, {str("127.0.0.1")})}), "entry 0 master is not [endpoint, port, ...]"},
      {arr({slots_entry(0, 5, {arr({str("127.0.0.1")})})}), "entry 0 master is not [endpoint, port, ...]"},
      {arr({slots_entry(0, 5, {arr({str("127.0.0.1"), str("7000")})})}), "has no valid port"},
      {arr({slots_entry(0, 5, {arr({str("127.0.0.1"), num(-1)})})}), "has no valid port"},
      {arr({slots_entry(0, 5, {master, arr({str("127.0.0.1"), num(0), str(id_e)})})}),
       "entry 0 replica 0 (" + id_e + ") has no valid port"},
      {arr({slots_entry(0, 5, {arr({num(1), num(7000)})})}), "unknown endpoint"},
      {arr({slots_entry(0, 5, {master}), slots_entry(5, 9, {slots_node(7001, id_b)})}),
       "slot 5 is in two ranges"},
      {arr({slots_entry(0, 5, {master}), slots_entry(0, 5, {master})}), "slot 0 is in two ranges"},
  };
  for (const auto& [reply, expected] : cases) {
    const auto error = slots_error(reply);
    EXPECT_EQ(error.code, lh::errc::unexpected_reply) << reply.debug_string();
    EXPECT_EQ(error.detail.rfind("CLUSTER SLOTS: ", 0), 0u) << error.detail;
    EXPECT_NE(error.detail.find(expected), std::string::npos)
        << "detail: " << error.detail << "\nexpected: " << expected << "\nreply: " << reply.debug_string();
  }
}

TEST(ClusterSlotMap, FromRangesRejectsWhatNoReplyShouldSay) {
  EXPECT_EQ(SlotMap::from_ranges({{0, 16384, node(id_a, 7000), {}}}).error.code, lh::errc::unexpected_reply);
  EXPECT_EQ(SlotMap::from_ranges({{0, 5, ClusterNode{id_a, "", 7000}, {}}}).error.code,
            lh::errc::unexpected_reply);
  EXPECT_EQ(SlotMap::from_ranges({{0, 5, ClusterNode{id_a, "h", 0}, {}}}).error.code,
            lh::errc::unexpected_reply);
  const auto ok = SlotMap::from_ranges({{16383, 16383, node(id_a, 7000), {}}});
  ASSERT_FALSE(ok.error);
  EXPECT_EQ(ok.map.master_of(16383)->port, 7000);
  EXPECT_EQ(ok.map.master_of(16382), nullptr);
}

TEST(ClusterSlotMap, IPv6HostsArePrintedInBrackets) {
  EXPECT_EQ((ClusterNode{id_a, "::1", 7000}.to_string()), "[::1]:7000");
  EXPECT_EQ((ClusterNode{id_a, "10.0.0.1", 7000}.to_string()), "10.0.0.1:7000");
}

}  // namespace
}  // namespace unit_cluster_slot_map_test
