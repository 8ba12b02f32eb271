#pragma once
// What Redis says about a group's lease (Elector::leader_of, the CLI).

#include <chrono>
#include <cstdint>
#include <string>

namespace leasehold {

/// What Redis says about a group's lease right now (see Elector::leader_of).
struct LeaderInfo {
  std::string holder;          ///< empty: nobody holds the lease
  /// Remaining TTL; -1 ms: no TTL set. Above 0 with an empty holder: the
  /// empty-restart guard keeps the group vacant this much longer.
  std::chrono::milliseconds remaining{0};
  std::int64_t token = 0;      ///< the group's fencing counter
  std::string server_error;    ///< the server's error text when the request got an error reply
};

}  // namespace leasehold
