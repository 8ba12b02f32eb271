#pragma once
// What metrics() and health() read from an elector's parts. Defined beside
// the types they fill: metrics.cpp and health.cpp.

#include <leasehold/impl/core/group_state.hpp>

#include <leasehold/health.hpp>
#include <leasehold/metrics.hpp>
#include <leasehold/redis/client.hpp>

#include <string>
#include <vector>

namespace leasehold::detail {

/// One group's counters and state (the elector's executor only).
GroupMetrics group_metrics(const GroupState& group, TimePoint now);
/// One connection's counters (the elector's executor only).
ConnectionMetrics connection_metrics(std::string name, const redis::Client& client, TimePoint now);
/// Adds the groups' heartbeat lag and failing count to `health` (any thread).
void add_group_health(Health& health, const std::vector<GroupState*>& groups, TimePoint now);

}  // namespace leasehold::detail
