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
