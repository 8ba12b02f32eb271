// Runs the metrics_server example as a process against a harness Redis,
// scrapes /metrics over HTTP and parses it strictly, and checks the health
// probes through an outage and a graceful SIGTERM.

#include "../example_test_util.hpp"
#include "support/http_get.hpp"
#include "support/io_helpers.hpp"
#include "support/prometheus_text.hpp"
#include "support/process.hpp"
#include "support/redis_server.hpp"


#include <gtest/gtest.h>

#include <sys/wait.h>

#include <csignal>
#include <fstream>
#include <sstream>
#include <thread>

namespace prom = leasehold::test::prometheus;
using leasehold::test::HttpReply;
using leasehold::test::eventually;
using leasehold::test::http_get;
using namespace std::chrono_literals;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class MetricsServer {
 public:
  explicit MetricsServer(const leasehold::test::RedisServer& redis)
      : log_(redis.dir() + "/metrics_server.log"),
        process_({EXAMPLE_BINARY, "--url", redis.url(), "--listen", "127.0.0.1:0", "--id", "scrape-me",
                  "--ttl", "1500", "--group", "reports"},
                 log_),
        port_(example_test::listening_port(process_)) {}

  std::uint16_t port() const { return port_; }
  leasehold::test::Process& process() { return process_; }
  std::string log() const { return read_file(log_); }

 private:
  std::string log_;
  leasehold::test::Process process_;
  std::uint16_t port_ = 0;
};

}  // namespace

TEST(MetricsServer, ServesAStrictExpositionAndHealthProbesAndReleasesOnSigterm) {
  leasehold::test::RedisServerOptions options;
  options.password = "Scrape-pw-7731";
  leasehold::test::RedisServer redis(options);
  MetricsServer server(redis);

  // Scrape until both groups are led (one instance: it wins both).
  HttpReply scrape;
  prom::Exposition exposition;
  const bool leads = eventually([&] {
    scrape = http_get(server.port(), "/metrics");
    if (scrape.status != 200) return false;
    exposition = prom::parse(scrape.body);  // throws, failing the test, on any violation
    return exposition.value("leasehold_is_leader", {{"group", "default"}}) == 1.0 &&
           exposition.value("leasehold_is_leader", {{"group", "reports"}}) == 1.0;
  }, 10s);
  ASSERT_TRUE(leads) << scrape.status << "\n" << scrape.body << "\n" << server.log();
  EXPECT_TRUE(scrape.content_type.starts_with("text/plain; version=0.0.4")) << scrape.content_type;
  EXPECT_EQ(scrape.body.find(options.password), std::string::npos);

  const std::vector<std::pair<std::string, std::string>> expected{
      {"leasehold_is_leader", "gauge"},
      {"leasehold_fencing_token", "gauge"},
      {"leasehold_terms_won_total", "counter"},
      {"leasehold_acquire_attempts_total", "counter"},
      {"leasehold_acquire_errors_total", "counter"},
      {"leasehold_renewals_total", "counter"},
      {"leasehold_drain_overruns_total", "counter"},
      {"leasehold_duplicate_instance_ids_total", "counter"},
      {"leasehold_demotions_total", "counter"},
      {"leasehold_leader_seconds_total", "counter"},
      {"leasehold_heartbeat_lag_seconds", "gauge"},
      {"leasehold_redis_connected", "gauge"},
      {"leasehold_redis_reconnects_total", "counter"},
      {"leasehold_redis_commands_total", "counter"},
      {"leasehold_redis_timeouts_total", "counter"},
      {"leasehold_redis_protocol_errors_total", "counter"},
      {"leasehold_redis_redirects_total", "counter"},
      {"leasehold_redis_cluster_retries_total", "counter"},
      {"leasehold_redis_slot_map_failures_total", "counter"},
      {"leasehold_redis_last_reply_age_seconds", "gauge"},
      {"leasehold_redis_command_duration_seconds", "histogram"},
  };
  for (const auto& [name, type] : expected) {
    const auto* family = exposition.family(name);
    ASSERT_NE(family, nullptr) << name;
    EXPECT_EQ(family->type, type) << name;
    EXPECT_FALSE(family->samples.empty()) << name;
    for (const auto& sample : family->samples) EXPECT_EQ(sample.labels.at("instance"), "scrape-me") << name;
  }
  EXPECT_EQ(exposition.families.size(), expected.size()) << "no undocumented family";
  EXPECT_GE(exposition.value("leasehold_terms_won_total", {{"group", "reports"}}), 1.0);
  EXPECT_GE(exposition.value("leasehold_redis_command_duration_seconds_count", {{"connection", "commands"}}), 2.0);
  EXPECT_EQ(exposition.value("leasehold_redis_connected", {{"connection", "subscriber"}}), 1.0);

  // Renewals show up in a later scrape (heartbeat 500 ms).
  EXPECT_TRUE(eventually([&] {
    const auto again = prom::parse(http_get(server.port(), "/metrics").body);
    return again.value("leasehold_renewals_total", {{"group", "default"}, {"result", "ok"}}) >= 1.0;
  }, 5s));

  auto live = http_get(server.port(), "/health/live");
  EXPECT_EQ(live.status, 200u) << live.body;
  EXPECT_EQ(live.body, "live\n");
  auto ready = http_get(server.port(), "/health/ready");
  EXPECT_EQ(ready.status, 200u) << ready.body;
  EXPECT_EQ(http_get(server.port(), "/nothing-here").status, 404u);

  // Redis stops answering: not ready (with the reason), still live, metrics
  // still served.
  redis.pause();
  EXPECT_TRUE(eventually([&] { return (ready = http_get(server.port(), "/health/ready")).status == 503; }, 5s))
      << ready.status << " " << ready.body;
  EXPECT_TRUE(ready.body.starts_with("not ready: ")) << ready.body;
  EXPECT_EQ(http_get(server.port(), "/health/live").status, 200u);
  EXPECT_EQ(http_get(server.port(), "/metrics").status, 200u);
  redis.resume();
  EXPECT_TRUE(eventually([&] { return http_get(server.port(), "/health/ready").status == 200; }, 5s));
  ASSERT_TRUE(eventually([&] {
    const auto e = prom::parse(http_get(server.port(), "/metrics").body);
    return e.value("leasehold_is_leader", {{"group", "default"}}) == 1.0;
  }, 5s));

  // SIGTERM: a graceful stop that releases the leases, exit status 0.
  ASSERT_TRUE(server.process().signal(SIGTERM));
  const auto status = server.process().wait_exit(5s);
  ASSERT_TRUE(status) << "still running after SIGTERM\n" << server.log();
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << leasehold::test::describe_wait_status(*status);
  auto admin = redis.admin();
  EXPECT_FALSE(admin.get("leader:default")) << "released on stop";
  EXPECT_FALSE(admin.get("leader:reports")) << "released on stop";
}

TEST(MetricsServer, HelpListsTheFlagsAndPrefixAndPriorityReachTheElector) {
  leasehold::test::RedisServer redis;

  auto help = example_test::start(redis, "help", {"--help"});
  const auto help_status = help.wait_exit(5s);
  ASSERT_TRUE(help_status) << "--help did not exit";
  EXPECT_TRUE(WIFEXITED(*help_status) && WEXITSTATUS(*help_status) == 0);
  const std::string usage = read_file(help.log_file());
  for (const char* flag : {"--url", "--listen", "--id", "--prefix", "--priority", "--ttl", "--group"}) {
    EXPECT_NE(usage.find(flag), std::string::npos) << flag << " missing from --help:\n" << usage;
  }

  auto unknown = example_test::start(redis, "unknown", {"--no-such-flag", "x"});
  const auto unknown_status = unknown.wait_exit(5s);
  ASSERT_TRUE(unknown_status);
  EXPECT_TRUE(WIFEXITED(*unknown_status) && WEXITSTATUS(*unknown_status) == 2);

  auto server = example_test::start(redis, "prefixed", {"--url", redis.url(), "--listen", "127.0.0.1:0", "--id",
                                                        "prefixed-1", "--ttl", "1500", "--prefix", "svc:leader:",
                                                        "--priority", "7", "--group", "reports"});
  auto admin = redis.admin();
  ASSERT_TRUE(eventually([&] { return admin.get("svc:leader:reports") == std::optional<std::string>("prefixed-1"); },
                         10s))
      << example_test::dump(server);
  EXPECT_EQ(admin.call({"HGET", "svc:leader:reports:holder", "priority"}).str, "7");
  EXPECT_FALSE(admin.get("leader:reports")) << "the default prefix is not used";

  ASSERT_TRUE(server.signal(SIGTERM));
  const auto status = server.wait_exit(5s);
  ASSERT_TRUE(status) << "still running after SIGTERM\n" << example_test::dump(server);
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << leasehold::test::describe_wait_status(*status);
  EXPECT_FALSE(admin.get("svc:leader:reports")) << "released on stop";
}
