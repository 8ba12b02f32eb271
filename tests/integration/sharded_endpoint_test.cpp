// A sharded service behind one endpoint (Azure Managed Redis, ElastiCache
// Serverless, a Redis Enterprise proxy), stood in for by a one-shard Redis
// Cluster reached through a plain redis:// URL: its node answers CROSSSLOT to
// a script whose keys are in different slots, as such services do. The
// plain layout must fail there with a message naming key_layout; the
// hash-tagged layout must elect, renew, step down and hand over.

#include "support/elector_fixture.hpp"
#include "support/io_helpers.hpp"
#include "support/log_capture.hpp"
#include "support/redis_server.hpp"

#include <leasehold/impl/lease/lease_scripts.hpp>  // src/: the renewal scripts

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace integration_sharded_endpoint_test {
namespace {

namespace lh = leasehold;
using lh::test::Fleet;
using lh::test::RedisServer;
using namespace std::chrono_literals;

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

// One cluster-mode node that owns every slot: a whole cluster in one shard.
RedisServer one_shard_cluster() {
  lh::test::RedisServerOptions options;
  options.cluster = true;
  RedisServer node(options);
  auto admin = node.admin();
  const auto added = admin.call({"CLUSTER", "ADDSLOTSRANGE", "0", "16383"});
  if (!added.is_status()) throw std::runtime_error("CLUSTER ADDSLOTSRANGE: " + lh::test::describe_reply(added));
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!contains(admin.call({"CLUSTER", "INFO"}).str, "cluster_state:ok")) {
    if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("the one-shard cluster never got ok");
    std::this_thread::sleep_for(20ms);
  }
  return node;
}

// The node's plain redis:// URL, with `query` (the server's URL has none).
std::string url_with(const RedisServer& node, std::string_view query) {
  std::string url = node.url();
  return url + (contains(url, "?") ? "&" : "?") + std::string(query);
}

// A ttl far above the time a release notice takes: a standby that leads
// within it was woken by the notice, not by the lease's expiry; and a
// retry_interval above that bound too, so polling cannot explain it either.
lh::ElectorOptions tagged_options(std::string id) {
  auto o = lh::test::fast_options(std::move(id));
  o.ttl = 10s;
  o.retry_interval = 4s;
  o.empty_restart_guard = false;  // a fresh server: no data to lose
  o.step_down_hold_off = 200ms;    // the stepped-down elector takes over again after the stop below
  o.groups = {"reports", "billing", "cleanup", "digest", "export"};  // several slots
  return o;
}

TEST(ShardedEndpoint, ThePlainLayoutFailsWithAMessageNamingKeyLayout) {
  const RedisServer node = one_shard_cluster();
  lh::test::LogCapture log(lh::LogLevel::warning);
  Fleet fleet(lh::RedisOptions::from_url(node.url()));
  auto options = lh::test::fast_options("plain");
  options.empty_restart_guard = false;
  fleet.add(options);

  ASSERT_TRUE(lh::test::run_until(fleet.io, [&] { return fleet.events(0).has_error(lh::errc::cross_slot); }, 10s))
      << log.dump();
  const auto& event = *fleet.events(0).first_error(lh::errc::cross_slot);
  EXPECT_EQ(event.group, "default");
  const std::string message = event.error.message();
  EXPECT_TRUE(contains(message, "set key_layout=hash_tagged (the URL's query option, or RedisOptions::key_layout)"))
      << message;
  EXPECT_TRUE(contains(message, "CROSSSLOT Keys in request don't hash to the same slot")) << message;
  EXPECT_EQ(log.count({"group \"default\": acquire failed: CROSSSLOT", "key_layout=hash_tagged"}), 1u) << log.dump();

  // Reported once, not per retry; nobody leads.
  lh::test::run_for(fleet.io, 1s);
  std::size_t cross_slot_events = 0;
  for (const auto& e : fleet.events(0).errors) cross_slot_events += e.error.code == lh::errc::cross_slot ? 1 : 0;
  EXPECT_EQ(cross_slot_events, 1u);
  EXPECT_FALSE(fleet.at(0).is_leader("default"));
  EXPECT_EQ(log.count({"acquire failed: CROSSSLOT"}), 1u) << log.dump();
}

TEST(ShardedEndpoint, TheHashTaggedLayoutLeadsStepsDownAndHandsOver) {
  const RedisServer node = one_shard_cluster();
  lh::test::LogCapture log(lh::LogLevel::warning);
  // One elector chooses the layout through the URL, the other in code. The
  // first leads every group before the second starts, so that its renewals
  // all fall due together: one batch of groups of several slots.
  Fleet fleet(lh::RedisOptions::from_url(url_with(node, "key_layout=hash_tagged")));
  fleet.add(tagged_options("alpha"));
  const std::vector<std::string> groups{"default", "reports", "billing", "cleanup", "digest", "export"};
  for (const auto& g : groups) ASSERT_TRUE(fleet.wait_leading(0, g, 10s)) << g << "\n" << log.dump();
  auto in_code = lh::RedisOptions::from_url(node.url());
  in_code.key_layout = lh::KeyLayout::Form::hash_tagged;
  fleet.add(tagged_options("beta"), in_code);
  const std::size_t first = 0;
  const std::size_t second = 1;

  // The keys are hash-tagged on the node; the plain ones do not exist.
  auto admin = node.admin();
  EXPECT_EQ(admin.get("leader:{default}"), fleet.at(first).instance_id());
  EXPECT_FALSE(admin.get("leader:default").has_value());
  EXPECT_EQ(admin.get("leader:{default}:token"), "1");

  // Renewals (batched per slot) go on for several heartbeats without a
  // single failure or change of leader.
  EXPECT_TRUE(fleet.run_checking_single_leader(4s, "default"));
  std::uint64_t renewed = 0;
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(fleet.events(i).errors.empty()) << fleet.events(i).errors.front().error.message();
    EXPECT_TRUE(fleet.events(i).revoked.empty());
    const lh::Metrics metrics = fleet.metrics(i);
    for (const auto& g : metrics.groups) {
      EXPECT_EQ(g.renewals_failed, 0u) << g.group;
      renewed += g.renewals_ok;
    }
  }
  EXPECT_GE(renewed, groups.size());
  // Batched per slot: the script that renews several slots at once (which
  // a one-shard cluster would take, but not every sharded service) never ran.
  const auto node_script = admin.call({"SCRIPT", "EXISTS", lh::detail::renew_node_script().sha1()});
  ASSERT_TRUE(node_script.is_array() && node_script.elements.size() == 1) << lh::test::describe_reply(node_script);
  EXPECT_EQ(node_script.elements[0].integer, 0);

  // A step-down hands over within a round trip of the release notice,
  // far below the ttl and the retry interval.
  const auto stepped_at = std::chrono::steady_clock::now();
  bool stepped = false;
  fleet.at(first).step_down("default", [&](lh::error_code ec) { stepped = !ec; });
  ASSERT_TRUE(fleet.wait_leading(second, "default", 3s)) << log.dump();
  EXPECT_LT(std::chrono::steady_clock::now() - stepped_at, 3s);
  EXPECT_TRUE(stepped);
  EXPECT_EQ(admin.get("leader:{default}:token"), "2");
  EXPECT_EQ(fleet.events(second).elected.back().token, 2);

  // A graceful stop hands every group the stopped elector led to the other.
  bool stopped = false;
  fleet.at(second).stop([&](lh::error_code) { stopped = true; });
  ASSERT_TRUE(lh::test::run_until(fleet.io, [&] { return stopped; }, 10s));
  for (const auto& g : groups) EXPECT_TRUE(fleet.wait_leading(first, g, 3s)) << g << "\n" << log.dump();
  EXPECT_EQ(admin.get("leader:{default}:token"), "3");
  EXPECT_TRUE(fleet.events(first).errors.empty());
}

}  // namespace
}  // namespace integration_sharded_endpoint_test
