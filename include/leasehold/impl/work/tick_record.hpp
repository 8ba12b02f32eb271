#pragma once
// The once-per-tick record: the last tick each schedule of a group ran, kept
// in Redis beside the group's lease (hash `<lease key>:ticks`, one field per
// schedule, named by KeyLayout::tick_record_key), and the atomic claim that
// consults and advances it.

#include <leasehold/detail/tick_rule.hpp>
#include <leasehold/elector.hpp>

#include <boost/asio/awaitable.hpp>

#include <string>
#include <string_view>

namespace leasehold::detail {

enum class TickClaim {
  run,          ///< recorded: this instance runs the tick
  already_ran,  ///< the record holds this tick or a later one
  not_holder,   ///< the lease key does not hold this instance's id
  no_history,   ///< a catch-up claim, but the schedule never ran a tick
  failed,       ///< the script failed (logged); outcome unknown, so do not run
  not_confirmed,  ///< recorded, but too few replicas acknowledged it (confirm mode): do not run
};

std::string_view to_string(TickClaim claim) noexcept;

/// One script, atomically: if the lease key of `group` holds this instance's
/// id and the schedule's recorded tick is older than `tick`, record `tick`
/// and answer run. A `catch_up` claim (the misfire policy) also needs an
/// existing record. In confirm mode the record must also reach
/// confirm_replicas replicas, or the tick is not run (not_confirmed). Never cancelled: an Elector's command cannot be cancelled
/// without resetting its connection, so the claim always completes.
boost::asio::awaitable<TickClaim> claim_tick(Elector& elector, std::string group, std::string schedule,
                                             SysTime tick, bool catch_up);

}  // namespace leasehold::detail
