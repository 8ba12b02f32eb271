#pragma once
// The seam between the elector's logic and the Redis deployment behind it.
// The elector says which lease command a group needs; a transport routes it
// (one server, the master Sentinel names, or each slot's master of a
// cluster) and hands the answer back.
// Tests and the simulation put their own transport here.

#include <leasehold/impl/lease/lease_machine.hpp>

#include <leasehold/error.hpp>
#include <leasehold/redis/reply.hpp>

#include <cstdint>

namespace leasehold::detail {

struct GroupState;

/// Confirm mode's verdict on an acquisition or a renewal: how many replicas
/// acknowledged it (WAIT after the script, on the same connection).
enum class Replicated : std::uint8_t {
  not_asked,  ///< confirm mode is off, or the command needs no confirmation
  enough,     ///< at least confirm_replicas acknowledged within confirm_timeout
  too_few,    ///< fewer did: the lease (or its extension) does not count
};

/// Hears the answers to lease commands.
class LeaseReplyListener {
 public:
  /// `now`: when the answer arrived.
  virtual void on_lease_reply(GroupState& group, Command command, std::uint64_t seq, error_code ec,
                              const redis::Reply& reply, Replicated replicated, TimePoint now) = 0;

 protected:
  ~LeaseReplyListener() = default;
};

class LeaseTransport {
 public:
  virtual ~LeaseTransport() = default;

  /// Sends `command` (acquire, renew or release) for `group`, tagged `seq`.
  /// The answer, or the failure, reaches `replies` later: never inside this
  /// call. Every command sent gets exactly one answer.
  virtual void send(GroupState& group, Command command, std::uint64_t seq, LeaseReplyListener& replies) = 0;

  /// On a cluster: renewals leave one script per slot, so a renewing group
  /// should take along its slot's groups due soon (ElectorCore). False when
  /// a node's slots share a script anyway: pulling renewals forward then
  /// only bunches them into bursts.
  virtual bool batches_by_slot() const noexcept { return true; }

  /// Confirm mode: the server refused WAIT on this connection (NOPERM, an
  /// unknown command). The transport has reported it once; groups then
  /// answer Replicated::too_few without a report of their own.
  virtual bool confirm_refused() const noexcept { return false; }
};

}  // namespace leasehold::detail
