#pragma once
// What confirm mode costs in steady state: members holding many groups on a
// Sentinel topology (1 master, 2 replicas), with WAIT N after every acquire
// and renewal. The renewal round trip is each audit `extended` record's
// reply instant minus its send instant (script + WAIT); Redis's CPU is the
// INFO cpu delta (used_cpu_sys + used_cpu_user) over the window.

#include "common/summary.hpp"
#include "support/sentinel_topology.hpp"

#include <chrono>
#include <string>

namespace leasehold::bench {

struct ConfirmCostConfig {
  std::string member_binary;
  std::string dir;
  int members = 2;
  int groups = 1000;
  std::chrono::milliseconds ttl{3000}, heartbeat{1000}, retry{500};
  std::chrono::seconds window{10};
};

struct ConfirmCost {
  int confirm_replicas = 0;
  double seconds = 0;
  Summary renewal_ms;          ///< script + WAIT round trip of every renewal in the window
  double renewals_per_s = 0;
  double master_cpu_pct = 0;   ///< of one core
  double replicas_cpu_pct = 0; ///< both replicas together
  int not_confirmed = 0;       ///< errors (not_confirmed and any other) in the window
};

/// Runs a fresh fleet (its own key prefix) on `topology` with WAIT
/// `confirm_replicas`, measures for the window, stops it.
ConfirmCost measure_confirm_cost(test::SentinelTopology& topology, const ConfirmCostConfig& config,
                                 int confirm_replicas);

}  // namespace leasehold::bench
