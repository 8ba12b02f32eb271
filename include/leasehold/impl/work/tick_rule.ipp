#include <leasehold/detail/tick_rule.hpp>

#include <fmt/format.h>

#include <stdexcept>

namespace leasehold::detail {

namespace {

using std::chrono::nanoseconds;

class EveryRule final : public TickRule {
 public:
  explicit EveryRule(std::chrono::milliseconds interval) : interval_(interval) {
    if (interval <= std::chrono::milliseconds::zero()) {
      throw std::invalid_argument(fmt::format("every: interval must be positive, got {} ms", interval.count()));
    }
  }

  SysTime next_after(SysTime t) const override { return floor(t) + interval_; }

  std::optional<SysTime> latest_in(SysTime from, SysTime to) const override {
    const SysTime latest = floor(to);
    if (latest < from) return std::nullopt;
    return latest;
  }

  std::string name() const override { return fmt::format("every {}ms", interval_.count()); }

 private:
  // The latest multiple of the interval at or before t (also before the epoch).
  SysTime floor(SysTime t) const {
    const auto since_epoch = std::chrono::duration_cast<nanoseconds>(t.time_since_epoch());
    const nanoseconds step = interval_;
    auto n = since_epoch / step;
    if (since_epoch % step < nanoseconds::zero()) --n;
    return SysTime(std::chrono::duration_cast<SysTime::duration>(n * step));
  }

  std::chrono::milliseconds interval_;
};

class CronRule final : public TickRule {
 public:
  CronRule(CronExpression expression, TimeZone zone) : expression_(std::move(expression)), zone_(zone) {}

  SysTime next_after(SysTime t) const override { return expression_.next_after(t, zone_); }

  std::string name() const override {
    return fmt::format("cron {} {}", expression_.text(), zone_ == TimeZone::utc ? "utc" : "local");
  }

 private:
  CronExpression expression_;
  TimeZone zone_;
};

}  // namespace

std::optional<SysTime> TickRule::latest_in(SysTime from, SysTime to) const {
  // Walk forward from `from`; bounded, since callers pass short windows.
  std::optional<SysTime> latest;
  SysTime t = next_after(from - nanoseconds(1));
  for (int i = 0; i < 100'000 && t <= to; ++i) {
    latest = t;
    t = next_after(t);
  }
  return latest;
}

std::unique_ptr<TickRule> every_rule(std::chrono::milliseconds interval) {
  return std::make_unique<EveryRule>(interval);
}

std::unique_ptr<TickRule> cron_rule(CronExpression expression, TimeZone zone) {
  return std::make_unique<CronRule>(std::move(expression), zone);
}

}  // namespace leasehold::detail
