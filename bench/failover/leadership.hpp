#pragma once
// How many members led at each instant of a window, from their elected and
// revoked events (what the application sees through the callbacks).

#include "failover/fleet.hpp"

#include <cstdint>
#include <string>

namespace leasehold::bench {

struct LeadershipTime {
  double none_ms = 0;      ///< nobody led
  double several_ms = 0;   ///< two or more led at once
};

/// Over [from_ns, to_ns], for `group`, across every member of the fleet.
LeadershipTime leadership_time(Fleet& fleet, const std::string& group, std::int64_t from_ns, std::int64_t to_ns);

}  // namespace leasehold::bench
