#pragma once
// What the elector's logic (ElectorCore) asks of whoever drives it: the Asio
// elector, a unit test or the simulation. Every call is made on the driver's
// executor, inside one of the core's inputs.

#include <leasehold/impl/lease/lease_machine.hpp>

#include <leasehold/error.hpp>
#include <leasehold/events.hpp>

#include <cstdint>

namespace leasehold::detail {

struct GroupState;

class ElectorListener {
 public:
  /// A term began (group.machine.token() is its token).
  virtual void term_began(GroupState& group) = 0;
  /// The term of `token` ended (is_leader is already false).
  virtual void term_ended(GroupState& group, std::int64_t token, RevokeReason reason) = 0;
  /// group.machine.holder() changed.
  virtual void leader_changed(GroupState& group) = 0;
  /// A release (step-down) finished; `failed`: it was not confirmed (the
  /// error is group.take_release_error(): the connection was lost if none).
  virtual void released(GroupState& group, bool failed) = 0;
  /// A lease command of the group failed with a new error (once per error).
  virtual void group_error(GroupState& group, const Error& error) = 0;
  /// The local view of a lease changed (audit hook).
  virtual void audit(const LeaseAuditEvent& event) = 0;
  /// Call ElectorCore::timer_expired(at, now) at `at` (replaces the last arm).
  virtual void arm_timer(TimePoint at) = 0;
  /// Call ElectorCore::resume(now) on a later turn of the executor.
  virtual void resume_later() = 0;
  /// The core stopped: every group's term is over.
  virtual void stopped() = 0;
  /// Whether guarded work of the group's ended term still runs (a draining
  /// step-down or stop waits for it; ElectorCore::work_drained() says when
  /// it has finished). A driver without such work answers false.
  virtual bool work_running(GroupState& /*group*/) { return false; }

 protected:
  ~ElectorListener() = default;
};

}  // namespace leasehold::detail
