// Runs the prometheus_exposer example as a process against a harness Redis,
// scrapes prometheus-cpp's Exposer over HTTP and parses the exposition
// strictly: leasehold's families next to the service's own, then a graceful
// SIGTERM that releases the lease.

#include "../example_test_util.hpp"
#include "support/http_get.hpp"
#include "support/prometheus_text.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <csignal>

namespace prom = leasehold::test::prometheus;
using namespace std::chrono_literals;

TEST(PrometheusExposer, ServesLeaseholdFamiliesBesideItsRegistryAndReleasesOnSigterm) {
  leasehold::test::RedisServer redis;
  auto process = example_test::start(redis, "prometheus_exposer",
                                     {"--url", redis.url(), "--listen", "127.0.0.1:0", "--id", "exposed"});
  const std::uint16_t port = example_test::listening_port(process);

  leasehold::test::HttpReply scrape;
  prom::Exposition exposition;
  const bool leads = example_test::wait_for([&] {
    scrape = leasehold::test::http_get(port, "/metrics");
    if (scrape.status != 200) return false;
    exposition = prom::parse(scrape.body);  // throws, failing the test, on any violation
    return exposition.value("leasehold_is_leader", {{"group", "default"}, {"instance", "exposed"}}) == 1.0;
  }, 10s);
  ASSERT_TRUE(leads) << scrape.status << "\n" << scrape.body << "\n" << example_test::dump(process);
  EXPECT_NE(scrape.body.find("leasehold_is_leader{group=\"default\",instance=\"exposed\"} 1\n"), std::string::npos)
      << scrape.body;
  ASSERT_NE(exposition.family("prometheus_exposer_start_time_seconds"), nullptr) << "the service's own registry";
  const auto* histogram = exposition.family("leasehold_redis_command_duration_seconds");
  ASSERT_NE(histogram, nullptr);
  EXPECT_EQ(histogram->type, "histogram");
  EXPECT_GE(exposition.value("leasehold_redis_command_duration_seconds_count", {{"connection", "commands"}}), 1.0);
  EXPECT_EQ(example_test::events(process, "event elected").size(), 1u) << example_test::dump(process);

  ASSERT_TRUE(process.signal(SIGTERM));
  const auto status = process.wait_exit(5s);
  ASSERT_TRUE(status) << "still running after SIGTERM\n" << example_test::dump(process);
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << leasehold::test::describe_wait_status(*status);
  EXPECT_FALSE(redis.admin().get("prometheus-exposer:leader:default")) << "released on stop";
}
