#pragma once
// A deterministic simulation of a fleet of electors: N ElectorCores (the real
// logic of leasehold, without Asio) over a model of the lease keys, on
// simulated time, with random delays (FIFO per connection, as TCP), connection
// resets that lose or deliver what was in flight, process pauses, crashes and
// restarts, step-downs, optionally empty restarts of the model, priorities
// (hand-overs) and a duplicated instance id. Every
// choice comes from one seed, so a seed replays a run exactly. The chaos
// runner's checker judges it: no overlapping claims, ordered terms, every
// leaderless gap explained by a fault.

#include <cstdint>
#include <string>
#include <vector>

namespace leasehold::sim {

struct Config {
  std::uint64_t seed = 1;
  int instances = 0;              ///< 0: 3 to 7, from the seed
  int groups = 4;                 ///< besides "default"
  std::int64_t duration_ms = 20'000;  ///< faults are injected during this time
  std::int64_t ttl_ms = 1000;
  std::int64_t retry_ms = 250;
  std::int64_t max_delay_ms = 40;   ///< one-way delay of a message: 0 to this
  bool empty_restarts = false;      ///< the model forgets everything at times
  bool empty_restart_guard = true;  ///< ElectorOptions::empty_restart_guard
  /// Every process campaigns with a priority of 0 to 2 from the seed (drawn
  /// again at each restart): standbys of higher priority bid, leaders hand over.
  bool priorities = false;
  /// A copied config: the second process runs with the first one's id.
  bool duplicate_ids = false;
  /// The Cluster key layout, every group (but "default") in one slot: a
  /// leader's groups renew together, early (ElectorCore), and the notices
  /// name the lease key.
  bool hash_tagged = false;
  bool print_logs = false;          ///< print every process's event log (a replay)
  /// A small window, so the simulation exercises holding commands back.
  std::size_t max_in_flight = 3;
};

struct Result {
  std::uint64_t seed = 0;
  int instances = 0;
  std::size_t events = 0;
  std::size_t claims = 0;
  std::size_t faults = 0;
  std::vector<std::string> problems;  ///< overlaps, order, liveness; empty: passed
  bool ok() const { return problems.empty(); }
};

Result run(const Config& config);

}  // namespace leasehold::sim
