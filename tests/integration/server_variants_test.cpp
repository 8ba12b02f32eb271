// Redis-compatible servers and managed services answer some of leasehold's
// commands in their own words. A real Redis 7.0 behind a VariantProxy plays
// them: each capability is probed once per connection and leads to one
// clear error or a fallback, never an error per renewal.

#include "support/elector_fixture.hpp"
#include "support/log_capture.hpp"
#include "support/node_probe.hpp"
#include "support/redis_server.hpp"
#include "support/variant_proxy.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace integration_server_variants_test {
namespace {

namespace lh = leasehold;
using lh::test::Fleet;
using lh::test::RedisServer;
using lh::test::VariantProxy;
using namespace std::chrono_literals;

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

// A one-node cluster (every slot) that announces the proxy's port: the
// slot map, and so every connection the elector makes, goes through it.
struct ProxiedCluster {
  RedisServer node{[] {
    lh::test::RedisServerOptions o;
    o.cluster = true;
    return o;
  }()};
  VariantProxy proxy{node.port()};

  ProxiedCluster() {
    auto admin = node.admin();
    admin.call({"CONFIG", "SET", "cluster-announce-ip", "127.0.0.1"});
    admin.call({"CONFIG", "SET", "cluster-announce-port", std::to_string(proxy.port())});
    admin.call({"CLUSTER", "ADDSLOTSRANGE", "0", "16383"});
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (!contains(admin.call({"CLUSTER", "INFO"}).str, "cluster_state:ok") ||
           !contains(lh::test::describe_reply(admin.call({"CLUSTER", "SLOTS"})), std::to_string(proxy.port()))) {
      if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("the proxied cluster never got ok");
      std::this_thread::sleep_for(20ms);
    }
  }

  std::string url() const { return "redis-cluster://127.0.0.1:" + std::to_string(proxy.port()); }
};

std::vector<std::string> groups(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back("g" + std::to_string(i));
  return out;
}

bool leads_all(Fleet& fleet, const std::vector<std::string>& names) {
  for (const auto& g : names) {
    if (!fleet.at(0).is_leader(g)) return false;
  }
  return true;
}

// Dragonfly and ElastiCache Serverless refuse the script that renews several
// slots' groups (undeclared keys) with texts of their own: the first refusal
// turns renewals to one slot per script, and no lease is lost over it. The
// script that marks every slot ahead (the same flag) is refused too: asked
// once, said once, and the groups wait out the guard as without it.
TEST(ServerVariants, ARefusedCrossSlotScriptFallsBackToOneSlotPerScriptOnce) {
  ProxiedCluster cluster;
  cluster.proxy.refuse_script_containing(
      "allow-cross-slot-keys",
      lh::test::resp_error("ERR Error running script (call to f_1): @user_script:4: script tried accessing "
                           "undeclared key, key: leader:{g1}:holder"));
  lh::test::LogCapture log(lh::LogLevel::info);
  auto redis = lh::RedisOptions::from_url(cluster.url());
  Fleet fleet(redis);
  const auto names = groups(20);
  auto options = lh::test::fast_options("variant");
  options.groups = names;
  fleet.add(options);
  ASSERT_TRUE(lh::test::run_until(fleet.io, [&] { return leads_all(fleet, names); }, 20s));
  lh::test::run_for(fleet.io, 3s);  // six heartbeats
  EXPECT_TRUE(leads_all(fleet, names));
  std::string why;
  for (const auto& r : fleet.events(0).revoked) why += r.group + ": " + std::string(lh::to_string(r.reason)) + "\n";
  for (const auto& e : fleet.events(0).errors) why += e.group + ": " + e.error.message() + "\n";
  for (const auto& [level, line] : log.matching({""})) why += line + "\n";
  EXPECT_TRUE(fleet.events(0).revoked.empty()) << "a renewal was lost to the fallback\n" << why;
  EXPECT_EQ(log.matching({"refused the script that renews several slots", "undeclared key"}).size(), 1u);
  EXPECT_EQ(log.matching({"the slot markers were not written", "undeclared key"}).size(), 1u);
  const auto refused = cluster.proxy.counts("EVALSHA").refused + cluster.proxy.counts("EVAL").refused;
  EXPECT_GE(refused, 2u) << "the cross-slot scripts were never tried";
  EXPECT_LE(refused, 3u) << "tried again on every heartbeat, or every slot marker script sent";
}

// KeyDB's active replication takes writes on more than one master: the
// client refuses such a server at connect, saying why, and nobody leads.
TEST(ServerVariants, AKeyDbActiveReplicaIsRefusedSayingWhy) {
  RedisServer server;
  VariantProxy proxy(server.port());
  proxy.rewrite_reply("ROLE", [](std::string_view) {
    return std::string("*3\r\n$14\r\nactive-replica\r\n:0\r\n*0\r\n");
  });
  Fleet fleet(proxy.options_for(server.options()));
  auto& e = fleet.add(lh::test::fast_options("keydb"));
  ASSERT_TRUE(lh::test::run_until(fleet.io, [&] { return fleet.events(0).has_error(lh::errc::not_master); }, 10s));
  const auto* error = fleet.events(0).first_error(lh::errc::not_master);
  EXPECT_EQ(error->group, "");
  EXPECT_TRUE(contains(error->error.detail, "active-replica")) << error->error.message();
  EXPECT_TRUE(contains(error->error.detail, "more than one master")) << error->error.message();
  lh::test::run_for(fleet.io, 1s);
  EXPECT_FALSE(e.is_leader());
  EXPECT_FALSE(server.admin().get("leader:default").has_value());
}

// No WAIT (Dragonfly before 1.40, some managed services, an ACL without
// +wait): confirm mode cannot confirm anything. One error event and one log
// line per elector quote the server; the groups do not lead, do not pass the
// lease round and do not report one by one.
TEST(ServerVariants, ARefusedWaitIsReportedOnceAndNoGroupLeads) {
  RedisServer server;
  VariantProxy proxy(server.port());
  proxy.refuse("WAIT", lh::test::noperm_error("wait"));
  lh::test::LogCapture log(lh::LogLevel::warning);
  Fleet fleet(proxy.options_for(server.options()));
  const auto names = groups(5);
  for (const char* id : {"a", "b"}) {
    auto options = lh::test::fast_options(id);
    options.groups = names;
    options.confirm_replicas = 1;
    options.confirm_timeout = 200ms;
    options.empty_restart_guard = false;
    fleet.add(options);
  }
  ASSERT_TRUE(lh::test::run_until(fleet.io, [&] { return proxy.counts("WAIT").refused >= 1; }, 10s));
  lh::test::run_for(fleet.io, 3s);  // ten retry intervals
  EXPECT_TRUE(fleet.leaders().empty());
  std::size_t refusals = 0;
  for (std::size_t i = 0; i < 2; ++i) {
    for (const auto& e : fleet.events(i).errors) {
      EXPECT_NE(e.error.code, lh::errc::not_confirmed) << "group " << e.group << " reported on its own";
      if (contains(e.error.detail, "needs WAIT, which the server refused: NOPERM")) {
        EXPECT_EQ(e.group, "");
        ++refusals;
      }
    }
  }
  EXPECT_GE(refusals, 1u);
  EXPECT_LE(refusals, 2u) << "once per elector";
  EXPECT_LE(log.matching({"needs WAIT, which the server refused"}).size(), 2u);
  for (const auto& g : names) {
    EXPECT_LE(std::stoi(server.admin().get("leader:" + g + ":token").value_or("0")), 1) << g << " passed round";
  }
}

// CLUSTER SHARDS in a shape leasehold cannot read (a Redis-compatible
// server's own fields): the slot map comes from CLUSTER SLOTS instead.
TEST(ServerVariants, AnUnreadableClusterShardsReplyFallsBackToClusterSlots) {
  ProxiedCluster cluster;
  cluster.proxy.rewrite_reply("CLUSTER SHARDS", [](std::string_view) {
    return std::string("*1\r\n*2\r\n$5\r\nslots\r\n*2\r\n:0\r\n:16383\r\n");  // no "nodes"
  });
  Fleet fleet(lh::RedisOptions::from_url(cluster.url()));
  const auto names = groups(4);
  auto options = lh::test::fast_options("shards");
  options.groups = names;
  fleet.add(options);
  ASSERT_TRUE(lh::test::run_until(fleet.io, [&] { return leads_all(fleet, names); }, 20s));
  EXPECT_GE(cluster.proxy.counts("CLUSTER SHARDS").rewritten, 1u);
  EXPECT_GE(cluster.proxy.counts("CLUSTER SLOTS").seen, 1u);
  EXPECT_EQ(fleet.metrics(0).commands.slot_map_failures, 0u);
}

}  // namespace
}  // namespace integration_server_variants_test
