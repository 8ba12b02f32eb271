#pragma once
// `failover --topology sentinel`: the Sentinel scenarios and the cost of
// confirm mode, each on a fresh 1 master + 2 replicas + 3 sentinels
// deployment; prints tables (text and Markdown) and writes CSV files.

#include <chrono>
#include <set>
#include <string>
#include <vector>

namespace leasehold::bench {

struct SentinelBenchOptions {
  std::string member, out_dir;
  int candidates = 3, rounds = 20;
  std::chrono::milliseconds ttl{2000}, heartbeat{666}, retry{500};
  std::set<std::string> scenarios{"kill", "failover", "confirm_cost"};
  std::vector<int> confirm_replicas{1};       ///< kill and failover: one run per value
  std::vector<int> cost_replicas{0, 1, 2};    ///< confirm_cost: one window per value
  int cost_groups = 1000;
  std::chrono::seconds window{10};
  unsigned seed = 1;
};

void run_sentinel(const SentinelBenchOptions& o);

}  // namespace leasehold::bench
