#pragma once
// Why a term ended: carried by RevokedEvent, counted per reason in metrics,
// and returned by a Term's end.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace leasehold {

/// Why a term of leadership ended, as the elector saw it.
enum class RevokeReason : std::uint8_t {
  renew_refused,    ///< the renew script found the key gone or held by another id
  renew_failed,     ///< the renew command failed (server error, connection error)
  timeout,          ///< the renew command timed out: its outcome is unknown
  connection_lost,  ///< the connection to Redis closed
  stepped_down,     ///< step_down() released the lease
  stopped,          ///< stop() released the lease
  deadline_passed,  ///< no renewal was confirmed before the local deadline
  released_elsewhere,  ///< a release notice named this instance: someone released its lease
                       ///< (an operator's CLI step-down); treated as a step-down
  handed_over,      ///< a standby of higher priority bid: the lease was handed to it
};

/// The number of RevokeReason values (metrics keep a counter for each).
inline constexpr std::size_t revoke_reason_count = 9;

/// The reason's name as spelled above ("renew_refused", ...).
std::string_view to_string(RevokeReason reason) noexcept;

}  // namespace leasehold
