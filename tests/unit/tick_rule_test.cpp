// Schedule tick rules: interval ticks aligned to the Unix epoch, cron ticks,
// and "the latest tick in a window" (coalescing late timers, misfire catch-up).

#include <leasehold/detail/tick_rule.hpp>

#include <gtest/gtest.h>

namespace unit_tick_rule_test {
namespace {

namespace lh = leasehold;
using namespace std::chrono;
using lh::detail::SysTime;

SysTime ms(long long v) { return SysTime(milliseconds(v)); }

TEST(EveryRule, TicksAreMultiplesOfTheIntervalSinceTheEpoch) {
  const auto rule = lh::detail::every_rule(milliseconds(1000));
  EXPECT_EQ(rule->next_after(ms(0)), ms(1000));
  EXPECT_EQ(rule->next_after(ms(999)), ms(1000));
  EXPECT_EQ(rule->next_after(ms(1000)), ms(2000));
  EXPECT_EQ(rule->next_after(ms(-1)), ms(0));  // before the epoch too
  EXPECT_EQ(rule->name(), "every 1000ms");
}

TEST(EveryRule, LatestInAWindow) {
  const auto rule = lh::detail::every_rule(milliseconds(300));
  EXPECT_EQ(rule->latest_in(ms(0), ms(1000)), ms(900));
  EXPECT_EQ(rule->latest_in(ms(900), ms(900)), ms(900));
  EXPECT_EQ(rule->latest_in(ms(901), ms(1199)), std::nullopt);
}

TEST(EveryRule, RejectsANonPositiveInterval) {
  EXPECT_THROW(lh::detail::every_rule(milliseconds(0)), std::invalid_argument);
  EXPECT_THROW(lh::detail::every_rule(milliseconds(-5)), std::invalid_argument);
}

TEST(CronRule, LatestInWalksForward) {
  const auto rule = lh::detail::cron_rule(lh::CronExpression::parse("*/5 * * * *"), lh::TimeZone::utc);
  const SysTime noon = sys_days(2024y / 1 / 1) + hours(12);
  EXPECT_EQ(rule->next_after(noon), noon + minutes(5));
  EXPECT_EQ(rule->latest_in(noon - minutes(12), noon + minutes(4)), noon);
  EXPECT_EQ(rule->latest_in(noon + seconds(1), noon + minutes(4)), std::nullopt);
  EXPECT_EQ(rule->name(), "cron */5 * * * * utc");
}

}  // namespace
}  // namespace unit_tick_rule_test
