// Logging, metrics and health of electors against real redis-server
// processes: what operators see when leadership changes and when Redis fails.

#include <leasehold/leasehold.hpp>

#include "support/elector_fixture.hpp"
#include "support/log_capture.hpp"
#include "support/prometheus_text.hpp"
#include "support/redis_server.hpp"

#include <boost/asio/post.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

namespace integration_observability_test {
namespace {

namespace lh = leasehold;
using lh::test::Fleet;
using lh::test::LogCapture;
using lh::test::fast_options;
using lh::test::run_until;
using namespace std::chrono_literals;

constexpr const char* password = "Pw-0f-the-test-8341";

lh::test::RedisServerOptions with_password() {
  lh::test::RedisServerOptions o;
  o.password = password;
  return o;
}

TEST(Logging, EveryLeadershipChangeIsLoggedOnceWithGroupInstanceAndReason) {
  LogCapture log(lh::LogLevel::info);
  lh::test::RedisServer server(with_password());
  ASSERT_NE(server.url().find(password), std::string::npos) << "the URL carries the password";
  Fleet fleet(lh::RedisOptions::from_url(server.url()));
  fleet.add(fast_options("alpha"));
  fleet.add(fast_options("beta"));
  auto first = fleet.wait_single_leader();
  ASSERT_TRUE(first);
  const std::string leader = fleet.at(*first).instance_id();
  const std::size_t other = 1 - *first;
  const std::string standby = fleet.at(other).instance_id();

  bool stepped = false;
  fleet.at(*first).step_down("default", [&](lh::error_code) { stepped = true; });
  ASSERT_TRUE(run_until(fleet.io, [&] { return stepped && fleet.at(other).is_leader(); }, 3s));
  lh::test::run_for(fleet.io, 100ms);

  const std::string in_default = "group \"default\"";
  const auto elected = log.matching({"elector " + leader + ":", in_default, "elected leader", "token"});
  ASSERT_EQ(elected.size(), 1u) << log.dump();
  EXPECT_EQ(elected[0].first, lh::LogLevel::info);
  EXPECT_NE(elected[0].second.find("acquired the lease"), std::string::npos) << elected[0].second;
  const auto demoted = log.matching({"elector " + leader + ":", in_default, "no longer leader"});
  ASSERT_EQ(demoted.size(), 1u) << log.dump();
  EXPECT_NE(demoted[0].second.find("stepped_down"), std::string::npos) << demoted[0].second;
  EXPECT_EQ(log.count({"elector " + standby + ":", in_default, "elected leader"}), 1u) << log.dump();
  EXPECT_GE(log.count({"elector " + standby + ":", in_default, "leader is now " + leader}), 1u) << log.dump();
  EXPECT_EQ(log.count({password}), 0u) << "password leaked:\n" << log.dump();
}

TEST(Logging, TheDefaultKeyPrefixIsWarnedAboutOnceAtStartAndACustomOneIsNot) {
  LogCapture log(lh::LogLevel::warning);
  lh::test::RedisServer server;
  Fleet fleet(server);
  fleet.add(fast_options("plain"));
  auto custom = fast_options("billing");
  custom.key_prefix = "billing:leader:";
  fleet.add(custom);
  // Different prefixes, different leases: both lead "default".
  ASSERT_TRUE(fleet.wait_leading(0));
  ASSERT_TRUE(fleet.wait_leading(1));
  lh::test::run_for(fleet.io, 100ms);

  const auto warned = log.matching({"key_prefix is the default"});
  ASSERT_EQ(warned.size(), 1u) << log.dump();
  EXPECT_EQ(warned[0].first, lh::LogLevel::warning);
  for (const char* part : {"elector plain:", "\"leader:\"", "leader:default", "own key_prefix", "billing:leader:"}) {
    EXPECT_NE(warned[0].second.find(part), std::string::npos) << part << " in: " << warned[0].second;
  }
  EXPECT_EQ(log.count({"elector billing:", "key_prefix"}), 0u) << log.dump();
}

TEST(Logging, StepDownOfAnUnknownGroupFailsAndLogsItsNameEscaped) {
  LogCapture log(lh::LogLevel::warning);
  lh::test::RedisServer server;
  Fleet fleet(server);
  fleet.add();
  std::optional<lh::error_code> result;
  const std::string hostile = "ghost\nelector x: forged line\x1b[31m";
  fleet.at(0).step_down(hostile, [&](lh::error_code ec) { result = ec; });
  ASSERT_TRUE(run_until(fleet.io, [&] { return result.has_value(); }));
  EXPECT_EQ(*result, lh::errc::invalid_argument);
  const auto lines = log.matching({"step_down: group", "is not registered"});
  ASSERT_EQ(lines.size(), 1u) << log.dump();
  EXPECT_NE(lines[0].second.find("\"ghost\\x0aelector x: forged line\\x1b[31m\""), std::string::npos) << lines[0].second;
  EXPECT_EQ(lines[0].second.find('\n'), std::string::npos);
  EXPECT_EQ(lines[0].second.find('\x1b'), std::string::npos);
}

TEST(Logging, AnOutageIsLoggedOnceAtWarningAndItsEndOnceWithoutThePassword) {
  LogCapture log(lh::LogLevel::warning);  // the default threshold shows both ends
  lh::test::RedisServer server(with_password());
  auto redis = lh::RedisOptions::from_url(server.url());
  redis.reconnect_min = 20ms;  // many retries during the outage, one log line
  redis.reconnect_max = 80ms;
  Fleet fleet(redis);
  auto& e = fleet.add(fast_options("solo"));
  ASSERT_TRUE(run_until(fleet.io, [&] { return e.is_leader(); }));

  server.kill();
  ASSERT_TRUE(run_until(fleet.io, [&] { return !e.is_leader(); }, 3s));
  lh::test::run_for(fleet.io, 1s);
  server.restart();
  ASSERT_TRUE(run_until(fleet.io, [&] { return e.is_leader(); }, 5s));
  lh::test::run_for(fleet.io, 200ms);

  EXPECT_EQ(log.count({"elector solo:", "lost the connection to Redis"}), 1u) << log.dump();
  EXPECT_EQ(log.count({"elector solo:", "reconnected to Redis", "ms; campaigning again"}), 1u) << log.dump();
  EXPECT_EQ(log.count({"elector solo:", "release notices unavailable"}), 1u) << log.dump();
  EXPECT_EQ(log.count({"elector solo:", "release notices available again"}), 1u) << log.dump();
  EXPECT_EQ(log.count({"elector solo:", "group \"default\"", "no longer leader", "connection_lost"}), 1u)
      << log.dump();
  EXPECT_EQ(log.count({password}), 0u) << "password leaked:\n" << log.dump();
  EXPECT_GE(log.count({"***"}), 1u) << "the endpoint is named, password masked:\n" << log.dump();

  std::size_t connection_errors = 0;
  for (const auto& ev : fleet.events(0).errors) {
    if (ev.group.empty()) ++connection_errors;
    EXPECT_EQ(ev.error.message().find(password), std::string::npos) << ev.error.message();
  }
  EXPECT_EQ(connection_errors, 1u) << "one error event per outage, not per retry";
}

TEST(Logging, ARedisErrorIsLoggedOnceUntilItClearsAndAWrongPasswordNeverShows) {
  LogCapture log(lh::LogLevel::warning);
  lh::test::RedisServer server(with_password());
  auto admin = server.admin();
  admin.call({"HSET", "leader:default", "field", "value"});
  Fleet fleet(lh::RedisOptions::from_url(server.url()));
  auto& e = fleet.add(fast_options("typed"));
  // retry_interval is 300 ms: several failed attempts in 1.5 s.
  lh::test::run_for(fleet.io, 1500ms);
  EXPECT_FALSE(e.is_leader());
  EXPECT_EQ(log.count({"elector typed:", "group \"default\"", "acquire failed", "WRONGTYPE"}), 1u) << log.dump();
  EXPECT_EQ(e.health().failing_groups, 1u);
  admin.call({"DEL", "leader:default"});
  ASSERT_TRUE(run_until(fleet.io, [&] { return e.is_leader(); }, 3s));
  EXPECT_EQ(log.count({"elector typed:", "group \"default\"", "acquire works again", "WRONGTYPE"}), 1u)
      << log.dump();
  EXPECT_EQ(e.health().failing_groups, 0u);

  // A wrong password: the error names the user, never the password tried.
  auto wrong = lh::RedisOptions::from_url(server.url());
  const std::string bad = "Not-the-password-5521";
  wrong.password = bad;
  fleet.add(fast_options("wrongpw"), wrong);
  ASSERT_TRUE(run_until(fleet.io, [&] { return fleet.events(1).has_error(lh::errc::auth_failed); }, 3s));
  EXPECT_EQ(log.count({"elector wrongpw:", "cannot connect to Redis"}), 1u) << log.dump();
  EXPECT_EQ(log.count({bad}), 0u) << log.dump();
  EXPECT_EQ(log.count({password}), 0u) << log.dump();
}

TEST(Metrics, CountElectionsRenewalsDemotionsAndReconnects) {
  lh::test::RedisServer server;
  auto redis = server.options();
  redis.reconnect_min = 20ms;
  Fleet fleet(redis);
  fleet.add(fast_options("m-one"));
  fleet.add(fast_options("m-two"));
  auto first = fleet.wait_single_leader();
  ASSERT_TRUE(first);
  const std::size_t other = 1 - *first;
  lh::test::run_for(fleet.io, 1200ms);  // heartbeat 500 ms: at least two renewals

  bool stepped = false;
  fleet.at(*first).step_down("default", [&](lh::error_code) { stepped = true; });
  ASSERT_TRUE(run_until(fleet.io, [&] { return stepped && fleet.at(other).is_leader(); }, 3s));

  const lh::Metrics a = fleet.metrics(*first);
  const lh::Metrics b = fleet.metrics(other);
  EXPECT_EQ(a.instance, fleet.at(*first).instance_id());
  ASSERT_EQ(a.groups.size(), 1u);
  const auto& ga = a.groups[0];
  EXPECT_EQ(ga.group, "default");
  EXPECT_FALSE(ga.leader);
  EXPECT_EQ(ga.terms_won, 1u);
  EXPECT_GE(ga.renewals_ok, 2u);
  EXPECT_EQ(ga.renewals_failed, 0u);
  EXPECT_GE(ga.acquire_attempts, 1u);
  EXPECT_EQ(ga.demotions_for(lh::RevokeReason::stepped_down), 1u);
  EXPECT_GE(ga.time_as_leader, 1000ms);
  EXPECT_GT(ga.token, 0);
  const auto& gb = b.groups.at(0);
  EXPECT_TRUE(gb.leader);
  EXPECT_EQ(gb.terms_won, 1u);
  EXPECT_GT(gb.token, ga.token);
  EXPECT_GE(gb.acquire_attempts, 2u) << "lost at first, won after the release notice";

  EXPECT_TRUE(a.commands.connected);
  EXPECT_TRUE(a.subscriber.connected);
  EXPECT_EQ(a.commands.reconnects, 0u);
  // Every lease script had a round trip (health-check PINGs may add more).
  EXPECT_GE(a.commands.round_trip.count(), ga.acquire_attempts + ga.renewals_ok + 1);
  EXPECT_GE(a.commands.commands_sent, a.commands.round_trip.count());
  ASSERT_TRUE(a.commands.last_reply_age);
  EXPECT_LT(*a.commands.last_reply_age, 1500ms);

  // Redis goes away and comes back: one reconnect, one connection demotion.
  server.kill();
  ASSERT_TRUE(run_until(fleet.io, [&] { return fleet.leaders().empty(); }, 3s));
  server.restart();
  ASSERT_TRUE(fleet.wait_single_leader());
  ASSERT_TRUE(run_until(fleet.io, [&] {
    return fleet.metrics(0).subscriber.connected && fleet.metrics(1).subscriber.connected;
  }, 3s));
  const lh::Metrics b2 = fleet.metrics(other);
  EXPECT_EQ(b2.commands.reconnects, 1u);
  EXPECT_EQ(b2.subscriber.reconnects, 1u);
  EXPECT_EQ(b2.groups.at(0).demotions_for(lh::RevokeReason::connection_lost), 1u);

  const std::vector<lh::Metrics> both{fleet.metrics(0), fleet.metrics(1)};
  const std::string text = lh::to_prometheus(both);
  lh::test::prometheus::Exposition exposition;
  ASSERT_NO_THROW(exposition = lh::test::prometheus::parse(text)) << text;
  const double leaders = *exposition.value("leasehold_is_leader", {{"instance", "m-one"}}) +
                         *exposition.value("leasehold_is_leader", {{"instance", "m-two"}});
  EXPECT_EQ(leaders, 1);
}

TEST(Health, StandaloneElectorIsLiveAndReadyAndSaysWhyWhenNot) {
  lh::test::RedisServer server;
  auto options = fast_options("probe");  // ttl 1.5 s: loop limit 1.5 s, pulse 150 ms
  lh::Elector e(server.options(), options);

  auto h = e.health();
  EXPECT_FALSE(h.started);
  EXPECT_TRUE(h.live);
  EXPECT_FALSE(h.ready);
  EXPECT_EQ(h.reason, "not started");
  EXPECT_EQ(h.max_loop_age, 1500ms);
  EXPECT_EQ(h.max_reply_age, 2000ms) << "health_check_interval + command_timeout beats ttl / 2";
  const lh::Metrics before = e.metrics();  // blocking form, standalone
  ASSERT_EQ(before.groups.size(), 1u);
  EXPECT_EQ(before.groups[0].acquire_attempts, 0u);

  e.start();
  const auto wait = [](auto done, std::chrono::milliseconds bound) {
    const auto deadline = std::chrono::steady_clock::now() + bound;
    while (!done() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
    return done();
  };
  ASSERT_TRUE(wait([&] { return e.is_leader() && e.health().ready; }, 5s)) << e.health().reason;
  h = e.health();
  EXPECT_TRUE(h.live);
  EXPECT_TRUE(h.connected);
  EXPECT_TRUE(h.reason.empty());
  ASSERT_TRUE(h.last_reply_age);
  EXPECT_LT(*h.last_reply_age, h.max_reply_age);
  EXPECT_LT(h.loop_age, 500ms);
  EXPECT_LT(h.heartbeat_lag, 200ms);
  EXPECT_TRUE(e.metrics().groups.at(0).leader);

  // Stall the elector's own thread for longer than a ttl: the renewal falls
  // late, then the probe reports the loop as not live, without waiting on it.
  std::atomic<bool> release{false};
  boost::asio::post(e.get_executor(), [&] {
    while (!release.load()) std::this_thread::sleep_for(1ms);
  });
  lh::Health::Duration worst_lag{};
  bool went_dead = false;
  const auto stall_start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - stall_start < 2200ms) {
    const auto probe = e.health();
    worst_lag = std::max(worst_lag, probe.heartbeat_lag);
    if (!probe.live) {
      went_dead = true;
      EXPECT_FALSE(probe.ready);
      EXPECT_NE(probe.reason.find("event loop stalled"), std::string::npos) << probe.reason;
    }
    std::this_thread::sleep_for(20ms);
  }
  release = true;
  EXPECT_TRUE(went_dead);
  EXPECT_GT(worst_lag, 300ms) << "the renewal due 500 ms after the last one never left";
  ASSERT_TRUE(wait([&] { return e.health().ready && e.is_leader(); }, 5s)) << e.health().reason;

  // Redis stops answering: not ready (no reply, then no connection), live.
  server.pause();
  ASSERT_TRUE(wait([&] { return !e.health().ready; }, 5s));
  h = e.health();
  EXPECT_TRUE(h.live);
  EXPECT_FALSE(h.reason.empty());
  server.resume();
  ASSERT_TRUE(wait([&] { return e.health().ready && e.is_leader(); }, 5s)) << e.health().reason;

  e.stop_and_wait();
  h = e.health();
  EXPECT_TRUE(h.stopped);
  EXPECT_TRUE(h.live);
  EXPECT_FALSE(h.ready);
  EXPECT_EQ(h.reason, "stopped");
  EXPECT_FALSE(h.connected);
  const lh::Metrics after = e.metrics();
  EXPECT_EQ(after.groups.at(0).demotions_for(lh::RevokeReason::stopped), 1u);
}

}  // namespace
}  // namespace integration_observability_test
