// The cron parser and next-fire computation: valid expressions, calendar
// boundaries (month and year ends, leap years, centuries), the day-of-month /
// day-of-week rule, local time through TZ, and one message per kind of error.

#include <leasehold/cron.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <optional>
#include <string>

namespace unit_cron_test {
namespace {

namespace lh = leasehold;
using namespace std::chrono;

using SysTime = system_clock::time_point;

SysTime at(year_month_day date, int h = 0, int m = 0, int s = 0) {
  return sys_days(date) + hours(h) + minutes(m) + seconds(s);
}

SysTime next_utc(std::string_view expression, SysTime after) {
  return lh::CronExpression::parse(expression).next_after(after, lh::TimeZone::utc);
}

std::string parse_error(std::string_view expression) {
  try {
    lh::CronExpression::parse(expression);
  } catch (const lh::CronError& e) {
    return e.what();
  }
  return "(parsed)";
}

// Sets TZ for one test and restores it afterwards.
class ScopedTimeZone {
 public:
  explicit ScopedTimeZone(const char* tz) {
    if (const char* old = std::getenv("TZ")) previous_ = old;
    ::setenv("TZ", tz, 1);
    ::tzset();
  }
  ~ScopedTimeZone() {
    if (previous_) {
      ::setenv("TZ", previous_->c_str(), 1);
    } else {
      ::unsetenv("TZ");
    }
    ::tzset();
  }
  ScopedTimeZone(const ScopedTimeZone&) = delete;
  ScopedTimeZone& operator=(const ScopedTimeZone&) = delete;

 private:
  std::optional<std::string> previous_;
};

TEST(Cron, EveryMinuteIsStrictlyAfter) {
  EXPECT_EQ(next_utc("* * * * *", at(2024y / 5 / 1, 10, 0, 0)), at(2024y / 5 / 1, 10, 1));
  EXPECT_EQ(next_utc("* * * * *", at(2024y / 5 / 1, 10, 0, 30)), at(2024y / 5 / 1, 10, 1));
  EXPECT_EQ(next_utc("* * * * *", at(2024y / 5 / 1, 10, 0, 0) - milliseconds(1)), at(2024y / 5 / 1, 10, 0));
}

TEST(Cron, ListsRangesStepsAndNames) {
  const auto t = at(2024y / 1 / 1, 0, 0);  // a Monday
  EXPECT_EQ(next_utc("*/15 * * * *", t), at(2024y / 1 / 1, 0, 15));
  EXPECT_EQ(next_utc("5/20 * * * *", t), at(2024y / 1 / 1, 0, 5));  // 5, 25, 45
  EXPECT_EQ(next_utc("5/20 * * * *", at(2024y / 1 / 1, 0, 45)), at(2024y / 1 / 1, 1, 5));
  EXPECT_EQ(next_utc("0 9-17/4 * * *", t), at(2024y / 1 / 1, 9, 0));
  EXPECT_EQ(next_utc("0 9-17/4 * * *", at(2024y / 1 / 1, 13, 0)), at(2024y / 1 / 1, 17, 0));
  EXPECT_EQ(next_utc("0 9-17/4 * * *", at(2024y / 1 / 1, 17, 0)), at(2024y / 1 / 2, 9, 0));
  EXPECT_EQ(next_utc("10,20,40 * * * *", at(2024y / 1 / 1, 0, 20)), at(2024y / 1 / 1, 0, 40));
  EXPECT_EQ(next_utc("0 0 1 mar-may,Nov *", t), at(2024y / 3 / 1));
  EXPECT_EQ(next_utc("0 0 1 mar-may,Nov *", at(2024y / 6 / 1)), at(2024y / 11 / 1));
  EXPECT_EQ(next_utc("0 12 * * SAT,sun", t), at(2024y / 1 / 6, 12, 0));
  EXPECT_EQ(next_utc("0 12 * * MON-FRI", at(2024y / 1 / 5, 12, 0)), at(2024y / 1 / 8, 12, 0));  // Fri -> Mon
}

TEST(Cron, SundayIsZeroAndSeven) {
  const auto monday = at(2024y / 9 / 2);
  EXPECT_EQ(next_utc("0 0 * * 7", monday), at(2024y / 9 / 8));
  EXPECT_EQ(next_utc("0 0 * * 0", monday), at(2024y / 9 / 8));
  EXPECT_EQ(next_utc("0 0 * * 5-7", monday), at(2024y / 9 / 6));  // Friday to Sunday
}

TEST(Cron, MonthAndYearBoundaries) {
  EXPECT_EQ(next_utc("0 0 1 1 *", at(2023y / 12 / 31, 23, 59, 30)), at(2024y / 1 / 1));
  EXPECT_EQ(next_utc("30 2 * * *", at(2024y / 1 / 31, 3, 0)), at(2024y / 2 / 1, 2, 30));
  EXPECT_EQ(next_utc("59 23 31 12 *", at(2024y / 12 / 31, 23, 59)), at(2025y / 12 / 31, 23, 59));
  EXPECT_EQ(next_utc("0 0 31 * *", at(2024y / 4 / 1)), at(2024y / 5 / 31));  // April has 30 days
  EXPECT_EQ(next_utc("0 0 30 * *", at(2024y / 1 / 31)), at(2024y / 3 / 30));  // skips February
  EXPECT_EQ(next_utc("* * * * *", at(2024y / 12 / 31, 23, 59, 59)), at(2025y / 1 / 1, 0, 0));
}

TEST(Cron, LeapDaysAndCenturies) {
  EXPECT_EQ(next_utc("0 0 29 2 *", at(2023y / 3 / 1)), at(2024y / 2 / 29));
  EXPECT_EQ(next_utc("0 0 29 2 *", at(2024y / 3 / 1)), at(2028y / 2 / 29));
  EXPECT_EQ(next_utc("0 0 29 2 *", at(2096y / 3 / 1)), at(2104y / 2 / 29));  // 2100 is not a leap year
  EXPECT_EQ(next_utc("0 0 29 2 *", at(1999y / 3 / 1)), at(2000y / 2 / 29));  // 2000 is
}

TEST(Cron, BothDayFieldsRestrictedMeansEither) {
  // Friday the 13th style: any Friday, or any 13th.
  EXPECT_EQ(next_utc("0 0 13 * FRI", at(2024y / 9 / 1)), at(2024y / 9 / 6));   // a Friday
  EXPECT_EQ(next_utc("0 0 13 * FRI", at(2024y / 9 / 6)), at(2024y / 9 / 13));  // the 13th (also a Friday)
  EXPECT_EQ(next_utc("0 0 13 * FRI", at(2024y / 9 / 20)), at(2024y / 9 / 27));
  EXPECT_EQ(next_utc("0 0 1 * MON", at(2024y / 9 / 20)), at(2024y / 9 / 23));  // Monday before the 1st
}

TEST(Cron, AFieldStartingWithStarLeavesTheOtherDayFieldInCharge) {
  // `*/10` counts as unrestricted: days 1, 11, 21, 31 that are Mondays.
  EXPECT_EQ(next_utc("0 0 */10 * MON", at(2023y / 12 / 31)), at(2024y / 1 / 1));
  EXPECT_EQ(next_utc("0 0 */10 * MON", at(2024y / 1 / 1)), at(2024y / 3 / 11));
  // A star day-of-week leaves day-of-month alone.
  EXPECT_EQ(next_utc("0 0 15 * *", at(2024y / 1 / 1)), at(2024y / 1 / 15));
}

TEST(Cron, WhitespaceAndTextAreKept) {
  const auto e = lh::CronExpression::parse("  0\t12  * * *  ");
  EXPECT_EQ(e.text(), "  0\t12  * * *  ");
  EXPECT_EQ(e.next_after(at(2024y / 1 / 1), lh::TimeZone::utc), at(2024y / 1 / 1, 12, 0));
}

TEST(Cron, LocalTimeFollowsTz) {
  ScopedTimeZone tz("LHT-2");  // POSIX: two hours east of UTC, no daylight saving
  const auto e = lh::CronExpression::parse("0 9 * * *");
  EXPECT_EQ(e.next_after(at(2024y / 5 / 1), lh::TimeZone::local), at(2024y / 5 / 1, 7, 0));
  EXPECT_EQ(e.next_after(at(2024y / 5 / 1, 7, 0), lh::TimeZone::local), at(2024y / 5 / 2, 7, 0));
  EXPECT_EQ(e.next_after(at(2024y / 5 / 1), lh::TimeZone::utc), at(2024y / 5 / 1, 9, 0));
  // Midnight local is the previous UTC day.
  EXPECT_EQ(lh::CronExpression::parse("0 0 1 * *").next_after(at(2024y / 5 / 1), lh::TimeZone::local),
            at(2024y / 5 / 31, 22, 0));
}

TEST(Cron, LocalTimeSkippedByDaylightSavingDoesNotRun) {
  ScopedTimeZone tz("CET-1CEST,M3.5.0,M10.5.0/3");  // Central Europe: 02:00 -> 03:00 on 31 March 2024
  const auto skipped = lh::CronExpression::parse("30 2 * * *");
  EXPECT_EQ(skipped.next_after(at(2024y / 3 / 30, 12, 0), lh::TimeZone::local), at(2024y / 4 / 1, 0, 30));
  const auto after_jump = lh::CronExpression::parse("0 3 * * *");
  EXPECT_EQ(after_jump.next_after(at(2024y / 3 / 30, 12, 0), lh::TimeZone::local), at(2024y / 3 / 31, 1, 0));
  const auto before_jump = lh::CronExpression::parse("0 1 * * *");
  EXPECT_EQ(before_jump.next_after(at(2024y / 3 / 30, 12, 0), lh::TimeZone::local), at(2024y / 3 / 31, 0, 0));
}

struct InvalidCase {
  const char* expression;
  const char* message;
};

class CronInvalid : public testing::TestWithParam<InvalidCase> {};

TEST_P(CronInvalid, NamesTheFieldAndTheProblem) {
  EXPECT_EQ(parse_error(GetParam().expression), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Messages, CronInvalid,
    testing::Values(
        InvalidCase{"", "invalid cron expression \"\": expected 5 fields (minute hour day-of-month month "
                        "day-of-week), got 0"},
        InvalidCase{"* * * *", "invalid cron expression \"* * * *\": expected 5 fields (minute hour "
                               "day-of-month month day-of-week), got 4"},
        InvalidCase{"0 0 * * * *", "invalid cron expression \"0 0 * * * *\": expected 5 fields (minute hour "
                                   "day-of-month month day-of-week), got 6"},
        InvalidCase{"61 * * * *",
                    "invalid cron expression \"61 * * * *\": minute field \"61\": value 61 out of range 0-59"},
        InvalidCase{"0 24 * * *",
                    "invalid cron expression \"0 24 * * *\": hour field \"24\": value 24 out of range 0-23"},
        InvalidCase{"0 0 0 * *", "invalid cron expression \"0 0 0 * *\": day-of-month field \"0\": value 0 out "
                                 "of range 1-31"},
        InvalidCase{"0 0 1,32 * *", "invalid cron expression \"0 0 1,32 * *\": day-of-month field \"1,32\": "
                                    "value 32 out of range 1-31"},
        InvalidCase{"0 0 * 13 *",
                    "invalid cron expression \"0 0 * 13 *\": month field \"13\": value 13 out of range 1-12"},
        InvalidCase{"0 0 * * 8", "invalid cron expression \"0 0 * * 8\": day-of-week field \"8\": value 8 out "
                                 "of range 0-7"},
        InvalidCase{"99999999999 * * * *", "invalid cron expression \"99999999999 * * * *\": minute field "
                                           "\"99999999999\": value 99999999999 out of range 0-59"},
        InvalidCase{"30-10 * * * *", "invalid cron expression \"30-10 * * * *\": minute field \"30-10\": range "
                                     "30-10 starts after it ends"},
        InvalidCase{"*/0 * * * *",
                    "invalid cron expression \"*/0 * * * *\": minute field \"*/0\": step must be at least 1"},
        InvalidCase{"*/61 * * * *",
                    "invalid cron expression \"*/61 * * * *\": minute field \"*/61\": step 61 out of range 1-60"},
        InvalidCase{"*/x * * * *",
                    "invalid cron expression \"*/x * * * *\": minute field \"*/x\": step \"x\" is not a number"},
        InvalidCase{"*/ * * * *",
                    "invalid cron expression \"*/ * * * *\": minute field \"*/\": missing step after '/'"},
        InvalidCase{"/5 * * * *",
                    "invalid cron expression \"/5 * * * *\": minute field \"/5\": missing value before '/'"},
        InvalidCase{"1- * * * *",
                    "invalid cron expression \"1- * * * *\": minute field \"1-\": missing range end after '-'"},
        InvalidCase{"-1 * * * *",
                    "invalid cron expression \"-1 * * * *\": minute field \"-1\": missing range start before '-'"},
        InvalidCase{"1,,2 * * * *",
                    "invalid cron expression \"1,,2 * * * *\": minute field \"1,,2\": empty list element"},
        InvalidCase{"1, * * * *",
                    "invalid cron expression \"1, * * * *\": minute field \"1,\": empty list element"},
        InvalidCase{"a * * * *", "invalid cron expression \"a * * * *\": minute field \"a\": \"a\" is not a number"},
        InvalidCase{"0 MON * * *",
                    "invalid cron expression \"0 MON * * *\": hour field \"MON\": \"MON\" is not a number"},
        InvalidCase{"0 0 * foo *", "invalid cron expression \"0 0 * foo *\": month field \"foo\": \"foo\" is "
                                   "neither a number nor a month name (JAN-DEC)"},
        InvalidCase{"0 0 * * funday", "invalid cron expression \"0 0 * * funday\": day-of-week field \"funday\": "
                                      "\"funday\" is neither a number nor a day name (SUN-SAT)"},
        InvalidCase{"0 0 * JAN-FOO *", "invalid cron expression \"0 0 * JAN-FOO *\": month field \"JAN-FOO\": "
                                       "\"FOO\" is neither a number nor a month name (JAN-DEC)"},
        InvalidCase{"1-2-3 * * * *", "invalid cron expression \"1-2-3 * * * *\": minute field \"1-2-3\": \"2-3\" "
                                     "is not a number"},
        InvalidCase{"0 0 30 2 *", "invalid cron expression \"0 0 30 2 *\": day-of-month field \"30\": no "
                                  "selected month has such a day, so it never fires"},
        InvalidCase{"0 0 31 4,6,9,11 *", "invalid cron expression \"0 0 31 4,6,9,11 *\": day-of-month field "
                                         "\"31\": no selected month has such a day, so it never fires"}));

TEST(Cron, ErrorsAreInvalidArguments) {
  EXPECT_THROW(lh::CronExpression::parse("61 * * * *"), std::invalid_argument);
  // 31 February never happens, but with a restricted day of week the OR rule still fires on Mondays.
  EXPECT_NO_THROW(lh::CronExpression::parse("0 0 31 2 MON"));
}

}  // namespace
}  // namespace unit_cron_test
