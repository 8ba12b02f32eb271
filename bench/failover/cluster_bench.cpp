#include "failover/cluster_bench.hpp"

#include "common/table.hpp"
#include "failover/fleet.hpp"
#include "failover/metric.hpp"
#include "failover/scenarios.hpp"
#include "support/cluster_topology.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <vector>

namespace leasehold::bench {

namespace {

const std::string group = "default";

std::string cluster_url(const test::ClusterTopology& topology) {
  std::string url = "redis-cluster://";
  for (const auto& v : topology.nodes()) {
    if (!v.master) continue;
    if (url.back() != '/') url += ',';
    url += fmt::format("127.0.0.1:{}", topology.node(v.index).port());
  }
  return url;
}

// `from`: what a round's clock starts at (new_group: the first member's
// join, and no old claim to end); `target`: the elected row's.
void add_metrics(Table& t, const char* scenario, const std::vector<HandOverRound>& rounds,
                 const char* from = "command", const char* target = "p99 <= 2 ms") {
  if (rounds.empty()) return;
  const int n = static_cast<int>(rounds.size());
  const auto ms = [](std::int64_t from, std::int64_t to) { return static_cast<double>(to - from) / 1e6; };
  Metric elected{scenario, fmt::format("{} -> elected", from), target, {}, n};
  Metric ended{scenario, fmt::format("{} -> old claim ended", from), "", {}, n};
  Metric sent{scenario, fmt::format("{} -> winning acquire sent", from), "", {}, n};
  for (const auto& r : rounds) {
    if (!r.ok) continue;
    elected.samples.push_back(r.latency_ms());
    if (r.old_ended_ns) ended.samples.push_back(ms(r.command_ns, r.old_ended_ns));
    if (r.new_sent_ns) sent.samples.push_back(ms(r.command_ns, r.new_sent_ns));
  }
  for (const auto* m : {&elected, &ended, &sent}) {
    if (!m->samples.empty()) add_row(t, *m);
  }
}

}  // namespace

void run_cluster(const ClusterBenchOptions& o) {
  test::ClusterTopologyOptions topology_options;
  topology_options.replicas_per_master = o.replicas;
  test::ClusterTopology topology(topology_options);
  const int slot = topology.key_slot("leader:{" + group + "}");
  const std::size_t master = topology.master_of_slot(slot);
  std::printf("cluster: 3 masters, %d replicas each; group \"%s\" in slot %d on %s\n", o.replicas, group.c_str(), slot,
              topology.describe_node(master).c_str());

  const std::string dir = o.out_dir + "/cluster-fleet";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  // A fresh cluster: the empty-restart guard would only add one ttl, except
  // to new_group, which measures what the guard (and the slot markers each
  // member writes as it starts) lets a new group do.
  const bool guarded = o.scenarios.count("new_group") != 0;
  Fleet fleet(FleetConfig{o.member, cluster_url(topology), dir, group, o.ttl, o.heartbeat, o.retry,
                          guarded ? std::vector<std::string>{} : std::vector<std::string>{"--empty-restart-guard", "off"}});
  // Only the crash round reads keys through the admin connection.
  auto admin = topology.node(master).admin();
  Scenarios scenarios(fleet, admin, o.seed);
  scenarios.start(o.candidates);

  std::vector<HandOverRound> step_downs, stops, new_groups;
  const auto repeat = [&](const char* name, auto round, std::vector<HandOverRound>& into) {
    if (o.scenarios.count(name)) run_rounds(name, o.rounds, round, into);
  };
  repeat("step_down", [&] { return scenarios.step_down_round(); }, step_downs);
  repeat("stop", [&] { return scenarios.stop_round(); }, stops);
  repeat("new_group", [&] { return scenarios.new_group_round(); }, new_groups);
  fleet.stop_all();

  Table latency(metric_header());
  add_metrics(latency, "step_down", step_downs);
  add_metrics(latency, "stop", stops);
  add_metrics(latency, "new_group", new_groups, "first join", "one round trip");
  std::printf("\nGraceful hand-over on a Redis Cluster (release notice on the group's shard channel)\n\n%s\n%s",
              latency.text().c_str(), latency.markdown().c_str());
  latency.write_csv(o.out_dir + "/cluster_summary.csv");
}

}  // namespace leasehold::bench
