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
  std::string group;  ///< the election group now led
  std::int64_t token = 0;  ///< fencing token of the term
  std::chrono::steady_clock::time_point acquired_at;  ///< send instant of the winning acquire
};

/// This instance's term as leader of `group` ended.
struct RevokedEvent {
  std::string group;                            ///< the election group no longer led
  std::int64_t token = 0;                       ///< fencing token of the term that ended
  RevokeReason reason = RevokeReason::stopped;  ///< why the term ended
};

/// The holder of `group`'s lease, as this instance last saw it, changed.
struct LeaderChangedEvent {
  std::string group;   ///< the election group
  std::string holder;  ///< instance id of the new holder; empty when nobody holds the lease
};

/// A Redis or connection error. `group` is empty for errors of the connection
/// itself, which concern every group.
struct ErrorEvent {
  std::string group;  ///< the group concerned; empty for the connection
  Error error;        ///< the code and the detail that explains it
};

/// An audit record of the local claim on a group, for tools that check
/// safety from outside (the chaos checker). The claim is the interval in which
/// is_leader(group) can be true: from `at` of a `began` record to the earlier
/// of the last `deadline` and `at` of the `ended` record.
struct LeaseAuditEvent {
  /// What happened to the claim: `began` (a term's claim was published),
  /// `extended` (a renewal moved the deadline later) or `ended` (the claim
  /// was withdrawn).
  enum class Kind { began, extended, ended };
  Kind kind = Kind::began;  ///< what this record reports
  /// The group's name; it refers to the elector's storage and is valid only
  /// during the audit callback: copy it to keep it.
  std::string_view group;
  std::int64_t token = 0;   ///< fencing token of the term
  std::chrono::steady_clock::time_point at;        ///< when the local view changed
  std::chrono::steady_clock::time_point sent_at;   ///< send instant of the confirming command
  std::chrono::steady_clock::time_point deadline;  ///< local deadline (began, extended)
};

}  // namespace leasehold
