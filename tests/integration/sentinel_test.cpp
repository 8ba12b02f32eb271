// The Sentinel transport (redis-sentinel:// URLs) on a real topology: one
// master, two replicas and three sentinels, each a redis-server the harness
// started on loopback. Resolution, the ROLE check, READONLY, and what each
// misconfiguration reports. Failovers: sentinel_failover_test.cpp.

#include "support/elector_fixture.hpp"
#include "support/scripted_server.hpp"
#include "support/sentinel_topology.hpp"

#include <gtest/gtest.h>

#include <string>

namespace integration_sentinel_test {
namespace {

namespace lh = leasehold;
using lh::test::Fleet;
using lh::test::run_for;
using lh::test::run_until;
using lh::test::SentinelTopology;
using namespace std::chrono_literals;

lh::ElectorOptions sentinel_options(std::string id) {
  auto o = lh::test::fast_options(std::move(id));
  o.empty_restart_guard = false;  // each test starts from a fresh group
  return o;
}

lh::RedisOptions from_url(const std::string& url) {
  auto options = lh::RedisOptions::from_url(url);
  options.command_timeout = 500ms;
  options.reconnect_max = 200ms;
  return options;
}

std::string error_text(const lh::test::RecordedEvents& events, lh::errc code) {
  const auto* error = events.first_error(code);
  return error ? error->error.message() : std::string();
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(Sentinel, AnElectorFindsTheMasterThroughTheSentinelsAndLeads) {
  SentinelTopology topology;
  Fleet fleet(from_url(topology.sentinel_url()));
  fleet.add(sentinel_options("first"));
  ASSERT_TRUE(fleet.wait_leading(0));
  EXPECT_EQ(topology.node(0).admin().get("leader:default"), "first");
}

TEST(Sentinel, AnUnknownMasterNameIsReportedAndNobodyLeads) {
  SentinelTopology topology;
  Fleet fleet(from_url(topology.sentinel_url("no-such-master")));
  auto& e = fleet.add(sentinel_options("lost"));
  ASSERT_TRUE(run_until(fleet.io, [&] { return fleet.events(0).has_error(lh::errc::master_unknown); }));
  const auto message = error_text(fleet.events(0), lh::errc::master_unknown);
  EXPECT_TRUE(contains(message, "no master named \"no-such-master\"")) << message;
  EXPECT_TRUE(contains(message, std::to_string(topology.sentinel_port(2)))) << "names every sentinel: " << message;
  run_for(fleet.io, 500ms);
  EXPECT_FALSE(e.is_leader());
}

TEST(Sentinel, AWrongSentinelPasswordIsAnAuthenticationFailureNamingTheSentinels) {
  lh::test::SentinelTopologyOptions options;
  options.sentinel_password = "sentinel-secret";
  SentinelTopology topology(options);
  // The query goes before the '#': after it, it would be part of the master's name.
  const auto url = topology.sentinel_url();
  const auto hash = url.find('#');
  {
    Fleet fleet(from_url(url.substr(0, hash) + "?sentinel_password=wrong" + url.substr(hash)));
    fleet.add(sentinel_options("refused"));
    ASSERT_TRUE(run_until(fleet.io, [&] { return fleet.events(0).has_error(lh::errc::auth_failed); }));
    const auto message = error_text(fleet.events(0), lh::errc::auth_failed);
    EXPECT_TRUE(contains(message, "127.0.0.1:" + std::to_string(topology.sentinel_port(0)))) << message;
    EXPECT_FALSE(contains(message, "wrong")) << "never the password: " << message;
    EXPECT_FALSE(fleet.at(0).is_leader());
  }
  Fleet fleet(from_url(url.substr(0, hash) + "?sentinel_password=sentinel-secret" + url.substr(hash)));
  fleet.add(sentinel_options("admitted"));
  EXPECT_TRUE(fleet.wait_leading(0));
}

TEST(Sentinel, WithTheFirstSentinelDownTheNextOneAnswers) {
  SentinelTopology topology;
  topology.kill_sentinel(0);
  Fleet fleet(from_url(topology.sentinel_url()));
  fleet.add(sentinel_options("second-asked"));
  ASSERT_TRUE(fleet.wait_leading(0));
  EXPECT_TRUE(fleet.events(0).errors.empty()) << fleet.events(0).errors.front().error.message();
}

// Sentinels are needed to find the master, not to talk to it: a leader keeps
// its connection and its lease; an instance that must resolve reports that no
// sentinel answers, and joins once they are back.
TEST(Sentinel, WithEverySentinelDownALeaderKeepsLeadingAndANewcomerReportsThemUnreachable) {
  SentinelTopology topology;
  Fleet fleet(from_url(topology.sentinel_url()));
  auto& leader = fleet.add(sentinel_options("leader"));
  ASSERT_TRUE(fleet.wait_leading(0));
  for (std::size_t j = 0; j < topology.sentinel_count(); ++j) topology.kill_sentinel(j);
  auto& newcomer = fleet.add(sentinel_options("newcomer"));
  ASSERT_TRUE(run_until(fleet.io, [&] { return fleet.events(1).has_error(lh::errc::sentinel_unreachable); }));
  const auto message = error_text(fleet.events(1), lh::errc::sentinel_unreachable);
  for (std::size_t j = 0; j < topology.sentinel_count(); ++j) {
    EXPECT_TRUE(contains(message, "127.0.0.1:" + std::to_string(topology.sentinel_port(j)))) << message;
  }
  run_for(fleet.io, 3s);  // two ttls
  EXPECT_TRUE(leader.is_leader());
  EXPECT_EQ(fleet.events(0).elected.size(), 1u) << "the same term throughout";
  EXPECT_FALSE(newcomer.is_leader());

  for (std::size_t j = 0; j < topology.sentinel_count(); ++j) topology.restart_sentinel(j);
  fleet.crash(0);
  EXPECT_TRUE(fleet.wait_leading(1, "default", 15s)) << "the newcomer resolves once the sentinels are back";
}

// A sentinel may name a replica (stale after a partition, or mid-failover):
// ROLE catches it, and that sentinel is asked last from then on.
TEST(Sentinel, AReplicaNamedByASentinelFailsTheRoleCheckAndTheOthersAreAskedFirst) {
  SentinelTopology topology;
  const std::string replica_port = std::to_string(topology.node(1).port());
  lh::test::ScriptedServer stale_sentinel([&](const lh::test::ScriptedCommand& command) {
    if (command.name() == "SENTINEL") {
      return lh::test::ScriptedAction::reply("*2\r\n$9\r\n127.0.0.1\r\n$" + std::to_string(replica_port.size()) +
                                             "\r\n" + replica_port + "\r\n");
    }
    return lh::test::ScriptedServer::redis_like(command);
  });
  const auto url = topology.sentinel_url();
  const auto rest = url.substr(std::string("redis-sentinel://").size());
  Fleet fleet(from_url("redis-sentinel://127.0.0.1:" + std::to_string(stale_sentinel.port()) + "," + rest));
  fleet.add(sentinel_options("checked"));
  ASSERT_TRUE(fleet.wait_leading(0));
  const auto message = error_text(fleet.events(0), lh::errc::not_master);
  EXPECT_TRUE(contains(message, "127.0.0.1:" + replica_port)) << message;
  EXPECT_TRUE(contains(message, "ROLE says \"slave\"")) << message;
  EXPECT_EQ(topology.node(0).admin().get("leader:default"), "checked");
  // The commands and the subscriber connection each resolve (and the
  // +switch-master watchers subscribe there, harmlessly).
  std::size_t questions = 0;
  for (const auto& command : stale_sentinel.commands()) questions += command.name() == "SENTINEL" ? 1 : 0;
  EXPECT_EQ(questions, 2u) << "each connection asked it once, then last";
}

// A master turned replica by hand (no failover) answers writes with
// READONLY: the connection goes, the sentinels still name the node, ROLE
// refuses it, and the instance leads again once the node is a master again.
TEST(Sentinel, ReadOnlyAfterAManualReplicaofMakesTheClientResolveAgainUntilTheNodeIsAMasterAgain) {
  SentinelTopology topology;
  lh::test::RedisServer elsewhere;
  Fleet fleet(from_url(topology.sentinel_url()));
  auto& e = fleet.add(sentinel_options("demoted"));
  ASSERT_TRUE(fleet.wait_leading(0));
  topology.node(0).admin().call({"REPLICAOF", "127.0.0.1", std::to_string(elsewhere.port())});
  ASSERT_TRUE(run_until(fleet.io, [&] { return !fleet.events(0).revoked.empty(); }, 10s));
  ASSERT_TRUE(run_until(fleet.io, [&] { return fleet.events(0).has_error(lh::errc::not_master); }, 10s));
  run_for(fleet.io, 1500ms);  // resolving again and again: the sentinels still name the replica
  EXPECT_FALSE(e.is_leader());
  EXPECT_FALSE(e.health().ready);
  topology.node(0).admin().call({"REPLICAOF", "NO", "ONE"});
  EXPECT_TRUE(run_until(fleet.io, [&] { return fleet.events(0).elected.size() == 2; }, 15s)) << topology.log_tails();
}

}  // namespace
}  // namespace integration_sentinel_test
