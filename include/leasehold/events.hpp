#pragma once
// What an Elector tells its user. Callbacks receive these on the callback
// executor, never on the renewal path.

#include <leasehold/error.hpp>
#include <leasehold/revoke_reason.hpp>

#include <chrono>
#include <cstdint>
#include <string>

namespace leasehold {

/// This instance began a term as leader of `group`.
struct ElectedEvent {
  std::string group;
  std::int64_t token = 0;  ///< fencing token of the term
  std::chrono::steady_clock::time_point acquired_at;  ///< send instant of the winning acquire
};

/// This instance's term as leader of `group` ended.
struct RevokedEvent {
  std::string group;
  std::int64_t token = 0;
  RevokeReason reason = RevokeReason::stopped;
};

/// The holder of `group`'s lease, as this instance last saw it, changed.
struct LeaderChangedEvent {
  std::string group;
  std::string holder;
};

/// A Redis or connection error. `group` is empty for errors of the connection
/// itself, which concern every group.
struct ErrorEvent {
  std::string group;
  Error error;
};

/// An audit record of the local claim on a group, for tools that check
/// safety from outside (the chaos checker). The claim is the interval in which
/// is_leader(group) can be true: from `at` of a `began` record to the earlier
/// of the last `deadline` and `at` of the `ended` record.
struct LeaseAuditEvent {
  enum class Kind { began, extended, ended };
  Kind kind = Kind::began;
  std::string_view group;
  std::int64_t token = 0;
  std::chrono::steady_clock::time_point at;        ///< when the local view changed
  std::chrono::steady_clock::time_point sent_at;   ///< send instant of the confirming command
  std::chrono::steady_clock::time_point deadline;  ///< local deadline (began, extended)
};

}  // namespace leasehold
