// leasehold::prometheus against real redis-server processes: electors'
// metrics scraped over HTTP through prometheus-cpp's Exposer agree with the
// text exposition (families, help, types, labels, buckets, values), and a
// scrape of an elector whose executor is blocked stays bounded and truthful.
// Built only with the component (prometheus-cpp found).

#include <leasehold/leasehold.hpp>
#include <leasehold/prometheus/elector_collectable.hpp>

#include "support/elector_fixture.hpp"
#include "support/http_get.hpp"
#include "support/io_helpers.hpp"
#include "support/log_capture.hpp"
#include "support/prometheus_text.hpp"
#include "support/redis_server.hpp"

#include <prometheus/exposer.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

namespace integration_prometheus_collectable_test {
namespace {

namespace lh = leasehold;
namespace prom = lh::test::prometheus;
using lh::test::eventually;
using lh::test::fast_options;
using namespace std::chrono_literals;

lh::ElectorOptions options(std::string id) {
  auto o = fast_options(std::move(id));
  o.key_prefix = "prom-test:leader:";
  o.groups = {"reports"};
  return o;
}

/// An Exposer on a free loopback port serving one collectable.
class Exposed {
 public:
  explicit Exposed(std::shared_ptr<prometheus::Collectable> c)
      : collectable_(std::move(c)), exposer_("127.0.0.1:0", 1) {
    exposer_.RegisterCollectable(collectable_);
  }
  prom::Exposition scrape(std::string* body = nullptr) {
    const auto reply = lh::test::http_get(static_cast<std::uint16_t>(exposer_.GetListeningPorts().at(0)), "/metrics");
    EXPECT_EQ(reply.status, 200u);
    if (body != nullptr) *body = reply.body;
    return prom::parse(reply.body);  // strict: throws, failing the test, on any violation
  }

 private:
  std::shared_ptr<prometheus::Collectable> collectable_;
  prometheus::Exposer exposer_;
};

// leasehold's families only: the exposer adds its own (exposer_*).
std::vector<prom::Family> leasehold_families(const prom::Exposition& e) {
  std::vector<prom::Family> out;
  for (const auto& f : e.families) {
    if (f.name.starts_with("leasehold_")) out.push_back(f);
  }
  return out;
}

// Label sets of a family's samples, without values.
std::set<prom::Labels> label_sets(const prom::Family& f) {
  std::set<prom::Labels> out;
  for (const auto& s : f.samples) {
    auto labels = s.labels;
    labels["__name__"] = s.name;
    out.insert(labels);
  }
  return out;
}

TEST(PrometheusCollectable, ScrapeThroughTheExposerAgreesWithTheTextExposition) {
  lh::test::RedisServer server;
  lh::Elector a(server.options(), options("prom-a"));  // standalone: each owns its thread
  lh::Elector b(server.options(), options("prom-b"));
  a.start();
  b.start();
  ASSERT_TRUE(eventually([&] {
    return a.is_leader() != b.is_leader() && a.is_leader("reports") != b.is_leader("reports");
  }, 10s));
  lh::Elector& leader = a.is_leader() ? a : b;

  std::vector<lh::Elector*> both{&a, &b};
  Exposed exposed(std::make_shared<lh::prometheus::ElectorCollectable>(both));
  std::string body;
  const prom::Exposition scraped = exposed.scrape(&body);
  const std::vector<lh::Metrics> snapshots{a.metrics(), b.metrics()};
  const prom::Exposition text = prom::parse(lh::to_prometheus(snapshots));

  // The same families in the same order, each declared once for both
  // electors, with the same help, type and series.
  const auto ours = leasehold_families(scraped);
  ASSERT_EQ(ours.size(), text.families.size()) << body;
  for (std::size_t i = 0; i < text.families.size(); ++i) {
    const auto& want = text.families[i];
    const auto& got = ours[i];
    EXPECT_EQ(got.name, want.name);
    EXPECT_EQ(got.type, want.type) << want.name;
    EXPECT_EQ(got.help, want.help) << want.name;
    EXPECT_EQ(label_sets(got), label_sets(want)) << want.name;
  }
  // Values that cannot move between the two reads.
  const std::string expected_line =
      "leasehold_is_leader{group=\"default\",instance=\"" + leader.instance_id() + "\"} 1\n";
  EXPECT_NE(body.find(expected_line), std::string::npos) << body;
  for (const char* group : {"default", "reports"}) {
    for (const lh::Elector* e : {&a, &b}) {
      const prom::Labels labels{{"group", group}, {"instance", e->instance_id()}};
      EXPECT_EQ(scraped.value("leasehold_is_leader", labels), e->is_leader(group) ? 1.0 : 0.0) << group;
      EXPECT_EQ(scraped.value("leasehold_fencing_token", labels), text.value("leasehold_fencing_token", labels));
      EXPECT_EQ(scraped.value("leasehold_terms_won_total", labels), text.value("leasehold_terms_won_total", labels));
    }
  }
  EXPECT_EQ(scraped.value("leasehold_redis_connected", {{"instance", "prom-a"}, {"connection", "subscriber"}}), 1.0);
  EXPECT_GE(scraped.value("leasehold_redis_command_duration_seconds_count",
                          {{"instance", "prom-b"}, {"connection", "commands"}}),
            1.0);
  a.stop_and_wait();
  b.stop_and_wait();
}

TEST(PrometheusCollectable, BlockedExecutorGivesABoundedScrapeWithOnlyTheLockFreeFamilies) {
  lh::test::LogCapture log(lh::LogLevel::info);
  lh::test::RedisServer server;
  boost::asio::io_context io;
  auto work = boost::asio::make_work_guard(io);
  std::thread runner([&] { io.run(); });
  lh::Elector elector(io.get_executor(), server.options(), options("prom-stalled"));
  elector.start();
  ASSERT_TRUE(eventually([&] { return elector.is_leader(); }, 10s));

  lh::prometheus::CollectableOptions collect;
  collect.timeout = 200ms;
  Exposed exposed(std::make_shared<lh::prometheus::ElectorCollectable>(elector, collect));
  ASSERT_GE(exposed.scrape().value("leasehold_terms_won_total", {{"group", "default"}}), 1.0);

  std::atomic<bool> release{false};
  boost::asio::post(io, [&] {
    while (!release.load()) std::this_thread::sleep_for(1ms);
  });
  const auto families_with_samples = [](const prom::Exposition& e) {
    std::set<std::string> out;
    for (const auto& f : leasehold_families(e)) {
      if (!f.samples.empty()) out.insert(f.name);
    }
    return out;
  };
  const std::set<std::string> lock_free{"leasehold_is_leader", "leasehold_redis_connected"};
  for (int i = 0; i < 2; ++i) {  // the second reuses the first's request
    const auto started = std::chrono::steady_clock::now();
    const prom::Exposition stalled = exposed.scrape();
    EXPECT_LT(std::chrono::steady_clock::now() - started, 1s) << "bounded by the 200 ms timeout";
    EXPECT_EQ(families_with_samples(stalled), lock_free);
    EXPECT_EQ(stalled.value("leasehold_redis_connected", {{"connection", "commands"}}), 1.0);
    EXPECT_EQ(leasehold_families(stalled).size(), lh::metric_families({}).size()) << "every family still declared";
  }
  // Past the lease's local deadline (ttl 1.5 s) the blocked elector no
  // longer leads, and the scrape says so without waiting for it.
  std::this_thread::sleep_for(1600ms);
  EXPECT_EQ(exposed.scrape().value("leasehold_is_leader", {{"group", "default"}}), 0.0);
  EXPECT_EQ(log.count({"elector prom-stalled:", "metrics scrape waited 200 ms"}), 1u) << log.dump();

  release = true;
  EXPECT_TRUE(eventually([&] {
    const auto e = exposed.scrape();
    return e.value("leasehold_terms_won_total", {{"group", "default"}}).has_value() &&
           e.value("leasehold_is_leader", {{"group", "default"}}) == 1.0;
  }, 5s)) << "full scrapes once the executor runs again, and leadership back";
  EXPECT_EQ(log.count({"elector prom-stalled:", "answered again"}), 1u) << log.dump();

  elector.stop_and_wait();
  work.reset();
  runner.join();
}

}  // namespace
}  // namespace integration_prometheus_collectable_test
