#pragma once
// What metrics() and health() read from an elector's parts. Defined beside
// the types they fill: metrics.ipp and health.ipp.

#include <leasehold/impl/core/group_state.hpp>
#include <leasehold/impl/transport/command_route.hpp>

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
/// The counters of the route's connection (a cluster: of every node's,
/// summed; connected while every master of the slot map is).
ConnectionMetrics route_metrics(const CommandRoute& route, std::string name, TimePoint now);
/// A cluster: each node's connection, with its address and role; else empty.
std::vector<ConnectionMetrics> node_metrics(const CommandRoute& route, TimePoint now);
/// Adds the groups' heartbeat lag and failing count to `health` (any thread).
void add_group_health(Health& health, const std::vector<GroupState*>& groups, TimePoint now);

}  // namespace leasehold::detail
