#include "failover/sentinel_bench.hpp"

#include "common/table.hpp"
#include "failover/confirm_cost.hpp"
#include "failover/metric.hpp"
#include "failover/sentinel_scenarios.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

namespace leasehold::bench {

namespace {

double ms(std::int64_t from_ns, std::int64_t to_ns) { return static_cast<double>(to_ns - from_ns) / 1e6; }

struct Run {
  std::string label;  // "kill N=1"
  bool kill = false;
  bool every_replica = false;  // confirm_replicas counts both replicas
  std::vector<SentinelRound> rounds;
};

Run run_rounds(const SentinelBenchOptions& o, bool kill, int confirm) {
  Run run{fmt::format("{} N={}", kill ? "kill" : "failover", confirm), kill, confirm >= 2, {}};
  const std::string dir = fmt::format("{}/sentinel-{}-{}", o.out_dir, kill ? "kill" : "failover", confirm);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  SentinelScenarios scenarios(
      SentinelScenarioConfig{o.member, dir, o.candidates, o.ttl, o.heartbeat, o.retry, confirm,
                             std::chrono::milliseconds(100)},
      o.seed);
  for (int i = 0; i < o.rounds; ++i) {
    run.rounds.push_back(kill ? scenarios.kill_round() : scenarios.planned_round());
    const auto& r = run.rounds.back();
    std::fprintf(stderr, "%s round %d/%d: switch -> confirmed %.1f ms, leaderless %.0f ms, two leaders %.0f ms%s\n",
                 run.label.c_str(), i + 1, o.rounds, r.ok ? r.switch_to_confirmed_ms() : -1.0, r.leaderless_ms,
                 r.overlap_ms, r.kept ? ", kept" : "");
  }
  return run;
}

void add_metrics(Table& t, const Run& run) {
  const int n = static_cast<int>(run.rounds.size());
  Metric confirmed{run.label, "+switch-master -> first confirmed lease on the new master", "p99 <= 500 ms", {}, n};
  Metric announce{run.label, "fault -> +switch-master (first sentinel)", "", {}, n};
  Metric spread{run.label, "first -> last sentinel's +switch-master", "", {}, n};
  Metric heard{run.label, "the confirming member heard +switch-master -> confirmed", "", {}, n};
  Metric restart{run.label, "old master restarted (3 s after) -> first confirmed lease", "", {}, n};
  Metric none{run.label, "leaderless time per failover", "", {}, n};
  Metric several{run.label, "two-leader time per failover", "0", {}, n};
  for (const auto& r : run.rounds) {
    if (!r.ok) continue;
    confirmed.samples.push_back(r.switch_to_confirmed_ms());
    announce.samples.push_back(ms(r.fault_ns, r.switch_ns));
    spread.samples.push_back(ms(r.switch_ns, r.last_switch_ns));
    if (run.kill) restart.samples.push_back(ms(r.restart_ns, r.confirmed_ns));
    if (!run.kill) heard.samples.push_back(ms(r.left_ns, r.confirmed_ns));
    none.samples.push_back(r.leaderless_ms);
    several.samples.push_back(r.overlap_ms);
  }
  for (const auto* m : {&confirmed, &announce, &spread}) add_row(t, *m);
  // Killed, the old master comes back only to free a lease that needs
  // every replica; before that, nothing waited for it.
  if (!run.kill) add_row(t, heard);
  if (run.kill && run.every_replica) add_row(t, restart);
  add_row(t, none);
  add_row(t, several);
}

void add_round_rows(Table& t, const Run& run) {
  for (std::size_t i = 0; i < run.rounds.size(); ++i) {
    const auto& r = run.rounds[i];
    t.add({run.label, std::to_string(i + 1), r.ok ? "1" : "0", r.old_leader, std::to_string(r.old_token),
           r.new_leader, std::to_string(r.new_token), r.kept ? "1" : "0", std::to_string(r.fault_ns),
           std::to_string(r.switch_ns), std::to_string(r.last_switch_ns), std::to_string(r.confirmed_ns),
           std::to_string(r.left_ns), std::to_string(r.restart_ns), std::to_string(r.settled_ns), fixed(r.leaderless_ms, 3),
           fixed(r.overlap_ms, 3)});
  }
}

void print(const char* title, const Table& t) { std::printf("\n%s\n\n%s\n%s", title, t.text().c_str(), t.markdown().c_str()); }

}  // namespace

void run_sentinel(const SentinelBenchOptions& o) {
  std::vector<Run> runs;
  for (const char* scenario : {"kill", "failover"}) {
    if (!o.scenarios.count(scenario)) continue;
    for (const int n : o.confirm_replicas) runs.push_back(run_rounds(o, scenario == std::string("kill"), n));
  }
  if (!runs.empty()) {
    Table latency(metric_header());
    Table continuity({"run", "ttl ms", "same leader and token", "rounds with two leaders", "two-leader ms (sum)"});
    Table rounds({"run", "round", "ok", "old", "old_token", "new", "new_token", "kept", "fault_ns", "switch_ns",
                  "last_switch_ns", "confirmed_ns", "left_old_ns", "restart_ns", "settled_ns", "leaderless_ms", "overlap_ms"});
    for (const auto& run : runs) {
      add_metrics(latency, run);
      add_round_rows(rounds, run);
      int kept = 0, overlapping = 0;
      double overlap = 0;
      for (const auto& r : run.rounds) {
        kept += r.kept ? 1 : 0;
        overlapping += r.overlap_ms > 0 ? 1 : 0;
        overlap += r.overlap_ms;
      }
      const auto n = run.rounds.size();
      continuity.add({run.label, std::to_string(o.ttl.count()), fmt::format("{}/{}", kept, n),
                      fmt::format("{}/{}", overlapping, n), fixed(overlap)});
    }
    print("Sentinel failovers (1 master, 2 replicas, 3 sentinels; down-after 1000 ms, failover-timeout 3000 ms)",
          latency);
    print("Lease continuity: the leader before the failover keeps the group with the same token", continuity);
    latency.write_csv(o.out_dir + "/sentinel_summary.csv");
    rounds.write_csv(o.out_dir + "/sentinel_rounds.csv");
  }

  if (o.scenarios.count("confirm_cost")) {
    test::SentinelTopology topology;
    ConfirmCostConfig config{o.member, o.out_dir, 2, o.cost_groups, std::chrono::milliseconds(3000),
                             std::chrono::milliseconds(1000), o.retry, o.window};
    Table cost({"confirm_replicas", "groups", "renewals/s", "renewal p50 ms", "renewal p99 ms", "renewal max ms",
                "master CPU % (one core)", "replicas CPU % (both)", "errors"});
    for (const int n : o.cost_replicas) {
      std::fprintf(stderr, "confirm cost: N=%d, %d groups, %lld s\n", n, o.cost_groups,
                   static_cast<long long>(o.window.count()));
      const auto r = measure_confirm_cost(topology, config, n);
      cost.add({std::to_string(n), std::to_string(o.cost_groups + 1), fixed(r.renewals_per_s, 0),
                fixed(r.renewal_ms.p50, 3), fixed(r.renewal_ms.p99, 3), fixed(r.renewal_ms.max, 3),
                fixed(r.master_cpu_pct, 1), fixed(r.replicas_cpu_pct, 1), std::to_string(r.not_confirmed)});
    }
    print("Cost of confirm mode (WAIT N after each acquire and renewal; 2 members, ttl 3000 ms, heartbeat 1000 ms)",
          cost);
    cost.write_csv(o.out_dir + "/sentinel_confirm_cost.csv");
  }
}

}  // namespace leasehold::bench
