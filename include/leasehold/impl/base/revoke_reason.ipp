#include <leasehold/revoke_reason.hpp>

namespace leasehold {

std::string_view to_string(RevokeReason reason) noexcept {
  switch (reason) {
    case RevokeReason::renew_refused: return "renew_refused";
    case RevokeReason::renew_failed: return "renew_failed";
    case RevokeReason::timeout: return "timeout";
    case RevokeReason::connection_lost: return "connection_lost";
    case RevokeReason::stepped_down: return "stepped_down";
    case RevokeReason::stopped: return "stopped";
    case RevokeReason::deadline_passed: return "deadline_passed";
    case RevokeReason::released_elsewhere: return "released_elsewhere";
    case RevokeReason::handed_over: return "handed_over";
  }
  return "unknown";
}

}  // namespace leasehold
