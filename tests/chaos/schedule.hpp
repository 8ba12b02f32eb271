#pragma once
// The random fault schedule of a chaos run. Every decision comes from one
// seeded generator and never from what the fleet did, so a seed names one
// schedule: the same seed replays it, against any build of the member.

#include "chaos/fault.hpp"

#include <cstdint>
#include <random>
#include <vector>

namespace leasehold::chaos {

enum class Scenario {
  mixed,            ///< every enabled fault kind, one to three at a time
  delayed_replies,  ///< delay one instance's traffic, then kill it while it leads
};

/// Faults injected together; the next batch starts only after every bound
/// of this one has passed, plus a quiet time.
struct Batch {
  std::vector<Fault> faults;
  milliseconds quiet{0};
  /// delayed_replies: the kill hits the instance the delay hit.
  bool kill_the_delayed = false;
};

class Planner {
 public:
  Planner(std::uint64_t seed, Scenario scenario, Timing timing, std::vector<FaultKind> enabled,
          std::size_t instances);

  Batch next();

 private:
  Batch mixed();
  Batch delayed_replies();
  Fault make(FaultKind kind);
  milliseconds between(milliseconds lo, milliseconds hi);
  milliseconds ttl_times(double lo, double hi);

  std::mt19937_64 rng_;
  Scenario scenario_;
  Timing timing_;
  std::vector<FaultKind> enabled_;
  std::size_t instances_;
};

}  // namespace leasehold::chaos
