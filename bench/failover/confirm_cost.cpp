#include "failover/confirm_cost.hpp"

#include "common/redis_info.hpp"
#include "failover/fleet.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <set>
#include <stdexcept>
#include <thread>

namespace leasehold::bench {

namespace {

double cpu_seconds(test::SentinelTopology& topology, std::size_t node) {
  const auto info = parse_info(topology.node(node).admin().call({"INFO", "cpu"}).str);
  return info_number(info, "used_cpu_sys") + info_number(info, "used_cpu_user");
}

}  // namespace

ConfirmCost measure_confirm_cost(test::SentinelTopology& topology, const ConfirmCostConfig& config,
                                 int confirm_replicas) {
  const std::string dir = fmt::format("{}/confirm-{}", config.dir, confirm_replicas);
  std::filesystem::create_directories(dir);
  FleetConfig fc{config.member_binary, topology.sentinel_url(), dir, "default",
                 config.ttl, config.heartbeat, config.retry, {}};
  fc.extra_args = {"--group-count", std::to_string(config.groups),
                   "--prefix", fmt::format("cost{}:", confirm_replicas),
                   "--confirm-replicas", std::to_string(confirm_replicas),
                   "--empty-restart-guard", "off"};
  Fleet fleet(fc);
  for (int i = 0; i < config.members; ++i) fleet.spawn();

  // Settled: every group (and `default`) has begun a term somewhere, and
  // two more ttls have passed so that standbys are in their cycle.
  const auto all_led = [&] {
    std::set<std::string> led;
    for (const auto& m : fleet.members()) {
      for (const auto& e : m->log.events()) {
        if (e.kind == MemberEvent::Kind::began) led.insert(e.group);
      }
    }
    return static_cast<int>(led.size()) >= config.groups + 1;
  };
  if (!fleet.wait_until(all_led, config.ttl * 3 + std::chrono::seconds(20))) {
    throw std::runtime_error(fmt::format("confirm cost N={}: not every group got a leader", confirm_replicas));
  }
  std::this_thread::sleep_for(config.ttl * 2);

  const std::size_t master = topology.master_index();
  std::vector<double> before;
  for (std::size_t i = 0; i < topology.node_count(); ++i) before.push_back(cpu_seconds(topology, i));
  const std::int64_t t0 = now_ns();
  std::this_thread::sleep_for(config.window);
  const std::int64_t t1 = now_ns();
  ConfirmCost r;
  r.confirm_replicas = confirm_replicas;
  r.seconds = static_cast<double>(t1 - t0) / 1e9;
  for (std::size_t i = 0; i < topology.node_count(); ++i) {
    const double pct = (cpu_seconds(topology, i) - before[i]) / r.seconds * 100;
    (i == master ? r.master_cpu_pct : r.replicas_cpu_pct) += pct;
  }
  fleet.poll();

  std::vector<double> rtt;
  for (const auto& m : fleet.members()) {
    for (const auto& e : m->log.events()) {
      if (e.at < t0 || e.at > t1) continue;
      if (e.kind == MemberEvent::Kind::extended) rtt.push_back(static_cast<double>(e.at - e.sent_at) / 1e6);
      if (e.kind == MemberEvent::Kind::error) ++r.not_confirmed;
    }
  }
  r.renewal_ms = Summary::of(rtt);
  r.renewals_per_s = static_cast<double>(rtt.size()) / r.seconds;
  fleet.stop_all();
  return r;
}

}  // namespace leasehold::bench
