#pragma once
// `failover --scenarios priority`: a rolling deploy under preferred-holder
// priorities on a private redis-server (see priority_scenario.hpp); prints
// tables (text and Markdown) and writes CSV files.

#include <chrono>
#include <string>

namespace leasehold::bench {

struct PriorityBenchOptions {
  std::string member, out_dir;
  int candidates = 3, rounds = 30;  ///< the fleet's size, kept by stopping the oldest
  std::chrono::milliseconds ttl{1000}, heartbeat{333}, retry{500};
  bool stop_oldest = true;          ///< false: the fleet grows by one member a round
  unsigned seed = 1;
};

void run_priority(const PriorityBenchOptions& o);

}  // namespace leasehold::bench
