#pragma once
// Preferred holder under a rolling deploy: each round starts one member whose
// priority is above every running member's; its refused acquire leaves a
// bid, the leader hands the lease over at its next renewal, and the oldest
// member is then stopped so that the fleet keeps its size. A check at the
// end starts members of equal and of lower priority, which must never take
// over. Instants come from the members' logs and the benchmark's own, all on
// the shared steady clock.

#include "failover/fleet.hpp"

#include <chrono>
#include <cstdint>
#include <map>
#include <random>
#include <string>

namespace leasehold::test {
class AdminClient;
}

namespace leasehold::bench {

/// One new member of the highest priority, from its start to its election.
struct PriorityRound {
  /// The newcomer was the first member elected after its start, the old
  /// leader's term ended by hand-over, and the fencing token rose.
  bool ok = false;
  std::string old_leader, newcomer;
  std::string first_elected;     ///< whoever was elected first after the spawn
  std::string old_reason;        ///< the old leader's revoke reason (handed_over)
  std::string stopped;           ///< the oldest member, stopped after the round ("": none)
  bool bid_seen = false;         ///< a read of the bid key (every ~50 ms) found the newcomer's bid
  int priority = 0;              ///< the newcomer's
  std::int64_t old_token = 0, new_token = 0;
  std::int64_t spawn_ns = 0;     ///< the benchmark, just before fork()
  std::int64_t ready_ns = 0;     ///< the newcomer's `ready` (its elector started)
  std::int64_t revoked_ns = 0;   ///< the old leader's `revoked`
  std::int64_t old_ended_ns = 0; ///< the old leader's claim ended (audit)
  std::int64_t new_sent_ns = 0;  ///< the newcomer's winning acquire was sent (audit began sent_at)
  std::int64_t new_began_ns = 0; ///< ... and its claim published (audit began at)
  std::int64_t elected_ns = 0;   ///< the newcomer's elected callback
  std::int64_t end_ns = 0;       ///< the round's window ends (before the oldest is stopped)

  static double ms(std::int64_t from_ns, std::int64_t to_ns) { return static_cast<double>(to_ns - from_ns) / 1e6; }
  double spawn_to_elected_ms() const { return ms(spawn_ns, elected_ns); }
  double ready_to_elected_ms() const { return ms(ready_ns, elected_ns); }
  /// The callbacks' leaderless gap: the old leader's revoked to the newcomer's elected.
  double leaderless_ms() const { return ms(revoked_ns, elected_ns); }
};

/// Members of the leader's priority and of a lower one join and are watched
/// for `window`: nobody may bid, hand over or be elected.
struct PriorityCheck {
  std::string leader, equal, lower;
  int leader_priority = 0;
  std::int64_t from_ns = 0, to_ns = 0;
  bool leader_kept = false;  ///< the leader was never revoked and still leads
  int elections = 0;         ///< elected events of any member in the window
  int bid_reads = 0;         ///< EXISTS of the bid key during the window
  int bids_seen = 0;         ///< ... that found one
  bool ok() const { return leader_kept && elections == 0 && bids_seen == 0; }
};

class RollingDeploy {
 public:
  RollingDeploy(Fleet& fleet, test::AdminClient& admin, unsigned seed) : fleet_(fleet), admin_(admin), rng_(seed) {}

  /// Starts `count` members of priority 0 and waits for a leader.
  void start(int count);
  /// A member of priority (last round's + 1, from 1) joins; waits for its
  /// election; then, with `stop_oldest`, stops the oldest member that does
  /// not lead.
  PriorityRound round(bool stop_oldest);
  PriorityCheck equal_priority_check(std::chrono::milliseconds window);
  int priority_of(const std::string& id) const;

 private:
  Member& wait_for_leader();
  /// Waits a random part of a heartbeat, so that the newcomers' starts
  /// sample every phase of the leader's renewal cycle.
  void random_phase();
  void stop_oldest(PriorityRound& r);
  /// EXISTS of the group's bid key (key_prefix "leader:").
  bool bid_exists();

  Fleet& fleet_;
  test::AdminClient& admin_;
  std::mt19937_64 rng_;
  int next_priority_ = 1;
  std::map<std::string, int> priorities_;  ///< by member id; absent: 0
};

}  // namespace leasehold::bench
