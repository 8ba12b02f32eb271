#pragma once
// The failover scenarios, one round at a time, each measured from the
// members' own event logs and the benchmark's instants on the shared clock.

#include "failover/fleet.hpp"

#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace leasehold::test {
class AdminClient;
}

namespace leasehold::bench {

/// A leader told to step down (stdin "step_down <group>") or to stop (stdin
/// "stop"): from the command to another member's `elected` event.
struct HandOverRound {
  bool ok = false;
  std::string old_leader, new_leader;
  std::int64_t command_ns = 0;      ///< step_down: as the member logged it; stop: the benchmark's write
  std::int64_t old_ended_ns = 0;    ///< the old leader's claim ended (audit)
  std::int64_t new_sent_ns = 0;     ///< the winning acquire's send instant (audit began sent_at)
  std::int64_t new_began_ns = 0;    ///< the new claim was published (audit began at)
  std::int64_t elected_ns = 0;      ///< the new leader's elected callback
  double latency_ms() const { return static_cast<double>(elected_ns - command_ns) / 1e6; }
};

/// The leader SIGKILLed. The lease's expiry instant in Redis is read with
/// PTTL right after the kill (see docs/failover.md for why and how exact).
struct CrashRound {
  bool ok = false;
  std::string old_leader, new_leader;
  std::int64_t kill_ns = 0;
  std::vector<std::int64_t> renew_sent_ns;   ///< the dead leader's last confirmed renewals (send instants)
  std::vector<std::int64_t> renew_reply_ns;  ///< ... and when each was confirmed
  std::int64_t term_sent_ns = 0;             ///< send instant of the acquire that began its term
  std::int64_t last_confirm_sent_ns = 0;     ///< send instant of its last confirmed acquire/renewal
  std::int64_t expiry_ns = 0;                ///< lease expiry in Redis, from PTTL
  double expiry_error_ms = 0;                ///< +- bound of expiry_ns
  std::int64_t new_sent_ns = 0, new_began_ns = 0, elected_ns = 0;
  double kill_to_elected_ms() const { return static_cast<double>(elected_ns - kill_ns) / 1e6; }
  double expiry_to_elected_ms() const { return static_cast<double>(elected_ns - expiry_ns) / 1e6; }
  /// The audit-based upper bound: from last confirmed send + ttl.
  double audit_bound_ms(std::chrono::milliseconds ttl) const {
    return static_cast<double>(elected_ns - last_confirm_sent_ns) / 1e6 - static_cast<double>(ttl.count());
  }
};

class Scenarios {
 public:
  Scenarios(Fleet& fleet, test::AdminClient& admin, unsigned seed) : fleet_(fleet), admin_(admin), rng_(seed) {}

  /// Starts `count` members and waits for a leader.
  void start(int count);
  HandOverRound step_down_round();
  HandOverRound stop_round();
  CrashRound crash_round();
  /// Every live member joins a group nobody has used (stdin "join <group>"):
  /// from the first member's join to the first `elected` of that group.
  /// The rounds begin once the server's data marker is one ttl old, so that
  /// they time a new group on a server that has kept its data.
  HandOverRound new_group_round();

 private:
  Member& wait_for_leader();
  /// Waits a random part of a heartbeat, so that rounds sample every phase
  /// of the renewal cycle.
  void random_phase();
  void fill_new_leader(std::int64_t after_ns, const Member* old, std::int64_t& sent, std::int64_t& began,
                       std::int64_t& elected, std::string& id, const std::string& group = {});
  /// Starts a fresh member in place of one that is gone, and lets it settle.
  void replace();

  Fleet& fleet_;
  test::AdminClient& admin_;
  std::mt19937_64 rng_;
  int new_groups_ = 0;  // new_group_round()s so far
};

/// Runs `round` `rounds` times, appending each result to `into` and showing
/// progress on stderr.
template <typename Round, typename Result>
void run_rounds(const char* name, int rounds, Round round, std::vector<Result>& into) {
  for (int i = 0; i < rounds; ++i) {
    into.push_back(round());
    std::fprintf(stderr, "\r%s round %d/%d   ", name, i + 1, rounds);
  }
  std::fprintf(stderr, "\n");
}

}  // namespace leasehold::bench
