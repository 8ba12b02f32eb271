#pragma once
// `failover --topology cluster`: graceful hand-overs (step_down, stop) of a
// fleet of members campaigning for one group on a Redis Cluster on loopback
// (3 masters, --cluster-replicas R each). The standby hears the release on
// the group's shard channel (SPUBLISH / SSUBSCRIBE on the master of the
// group's slot). The rounds are the single-server ones (scenarios.hpp);
// prints the same latency table (text and Markdown) and writes CSV files.

#include <chrono>
#include <set>
#include <string>

namespace leasehold::bench {

struct ClusterBenchOptions {
  std::string member, out_dir;
  int candidates = 3, rounds = 200;
  std::chrono::milliseconds ttl{1000}, heartbeat{333}, retry{500};
  std::set<std::string> scenarios{"step_down", "stop"};
  int replicas = 0;  ///< per master
  unsigned seed = 1;
};

void run_cluster(const ClusterBenchOptions& o);

}  // namespace leasehold::bench
