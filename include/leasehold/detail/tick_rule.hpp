#pragma once
// When a schedule's ticks fall. A tick is identified by its nominal wall-clock
// instant, so that every instance of a fleet names the same tick alike.

#include <leasehold/cron.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace leasehold::detail {

using SysTime = std::chrono::system_clock::time_point;

class TickRule {
 public:
  virtual ~TickRule() = default;
  /// The first tick strictly after `t`.
  virtual SysTime next_after(SysTime t) const = 0;
  /// The latest tick in [from, to], if there is one.
  virtual std::optional<SysTime> latest_in(SysTime from, SysTime to) const;
  /// A name for the rule ("every 1000ms", "cron 0 * * * * utc"): the default
  /// name of a schedule's tick record.
  virtual std::string name() const = 0;
};

/// Ticks at every multiple of `interval` since the Unix epoch (so instances
/// agree on them without talking). Throws std::invalid_argument unless
/// interval > 0.
std::unique_ptr<TickRule> every_rule(std::chrono::milliseconds interval);

/// Ticks at each minute `expression` matches in `zone`.
std::unique_ptr<TickRule> cron_rule(CronExpression expression, TimeZone zone);

}  // namespace leasehold::detail
