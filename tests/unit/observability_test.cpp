// Metrics rendering, the latency histogram, the health verdict and the
// classification of ACL refusals: pure logic, no Redis.

#include <leasehold/error.hpp>
#include <leasehold/health.hpp>
#include <leasehold/metrics.hpp>

#include "../support/prometheus_text.hpp"

#include <gtest/gtest.h>

namespace unit_observability_test {
namespace {

namespace lh = leasehold;
namespace prom = lh::test::prometheus;
using namespace std::chrono_literals;

lh::Metrics sample_metrics(std::string instance, std::string group) {
  lh::Metrics m;
  m.instance = std::move(instance);
  lh::GroupMetrics g;
  g.group = std::move(group);
  g.leader = true;
  g.token = 42;
  g.terms_won = 3;
  g.acquire_attempts = 9;
  g.acquire_errors = 1;
  g.renewals_ok = 100;
  g.renewals_failed = 2;
  g.demotions[static_cast<std::size_t>(lh::RevokeReason::timeout)] = 1;
  g.demotions[static_cast<std::size_t>(lh::RevokeReason::stepped_down)] = 1;
  g.time_as_leader = 1500ms;
  g.heartbeat_lag = 3ms;
  m.groups.push_back(g);
  m.commands.name = "commands";
  m.commands.connected = true;
  m.commands.connects = 2;
  m.commands.reconnects = 1;
  m.commands.commands_sent = 120;
  m.commands.round_trip.record(50us);    // first bucket
  m.commands.round_trip.record(100us);   // le is inclusive: still the first
  m.commands.round_trip.record(3ms);     // le 0.005
  m.commands.round_trip.record(20s);     // +Inf only
  m.commands.last_reply_age = 250ms;
  m.subscriber.name = "subscriber";
  return m;
}

TEST(LatencyHistogram, BucketsAreInclusiveAndCumulativeEndsAtCount) {
  lh::LatencyHistogram h;
  h.record(100us);
  h.record(101us);
  h.record(10s);
  h.record(11s);
  EXPECT_EQ(h.count(), 4u);
  EXPECT_EQ(h.bucket(0), 1u);
  EXPECT_EQ(h.bucket(1), 1u);
  EXPECT_EQ(h.bucket(lh::LatencyHistogram::bounds.size() - 1), 1u);
  EXPECT_EQ(h.bucket(lh::LatencyHistogram::bounds.size()), 1u) << "above the last bound: +Inf";
  EXPECT_EQ(h.cumulative(lh::LatencyHistogram::bounds.size()), h.count());
  EXPECT_EQ(h.sum(), 100us + 101us + 10s + 11s);
  for (std::size_t i = 1; i < lh::LatencyHistogram::bounds.size(); ++i) {
    EXPECT_LT(lh::LatencyHistogram::bounds[i - 1], lh::LatencyHistogram::bounds[i]);
  }
}

TEST(Prometheus, RenderingParsesStrictlyWithEveryFamilyOnceForSeveralElectors) {
  // A group name that needs escaping, and two electors in one exposition.
  const std::vector<lh::Metrics> electors{sample_metrics("host-a-1", "re\"po\\rts"),
                                          sample_metrics("host-b-2", "default")};
  const std::string text = lh::to_prometheus(electors);
  prom::Exposition e;
  ASSERT_NO_THROW(e = prom::parse(text)) << text;

  for (const auto& f : e.families) {
    EXPECT_TRUE(f.name.starts_with("leasehold_")) << f.name;
    EXPECT_FALSE(f.help.empty()) << f.name;
    for (const auto& s : f.samples) {
      EXPECT_EQ(s.labels.count("instance"), 1u) << s.name;
      EXPECT_TRUE(s.labels.count("group") + s.labels.count("connection") == 1) << s.name;
    }
  }
  const prom::Labels a{{"instance", "host-a-1"}, {"group", "re\"po\\rts"}};
  EXPECT_EQ(e.value("leasehold_is_leader", a), 1);
  EXPECT_EQ(e.value("leasehold_fencing_token", a), 42);
  EXPECT_EQ(e.value("leasehold_terms_won_total", a), 3);
  EXPECT_EQ(e.value("leasehold_acquire_attempts_total", a), 9);
  EXPECT_EQ(e.value("leasehold_acquire_errors_total", a), 1);
  auto ok = a;
  ok["result"] = "ok";
  EXPECT_EQ(e.value("leasehold_renewals_total", ok), 100);
  auto failed = a;
  failed["result"] = "failed";
  EXPECT_EQ(e.value("leasehold_renewals_total", failed), 2);
  for (std::size_t i = 0; i < lh::revoke_reason_count; ++i) {
    auto labels = a;
    labels["reason"] = std::string(lh::to_string(static_cast<lh::RevokeReason>(i)));
    EXPECT_TRUE(e.value("leasehold_demotions_total", labels).has_value()) << labels["reason"];
  }
  auto timeout = a;
  timeout["reason"] = "timeout";
  EXPECT_EQ(e.value("leasehold_demotions_total", timeout), 1);
  EXPECT_DOUBLE_EQ(*e.value("leasehold_leader_seconds_total", a), 1.5);
  EXPECT_DOUBLE_EQ(*e.value("leasehold_heartbeat_lag_seconds", a), 0.003);

  const prom::Labels commands{{"instance", "host-b-2"}, {"connection", "commands"}};
  EXPECT_EQ(e.value("leasehold_redis_connected", commands), 1);
  EXPECT_EQ(e.value("leasehold_redis_reconnects_total", commands), 1);
  EXPECT_EQ(e.value("leasehold_redis_commands_total", commands), 120);
  EXPECT_DOUBLE_EQ(*e.value("leasehold_redis_last_reply_age_seconds", commands), 0.25);
  EXPECT_EQ(e.value("leasehold_redis_command_duration_seconds_count", commands), 4);
  auto first = commands;
  first["le"] = "0.0001";
  EXPECT_EQ(e.value("leasehold_redis_command_duration_seconds_bucket", first), 2);
  auto five_ms = commands;
  five_ms["le"] = "0.005";
  EXPECT_EQ(e.value("leasehold_redis_command_duration_seconds_bucket", five_ms), 3);
  auto inf = commands;
  inf["le"] = "+Inf";
  EXPECT_EQ(e.value("leasehold_redis_command_duration_seconds_bucket", inf), 4);
  // The histogram and reply age belong to the commands connection only.
  const prom::Labels subscriber{{"instance", "host-b-2"}, {"connection", "subscriber"}};
  EXPECT_FALSE(e.value("leasehold_redis_command_duration_seconds_count", subscriber));
  EXPECT_EQ(e.value("leasehold_redis_connected", subscriber), 0);
}

// A cluster's nodes: each connection metric once per node, with its
// address and role, beside the summed commands series.
TEST(Prometheus, ClusterNodesHaveTheirOwnSeriesNamingNodeAndRole) {
  lh::Metrics m = sample_metrics("host-c-3", "default");
  lh::ConnectionMetrics up;
  up.name = "node";
  up.node = "10.0.0.5:6379";
  up.role = "master";
  up.connected = true;
  up.last_reply_age = 100ms;
  lh::ConnectionMetrics down = up;
  down.node = "10.0.0.6:6379";
  down.connected = false;
  down.last_reply_age.reset();
  m.nodes = {up, down};
  m.commands.slot_map_failures = 2;
  const std::string text = lh::to_prometheus(m);
  prom::Exposition e;
  ASSERT_NO_THROW(e = prom::parse(text)) << text;
  const prom::Labels first{{"instance", "host-c-3"}, {"connection", "node"}, {"node", "10.0.0.5:6379"},
                           {"role", "master"}};
  const prom::Labels second{{"instance", "host-c-3"}, {"connection", "node"}, {"node", "10.0.0.6:6379"},
                            {"role", "master"}};
  EXPECT_EQ(e.value("leasehold_redis_connected", first), 1);
  EXPECT_EQ(e.value("leasehold_redis_connected", second), 0);
  EXPECT_DOUBLE_EQ(*e.value("leasehold_redis_last_reply_age_seconds", first), 0.1);
  EXPECT_FALSE(e.value("leasehold_redis_last_reply_age_seconds", second));
  const prom::Labels commands{{"instance", "host-c-3"}, {"connection", "commands"}};
  EXPECT_EQ(e.value("leasehold_redis_slot_map_failures_total", commands), 2);
}

TEST(Prometheus, StrictParserRejectsWhatAScraperCouldMisread) {
  const auto rejects = [](const std::string& text) {
    EXPECT_THROW(prom::parse(text), std::runtime_error) << text;
  };
  const std::string h = "# HELP x_seconds h\n# TYPE x_seconds histogram\n";
  EXPECT_NO_THROW(prom::parse(h + "x_seconds_bucket{le=\"1\"} 1\nx_seconds_bucket{le=\"+Inf\"} 2\n"
                                  "x_seconds_sum 3\nx_seconds_count 2\n"));
  rejects(h + "x_seconds_bucket{le=\"1\"} 3\nx_seconds_bucket{le=\"+Inf\"} 2\nx_seconds_sum 3\nx_seconds_count 2\n");
  rejects(h + "x_seconds_bucket{le=\"1\"} 1\nx_seconds_sum 3\nx_seconds_count 1\n");
  rejects(h + "x_seconds_bucket{le=\"1\"} 1\nx_seconds_bucket{le=\"+Inf\"} 2\nx_seconds_sum 3\nx_seconds_count 3\n");
  rejects(h + "x_seconds_bucket{le=\"+Inf\"} 2\nx_seconds_count 2\n");
  rejects("y 1\n");                                           // no TYPE
  rejects("# HELP y h\n# TYPE y gauge\nz 1\n");               // sample of another family
  rejects("# HELP y h\n# TYPE y gauge\ny{a=\"1\"} 1\ny{a=\"1\"} 2\n");  // duplicate series
  rejects("# HELP y h\n# TYPE y gauge\ny{a=1} 1\n");          // unquoted label value
  rejects("# HELP y h\n# TYPE y gauge\ny{a=\"\\t\"} 1\n");    // bad escape
  rejects("# HELP y h\n# TYPE y gauge\ny one\n");             // bad value
  rejects("# HELP y h\n# TYPE y counter\ny -1\n");            // negative counter
  rejects("# HELP y h\n# TYPE y gauge\n# TYPE y gauge\n");    // declared twice
  rejects("# HELP y h\n# TYPE y gauge\ny 1");                 // no final line feed
  rejects("# HELP y h\n# TYPE y gauge\n\ny 1\n");             // blank line
}

TEST(Health, VerdictFollowsTheDocumentedChecksInOrder) {
  lh::Health h;
  h.max_loop_age = 5s;
  h.max_reply_age = 2500ms;
  h.evaluate();
  EXPECT_TRUE(h.live) << "not started is not a failure";
  EXPECT_FALSE(h.ready);
  EXPECT_EQ(h.reason, "not started");

  h.started = true;
  h.loop_age = 100ms;
  h.evaluate();
  EXPECT_TRUE(h.live);
  EXPECT_FALSE(h.ready);
  EXPECT_EQ(h.reason, "not connected to Redis");

  h.connected = true;
  h.evaluate();
  EXPECT_EQ(h.reason, "no reply from Redis yet");

  h.last_reply_age = 2600ms;
  h.evaluate();
  EXPECT_FALSE(h.ready);
  EXPECT_NE(h.reason.find("2600 ms"), std::string::npos) << h.reason;

  h.last_reply_age = 2500ms;  // the limit itself is still fine
  h.evaluate();
  EXPECT_TRUE(h.ready) << h.reason;
  EXPECT_TRUE(h.reason.empty());

  h.failing_groups = 1;
  h.evaluate();
  EXPECT_FALSE(h.ready);
  h.failing_groups = 0;

  h.loop_age = 6s;
  h.evaluate();
  EXPECT_FALSE(h.live);
  EXPECT_FALSE(h.ready);
  EXPECT_NE(h.reason.find("stalled"), std::string::npos) << h.reason;

  h.stopped = true;
  h.evaluate();
  EXPECT_TRUE(h.live) << "a stopped elector has no loop to watch";
  EXPECT_FALSE(h.ready);
  EXPECT_EQ(h.reason, "stopped");
}

TEST(Errors, AclRefusalsInsideScriptsAreNoPermission) {
  // Redis 7.0 words a refusal met inside a script without the NOPERM code.
  EXPECT_EQ(lh::classify_server_error("ERR The user executing the script can't run this command or subcommand "
                                      "script: 6163, on @user_script:1."),
            lh::errc::no_permission);
  EXPECT_EQ(lh::classify_server_error("ERR The user executing the script can't access at least one of the keys "
                                      "mentioned in the command arguments script: 3048, on @user_script:1."),
            lh::errc::no_permission);
  EXPECT_EQ(lh::classify_server_error("NOPERM this user has no permissions to access one of the channels used "
                                      "as arguments"),
            lh::errc::no_permission);
  EXPECT_EQ(lh::classify_server_error("ERR unknown command"), lh::errc::server_error);
}

}  // namespace
}  // namespace unit_observability_test
