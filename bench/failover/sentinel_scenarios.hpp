#pragma once
// Failovers of a real Sentinel deployment (1 master, 2 replicas, 3
// sentinels) under a fleet of members that reach it through the Sentinel
// URL: the master killed, or SENTINEL FAILOVER. The members stay up; the
// failover is Redis's. Instants come from the members' logs (audit records,
// elected/revoked, and their own log lines: when each heard +switch-master
// and reconnected) and from the benchmark's own +switch-master subscription.

#include "failover/fleet.hpp"
#include "failover/switch_watch.hpp"
#include "support/sentinel_topology.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <utility>

namespace leasehold::bench {

struct SentinelScenarioConfig {
  std::string member_binary;
  std::string dir;
  int candidates = 3;
  std::chrono::milliseconds ttl{2000}, heartbeat{666}, retry{500};
  int confirm_replicas = 0;
  std::chrono::milliseconds confirm_timeout{100};
};

struct SentinelRound {
  bool ok = false;                 ///< a lease was confirmed on the new master
  std::string old_leader, new_leader;
  std::int64_t old_token = 0, new_token = 0;
  std::int64_t fault_ns = 0;       ///< SIGKILL of the master, or SENTINEL FAILOVER sent
  std::int64_t switch_ns = 0;      ///< first +switch-master the benchmark read (any sentinel)
  std::int64_t last_switch_ns = 0; ///< ... and the last sentinel's
  std::int64_t confirmed_ns = 0;   ///< first confirmed acquire/renewal on the new master (audit)
  std::int64_t left_ns = 0;        ///< ... its member heard +switch-master / lost the connection
  std::int64_t restart_ns = 0;     ///< kill: the old master started again (as a replica)
  std::int64_t settled_ns = 0;     ///< every sentinel sees 1 master + 2 healthy replicas, one leader
  double leaderless_ms = 0;        ///< in [fault, settled]: no member led
  double overlap_ms = 0;           ///< in [fault, settled]: two or more members led
  bool kept = false;               ///< the old leader carried on, same token, never revoked
  double switch_to_confirmed_ms() const { return static_cast<double>(confirmed_ns - switch_ns) / 1e6; }
};

class SentinelScenarios {
 public:
  /// Starts the topology, the switch watch and `candidates` members; waits
  /// for a leader.
  explicit SentinelScenarios(SentinelScenarioConfig config, unsigned seed = 1);
  ~SentinelScenarios();

  /// SIGKILL of the master; the old master is started again afterwards (at
  /// once, or after 3 s when confirm_replicas counts every replica: until
  /// then no lease can be confirmed).
  SentinelRound kill_round();
  /// SENTINEL FAILOVER; waits until the sentinels have converted the old
  /// master into a replica.
  SentinelRound planned_round();

 private:
  Member& wait_for_confirmed_leader();
  /// Waits for a confirmed leader, then a random part of a heartbeat (so the
  /// fault lands anywhere in the renewal cycle); the round's leader and token.
  std::pair<Member*, SentinelRound> start_round();
  struct Confirmation {
    Member* who = nullptr;
    std::int64_t at = 0, token = 0, left_old = 0;
  };
  Confirmation first_confirmed_on_new_master(std::int64_t fault_ns);
  void finish(SentinelRound& r, const Member& old);

  SentinelScenarioConfig config_;
  std::mt19937_64 rng_;
  std::unique_ptr<test::SentinelTopology> topology_;
  std::unique_ptr<SwitchWatch> watch_;
  std::unique_ptr<Fleet> fleet_;
};

}  // namespace leasehold::bench
