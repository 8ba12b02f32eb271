#pragma once
// A standard 5-field cron expression: minute hour day-of-month month day-of-week.
//
//   auto nightly = lh::CronExpression::parse("30 2 * * MON-FRI");
//   auto next = nightly.next_after(std::chrono::system_clock::now(), lh::TimeZone::utc);
//
// Each field is `*`, a value, a range `a-b`, a step `*/n`, `a-b/n` or `a/n`
// (from a to the field's maximum), or a comma-separated list of those.
// Months accept JAN-DEC and days of the week SUN-SAT (any case); day of week
// 0 and 7 are both Sunday. As in Vixie cron, when both day fields are
// restricted a day matches if either matches; a field that starts with `*`
// counts as unrestricted (so `*/2` in day-of-month leaves day-of-week alone).

#include <bitset>
#include <chrono>
#include <stdexcept>
#include <string>
#include <string_view>

namespace leasehold {

/// The clock a cron expression is read in.
enum class TimeZone {
  utc,    ///< Coordinated Universal Time: no daylight-saving jumps
  local,  ///< the process's local time zone (TZ), through localtime_r/mktime
};

/// A malformed cron expression. what() names the expression, the bad field
/// and the problem, e.g. `invalid cron expression "61 * * * *": minute field
/// "61": value 61 out of range 0-59`.
class CronError : public std::invalid_argument {
 public:
  /// Control characters in `message` are escaped as `\xNN` and it is bounded
  /// in length, so that a hostile expression cannot forge log lines.
  explicit CronError(const std::string& message);
};

/// A parsed cron expression (the syntax is described at the top of this
/// header). A value type: copyable, and every const call is thread-safe.
class CronExpression {
 public:
  /// Parses `text`. Throws CronError for a malformed expression or one that
  /// can never fire (such as "0 0 30 2 *").
  static CronExpression parse(std::string_view text);

  /// The first matching minute strictly after `t`. In TimeZone::local, a
  /// local time that does not exist (skipped by a daylight-saving jump) is
  /// not run; a repeated one runs once.
  std::chrono::system_clock::time_point next_after(std::chrono::system_clock::time_point t, TimeZone zone) const;

  /// The expression as given.
  const std::string& text() const noexcept { return text_; }

 private:
  bool day_matches(int day_of_month, int month, int weekday) const;

  std::string text_;
  std::bitset<60> minutes_;
  std::bitset<24> hours_;
  std::bitset<32> days_of_month_;  // 1-31
  std::bitset<13> months_;         // 1-12
  std::bitset<7> weekdays_;        // 0-6, Sunday = 0
  bool any_day_of_month_ = false;
  bool any_weekday_ = false;
};

}  // namespace leasehold
