#pragma once
// Turns one Output of a group's lease machine into its effects, always in one
// order: the deadline is published first (so no callback can see a revoked
// group as leader), then the term ends or begins, the holder change, the
// finished release, the command to send, the health figures and the wake.
// The only place that publishes deadlines and begins or ends terms.

#include <leasehold/impl/core/elector_listener.hpp>
#include <leasehold/impl/core/group_state.hpp>
#include <leasehold/impl/lease/lease_machine.hpp>

#include <optional>
#include <string>

namespace leasehold::detail {

/// Where the applier sends commands and wakes.
class CommandSink {
 public:
  virtual void send(GroupState& group, Command command, std::uint64_t seq, TimePoint now) = 0;
  /// `exact`: Output::exact_wake.
  virtual void schedule(GroupState& group, std::optional<TimePoint> wake, bool exact) = 0;
  virtual void machine_stopped(GroupState& group, TimePoint now) = 0;

 protected:
  ~CommandSink() = default;
};

class GroupApplier {
 public:
  GroupApplier(const std::string& instance_id, const std::string& incarnation, ElectorListener& listener,
               CommandSink& commands)
      : id_(instance_id), incarnation_(incarnation), listener_(listener), commands_(commands) {}

  void apply(GroupState& group, const Output& out, TimePoint now);
  /// Withdraws the published deadline and ends a term still open (a stop
  /// that could not release everything, or an elector abandoned).
  void withdraw(GroupState& group, RevokeReason reason, TimePoint now);

 private:
  void publish(GroupState& group, TimePoint now);
  void audit(const GroupState& group, LeaseAuditEvent::Kind kind, TimePoint now, TimePoint deadline);
  void report_overrun(GroupState& group);
  void report_duplicate(GroupState& group);
  void clear_duplicate(GroupState& group);
  void begin_term(GroupState& group, TimePoint now);
  void end_term(GroupState& group, RevokeReason reason, TimePoint now);

  const std::string& id_;
  const std::string& incarnation_;
  ElectorListener& listener_;
  CommandSink& commands_;
};

}  // namespace leasehold::detail
