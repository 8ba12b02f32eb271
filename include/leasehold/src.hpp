#pragma once
// leasehold's compiled part, for the header-mostly mode: include this file in
// exactly one translation unit of a program and link leasehold's dependencies
// (hiredis, fmt, Boost.URL, OpenSSL when LEASEHOLD_HAS_TLS, threads):
//
//   // leasehold.cpp
//   #include <leasehold/src.hpp>
//
// The CMake target leasehold::leasehold is built from this same file
// (src/leasehold.cpp). Only this file and the headers under
// leasehold/impl/ see hiredis, OpenSSL, fmt and Boost.URL; the public
// headers never include them. Layers in include order, each using only the
// ones above it.

#include <leasehold/config.hpp>

// base
#include <leasehold/impl/base/error.ipp>
#include <leasehold/impl/base/incarnation.ipp>
#include <leasehold/impl/base/log.ipp>
#include <leasehold/impl/base/quoted.ipp>
#include <leasehold/impl/base/revoke_reason.ipp>
// protocol
#include <leasehold/impl/protocol/codec.ipp>
#include <leasehold/impl/protocol/key_slot.ipp>
#include <leasehold/impl/protocol/reply.ipp>
#include <leasehold/impl/protocol/script.ipp>
#include <leasehold/impl/protocol/script_arguments.ipp>
#include <leasehold/impl/protocol/slot_tags.ipp>
// options
#include <leasehold/impl/options/elector_options.ipp>
#include <leasehold/impl/options/key_layout.ipp>
#include <leasehold/impl/options/redis_options.ipp>
#include <leasehold/impl/options/url_parser.ipp>
// redis
#include <leasehold/impl/redis/client.ipp>
#include <leasehold/impl/redis/multiplexer.ipp>
#include <leasehold/impl/redis/reconnect.ipp>
#include <leasehold/impl/redis/sentinel_resolver.ipp>
#include <leasehold/impl/redis/sentinel_rules.ipp>
#include <leasehold/impl/redis/sentinel_watcher.ipp>
#include <leasehold/impl/redis/stream.ipp>
#include <leasehold/impl/redis/subscriber.ipp>
#include <leasehold/impl/redis/watchdog.ipp>
// cluster
#include <leasehold/impl/cluster/cluster_client.ipp>
#include <leasehold/impl/cluster/cluster_notices.ipp>
#include <leasehold/impl/cluster/redirect.ipp>
#include <leasehold/impl/cluster/slot_map.ipp>
#include <leasehold/impl/cluster/slot_map_replies.ipp>
// lease
#include <leasehold/impl/lease/lease_machine.ipp>
#include <leasehold/impl/lease/lease_replies.ipp>
#include <leasehold/impl/lease/lease_scripts.ipp>
#include <leasehold/impl/lease/term.ipp>
// core
#include <leasehold/impl/core/elector_core.ipp>
#include <leasehold/impl/core/group_applier.ipp>
#include <leasehold/impl/core/group_state.ipp>
// transport
#include <leasehold/impl/transport/command_route.ipp>
#include <leasehold/impl/transport/redis_transport.ipp>
#include <leasehold/impl/transport/slot_markers.ipp>
// observe
#include <leasehold/impl/observe/connection_reports.ipp>
#include <leasehold/impl/observe/health.ipp>
#include <leasehold/impl/observe/metrics.ipp>
// elector
#include <leasehold/impl/elector/elector.ipp>
// work
#include <leasehold/impl/work/cron.ipp>
#include <leasehold/impl/work/leader_work.ipp>
#include <leasehold/impl/work/scheduler.ipp>
#include <leasehold/impl/work/tick_record.ipp>
#include <leasehold/impl/work/tick_rule.ipp>
