// The release and hand-over scripts of a Redis Cluster (SPUBLISH notices) on
// a server that lacks SPUBLISH (Redis before 7.0, emulated by renaming the
// command away): the lease is still released or handed over, and the script
// says so; only the notice is missing, and standbys then poll. And the
// renewal across a node's slots, given only the lease keys, answers as the
// batch given every key does. And the script that writes a cluster node's
// slot markers ahead of any group: it writes what the guard would, and the
// guard trusts what it wrote.

#include <leasehold/impl/lease/lease_scripts.hpp>
#include "support/io_helpers.hpp"
#include "support/admin_client.hpp"
#include "support/redis_server.hpp"

#include <leasehold/redis/client.hpp>

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace integration_lease_scripts_test {
namespace {

namespace lh = leasehold;
using namespace std::chrono_literals;

// A private server and a client that runs scripts on it.
struct ScriptServer {
  explicit ScriptServer(const lh::test::RedisServerOptions& options = {}) : server(options) {}
  lh::redis::Reply eval(const lh::redis::Script& script, std::vector<std::string> keys,
                        std::vector<std::string> args) {
    if (!client.connected()) {
      client.start();
      EXPECT_TRUE(lh::test::run_until(io, [&] { return client.connected(); }, 10s));
    }
    std::optional<lh::redis::Reply> reply;
    client.async_eval(script, std::move(keys), std::move(args),
                      [&](lh::error_code ec, lh::redis::Reply r) {
                        EXPECT_FALSE(ec && !r.is_error()) << ec.message();
                        reply = std::move(r);
                      });
    EXPECT_TRUE(lh::test::run_until(io, [&] { return reply.has_value(); }, 10s));
    return reply.value_or(lh::redis::Reply{});
  }

  lh::test::RedisServer server;
  boost::asio::io_context io;
  lh::redis::Client client{io.get_executor(), lh::RedisOptions::from_url(server.url())};
};

// A server that does not know `command` (renamed away), as an older or a
// restricted one.
lh::test::RedisServerOptions without(const std::string& command) {
  lh::test::RedisServerOptions o;
  o.extra_config = {"rename-command " + command + " \"\""};
  return o;
}

TEST(ShardedNoticeScripts, ReleaseWithoutSpublishStillReleases) {
  ScriptServer s(without("SPUBLISH"));
  auto admin = s.server.admin();
  ASSERT_EQ(admin.call({"SPUBLISH", "c", "m"}).is_error(), true) << "SPUBLISH should be unknown here";
  admin.set("leader:{g}", "me");
  const auto reply = s.eval(lh::detail::release_script(lh::detail::Notices::sharded),
                            {"leader:{g}", "leader:{g}:holder"}, {"me", "leader:{g}:released", ""});
  EXPECT_TRUE(reply.is_integer() && reply.integer == 1) << reply.debug_string();
  EXPECT_FALSE(admin.get("leader:{g}").has_value());
}

TEST(ShardedNoticeScripts, HandOverWithoutSpublishStillSeatsTheBidder) {
  ScriptServer s(without("SPUBLISH"));
  auto admin = s.server.admin();
  admin.set("leader:{g}", "me");
  const auto reply = s.eval(lh::detail::hand_over_script(lh::detail::Notices::sharded),
                            {"leader:{g}", "leader:{g}:holder"},
                            {"me", "leader:{g}:released", "", "you", "inc-2", "0", "5000"});
  EXPECT_TRUE(reply.is_integer() && reply.integer == 1) << reply.debug_string();
  EXPECT_EQ(admin.get("leader:{g}"), std::optional<std::string>("you"));
}

// Four groups in the states a renewal tells apart: ours (renewed), ours
// with another incarnation in the holder record (a duplicate id), ours with
// a standby's bid, and another instance's. The node script, given each
// group's lease key only, names the holder record and the bid itself: its
// answers must be the batch script's, which is given all four keys.
TEST(RenewScripts, TheNodeScriptGivenLeaseKeysAnswersAsTheBatchGivenEveryKey) {
  ScriptServer s;
  auto admin = s.server.admin();
  const std::vector<std::string> groups{"ours", "twin", "bid", "theirs"};
  const auto reset = [&] {
    for (const auto& g : groups) {
      const std::string lease = "leader:{" + g + "}";
      admin.call({"SET", lease, g == "theirs" ? "other" : "me", "PX", "1000"});
      admin.call({"HSET", lease + ":holder", "incarnation", g == "twin" ? "inc-9" : "inc-1"});
    }
    admin.call({"HSET", "leader:{bid}:bid", "id", "you", "incarnation", "inc-2", "priority", "5"});
    admin.call({"HSET", "leader:{bid}:holder", "bid", "1"});  // raised by a bidder, as the acquire script does
  };
  const std::vector<std::string> args{"me", "5000", "inc-1"};
  std::vector<std::string> keys, leases;
  for (const auto& g : groups) {
    const std::string lease = "leader:{" + g + "}";
    leases.push_back(lease);
    keys.insert(keys.end(), {lease, lease + ":token", lease + ":holder", lease + ":bid"});
  }
  std::vector<std::string> node_args = args;
  node_args.insert(node_args.end(), leases.begin(), leases.end());

  reset();
  const auto batch = s.eval(lh::detail::renew_batch_script(), keys, args);
  reset();
  const auto node = s.eval(lh::detail::renew_node_script(), {}, node_args);
  ASSERT_TRUE(node.is_array()) << node.debug_string();
  EXPECT_EQ(node.debug_string(), batch.debug_string());
  ASSERT_EQ(node.elements.size(), 4u);
  EXPECT_EQ(node.elements[0].debug_string(), lh::redis::Reply::make_integer(1).debug_string());
  EXPECT_EQ(node.elements[1].debug_string(),
            lh::redis::Reply::make_array({lh::redis::Reply::make_integer(0), lh::redis::Reply::make_string("inc-9")})
                .debug_string());
  ASSERT_TRUE(node.elements[2].is_array());
  ASSERT_EQ(node.elements[2].elements.size(), 4u);
  EXPECT_EQ(node.elements[2].elements[1].str, "you");
  EXPECT_EQ(node.elements[2].elements[3].integer, 5);
  EXPECT_EQ(node.elements[3].debug_string(), lh::redis::Reply::make_integer(0).debug_string());
  // Renewed: the lease now lasts the ttl given, not the 1 s set above.
  const auto pttl = admin.call({"PTTL", "leader:{ours}"});
  EXPECT_GT(pttl.integer, 1000);
  EXPECT_EQ(admin.call({"PTTL", "leader:{theirs}"}).integer <= 1000, true);
}

// mark_slots_script()'s answer: {written, other type, unserved}.
lh::redis::Reply counts(long long written, long long other_type, long long unserved) {
  return lh::redis::Reply::make_array({lh::redis::Reply::make_integer(written),
                                       lh::redis::Reply::make_integer(other_type),
                                       lh::redis::Reply::make_integer(unserved)});
}

// Missing and foreign markers are written, a current one is left alone,
// and a key of another type is skipped without failing the others.
TEST(SlotMarkerScript, WritesMissingAndForeignMarkersLeavesCurrentOnesAndSkipsOtherTypes) {
  ScriptServer s;
  auto admin = s.server.admin();
  const std::string identity = admin.data_identity();
  admin.set("leader:slot:{b}", "somebody:else 5");
  admin.call({"HSET", "leader:slot:{d}", "f", "v"});
  admin.set("leader:slot:{c}", identity + " 7");

  const auto first = s.eval(lh::detail::mark_slots_script(), {},
                            {"leader:slot:{a}", "leader:slot:{b}", "leader:slot:{c}", "leader:slot:{d}"});
  EXPECT_EQ(first.debug_string(), counts(2, 1, 0).debug_string());
  for (const char* key : {"leader:slot:{a}", "leader:slot:{b}"}) {
    const auto marker = admin.get(key);
    ASSERT_TRUE(marker.has_value()) << key;
    EXPECT_EQ(marker->substr(0, identity.size() + 1), identity + " ") << key;
  }
  EXPECT_EQ(admin.get("leader:slot:{c}"), identity + " 7") << "a current marker keeps its time";

  const auto written = admin.get("leader:slot:{a}");
  const auto again = s.eval(lh::detail::mark_slots_script(), {}, {"leader:slot:{a}", "leader:slot:{b}"});
  EXPECT_EQ(again.debug_string(), counts(0, 0, 0).debug_string());
  EXPECT_EQ(admin.get("leader:slot:{a}"), written);
}

// A marker the script wrote and that is one ttl old lets the guard seat a
// new group's first holder at once, with token 1; a younger one makes it
// wait until one ttl past the marker's time.
TEST(SlotMarkerScript, TheGuardTrustsAMarkerItWroteOnceItIsOneTtlOld) {
  ScriptServer s;
  auto admin = s.server.admin();
  const std::string marker = "leader:slot:{a}";
  s.eval(lh::detail::mark_slots_script(), {}, {marker});
  const auto fresh = [](const std::string& group) {
    const std::string lease = "leader:{" + group + "}";
    return std::vector<std::string>{lease, lease + ":token", lease + ":holder", lease + ":bid", "leader:slot:{a}"};
  };
  const std::vector<std::string> args{"me", "60000", "inc-1", "0"};

  const auto young = s.eval(lh::detail::guarded_acquire_script(), fresh("one"), args);
  ASSERT_TRUE(young.is_array() && young.elements.size() >= 4) << young.debug_string();
  EXPECT_EQ(young.elements[0].integer, 0) << "a marker younger than the ttl proves nothing yet";
  EXPECT_GT(young.elements[2].integer, 50'000) << young.debug_string();

  const std::string value = admin.get(marker).value_or("");
  const auto space = value.find(' ');
  ASSERT_NE(space, std::string::npos) << value;
  admin.set(marker, value.substr(0, space + 1) + std::to_string(std::stoll(value.substr(space + 1)) - 3'600'000));
  const auto aged = s.eval(lh::detail::guarded_acquire_script(), fresh("two"), args);
  ASSERT_TRUE(aged.is_array() && aged.elements.size() >= 4) << aged.debug_string();
  EXPECT_EQ(aged.elements[0].integer, 1) << aged.debug_string();
  EXPECT_EQ(aged.elements[3].integer, 1) << "the first term of a new group";
}

// Where INFO is refused, nothing is written and the answer says why.
TEST(SlotMarkerScript, WithoutInfoWritesNothingAndSaysWhy) {
  ScriptServer s(without("INFO"));
  auto admin = s.server.admin();
  const auto reply = s.eval(lh::detail::mark_slots_script(), {}, {"leader:slot:{a}"});
  ASSERT_TRUE(reply.is_array() && reply.elements.size() == 2) << reply.debug_string();
  EXPECT_EQ(reply.elements[0].integer, -1);
  EXPECT_NE(reply.elements[1].str.find("INFO"), std::string::npos) << reply.debug_string();
  EXPECT_FALSE(admin.get("leader:slot:{a}").has_value());
}

}  // namespace
}  // namespace integration_lease_scripts_test
