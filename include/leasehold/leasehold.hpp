#pragma once
// leasehold: lease-based leader election on Redis. Include this one header.

#include <leasehold/cron.hpp>
#include <leasehold/elector.hpp>
#include <leasehold/elector_options.hpp>
#include <leasehold/error.hpp>
#include <leasehold/events.hpp>
#include <leasehold/leader_only.hpp>
#include <leasehold/log.hpp>
#include <leasehold/redis_options.hpp>
#include <leasehold/run_while_leader.hpp>
#include <leasehold/scheduler.hpp>
#include <leasehold/term.hpp>
#include <leasehold/version.hpp>

/// \namespace leasehold
/// Lease-based leader election on Redis: the Elector and its options, events,
/// health and metrics, and the helpers that run work on the leader only
/// (leader_only, run_while_leader, the Scheduler).

/// \namespace leasehold::redis
/// The small Asio-native Redis client the Elector runs on: one connection with
/// reconnects, pipelined requests, Lua scripts and pub/sub. hiredis serves as
/// the RESP codec only.
