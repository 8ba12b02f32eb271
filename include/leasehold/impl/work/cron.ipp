#include <leasehold/cron.hpp>

#include <leasehold/impl/base/quoted.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <ctime>
#include <optional>
#include <vector>

namespace leasehold {

namespace {

using namespace std::chrono;

constexpr std::array<std::string_view, 12> month_names{"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                                       "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
constexpr std::array<std::string_view, 7> weekday_names{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};

struct FieldSpec {
  std::string_view name;
  int min;
  int max;
  const std::string_view* names = nullptr;  // names[i] stands for min + i
  std::size_t name_count = 0;
  std::string_view names_hint = {};
};

constexpr std::array<FieldSpec, 5> field_specs{{
    {"minute", 0, 59},
    {"hour", 0, 23},
    {"day-of-month", 1, 31},
    {"month", 1, 12, month_names.data(), month_names.size(), "a month name (JAN-DEC)"},
    {"day-of-week", 0, 7, weekday_names.data(), weekday_names.size(), "a day name (SUN-SAT)"},
}};

// What is wrong inside one field; parse() wraps it with the expression and field.
struct FieldProblem {
  std::string text;
};

[[noreturn]] void problem(std::string text) { throw FieldProblem{std::move(text)}; }

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::toupper(static_cast<unsigned char>(x)) == std::toupper(static_cast<unsigned char>(y));
         });
}

int parse_value(const FieldSpec& f, std::string_view s) {
  if (detail::all_digits(s)) {
    int v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || end != s.data() + s.size() || v < f.min || v > f.max) {
      problem(fmt::format("value {} out of range {}-{}", s, f.min, f.max));
    }
    return v;
  }
  for (std::size_t i = 0; i < f.name_count; ++i) {
    if (iequals(s, f.names[i])) return f.min + static_cast<int>(i);
  }
  if (f.names != nullptr) problem(fmt::format("\"{}\" is neither a number nor {}", s, f.names_hint));
  problem(fmt::format("\"{}\" is not a number", s));
}

int parse_step(const FieldSpec& f, std::string_view s) {
  const int span = f.max - f.min + 1;
  if (!detail::all_digits(s)) problem(fmt::format("step \"{}\" is not a number", s));
  int v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || v > span) {
    problem(fmt::format("step {} out of range 1-{}", s, span));
  }
  if (v < 1) problem("step must be at least 1");
  return v;
}

// One list element: `*`, `v`, `a-b`, each optionally followed by `/step`.
std::uint64_t parse_element(const FieldSpec& f, std::string_view e) {
  if (e.empty()) problem("empty list element");
  std::string_view range = e;
  std::optional<std::string_view> step_text;
  if (const auto slash = e.find('/'); slash != std::string_view::npos) {
    range = e.substr(0, slash);
    step_text = e.substr(slash + 1);
    if (range.empty()) problem("missing value before '/'");
    if (step_text->empty()) problem("missing step after '/'");
  }
  int low = 0;
  int high = 0;
  if (range == "*") {
    low = f.min;
    high = f.max;
  } else if (const auto dash = range.find('-'); dash != std::string_view::npos) {
    const auto a = range.substr(0, dash);
    const auto b = range.substr(dash + 1);
    if (a.empty()) problem("missing range start before '-'");
    if (b.empty()) problem("missing range end after '-'");
    low = parse_value(f, a);
    high = parse_value(f, b);
    if (low > high) problem(fmt::format("range {}-{} starts after it ends", a, b));
  } else {
    low = parse_value(f, range);
    high = step_text ? f.max : low;  // `a/n` runs from a to the maximum
  }
  const int step = step_text ? parse_step(f, *step_text) : 1;
  std::uint64_t bits = 0;
  for (int v = low; v <= high; v += step) bits |= std::uint64_t{1} << v;
  return bits;
}

std::uint64_t parse_field(const FieldSpec& f, std::string_view text) {
  std::uint64_t bits = 0;
  for (;;) {
    const auto comma = text.find(',');
    bits |= parse_element(f, text.substr(0, comma));
    if (comma == std::string_view::npos) return bits;
    text.remove_prefix(comma + 1);
  }
}

std::vector<std::string_view> split_fields(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    const std::size_t start = i;
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i > start) out.push_back(text.substr(start, i - start));
  }
  return out;
}

template <std::size_t N>
std::bitset<N> to_bits(std::uint64_t bits) {
  return std::bitset<N>(bits & ((std::uint64_t{1} << N) - 1));
}

// ---- calendar walking ---------------------------------------------------------

struct Civil {
  year_month_day date;
  int hour = 0;
  int minute = 0;
};

void next_day(Civil& c) {
  c.date = year_month_day(sys_days(c.date) + days(1));
  c.hour = 0;
  c.minute = 0;
}
void next_month(Civil& c) {
  const year_month ym = c.date.year() / c.date.month() + months(1);
  c.date = ym / day(1);
  c.hour = 0;
  c.minute = 0;
}
void next_hour(Civil& c) {
  c.minute = 0;
  if (++c.hour == 24) next_day(c);
}
void next_minute(Civil& c) {
  if (++c.minute == 60) next_hour(c);
}

Civil civil_of(system_clock::time_point t, TimeZone zone) {
  if (zone == TimeZone::utc) {
    const auto midnight = floor<days>(t);
    const auto minute_of_day = static_cast<int>(floor<minutes>(t - midnight).count());
    return {year_month_day(midnight), minute_of_day / 60, minute_of_day % 60};
  }
  const std::time_t tt = system_clock::to_time_t(floor<std::chrono::seconds>(t));
  std::tm tm{};
  localtime_r(&tt, &tm);
  return {year(tm.tm_year + 1900) / month(static_cast<unsigned>(tm.tm_mon + 1)) /
              day(static_cast<unsigned>(tm.tm_mday)),
          tm.tm_hour, tm.tm_min};
}

// The instant of a civil minute; nullopt for a local time that does not exist.
std::optional<system_clock::time_point> instant_of(const Civil& c, TimeZone zone) {
  if (zone == TimeZone::utc) return sys_days(c.date) + hours(c.hour) + minutes(c.minute);
  std::tm tm{};
  tm.tm_year = static_cast<int>(c.date.year()) - 1900;
  tm.tm_mon = static_cast<int>(static_cast<unsigned>(c.date.month())) - 1;
  tm.tm_mday = static_cast<int>(static_cast<unsigned>(c.date.day()));
  tm.tm_hour = c.hour;
  tm.tm_min = c.minute;
  tm.tm_isdst = -1;
  const std::time_t tt = std::mktime(&tm);
  // mktime moves a time inside a daylight-saving gap to another hour: not a match.
  if (tt == static_cast<std::time_t>(-1) || tm.tm_hour != c.hour || tm.tm_min != c.minute) return std::nullopt;
  return system_clock::from_time_t(tt);
}

constexpr int max_days_in_month[13] = {0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

}  // namespace

CronError::CronError(const std::string& message) : std::invalid_argument(detail::printable(message, 400)) {}

CronExpression CronExpression::parse(std::string_view text) {
  const auto fields = split_fields(text);
  if (fields.size() != field_specs.size()) {
    throw CronError(fmt::format(
        "invalid cron expression \"{}\": expected 5 fields (minute hour day-of-month month day-of-week), got {}",
        text, fields.size()));
  }
  std::array<std::uint64_t, 5> bits{};
  for (std::size_t i = 0; i < fields.size(); ++i) {
    try {
      bits[i] = parse_field(field_specs[i], fields[i]);
    } catch (const FieldProblem& p) {
      throw CronError(fmt::format("invalid cron expression \"{}\": {} field \"{}\": {}", text,
                                  field_specs[i].name, fields[i], p.text));
    }
  }
  CronExpression e;
  e.text_ = std::string(text);
  e.minutes_ = to_bits<60>(bits[0]);
  e.hours_ = to_bits<24>(bits[1]);
  e.days_of_month_ = to_bits<32>(bits[2]);
  e.months_ = to_bits<13>(bits[3]);
  e.weekdays_ = to_bits<7>(bits[4] | (bits[4] >> 7));  // 7 is Sunday too
  e.any_day_of_month_ = fields[2].front() == '*';
  e.any_weekday_ = fields[4].front() == '*';

  // Days that no selected month has (30 February) would never fire.
  if (!e.any_day_of_month_ && e.any_weekday_) {
    bool possible = false;
    for (int m = 1; m <= 12 && !possible; ++m) {
      for (int d = 1; d <= max_days_in_month[m] && !possible; ++d) possible = e.months_[m] && e.days_of_month_[d];
    }
    if (!possible) {
      throw CronError(fmt::format(
          "invalid cron expression \"{}\": day-of-month field \"{}\": no selected month has such a day, so it "
          "never fires",
          text, fields[2]));
    }
  }
  return e;
}

bool CronExpression::day_matches(int day_of_month, int month, int weekday) const {
  if (!months_[static_cast<std::size_t>(month)]) return false;
  const bool dom = days_of_month_[static_cast<std::size_t>(day_of_month)];
  const bool dow = weekdays_[static_cast<std::size_t>(weekday)];
  if (any_day_of_month_ || any_weekday_) return dom && dow;
  return dom || dow;
}

system_clock::time_point CronExpression::next_after(system_clock::time_point t, TimeZone zone) const {
  Civil c = civil_of(t, zone);
  next_minute(c);
  // Each step skips a whole month, day, hour or minute that cannot match, so
  // even a 29 February eight years away is a few thousand steps.
  for (int steps = 0; steps < 1'000'000; ++steps) {
    const int m = static_cast<int>(static_cast<unsigned>(c.date.month()));
    if (!months_[static_cast<std::size_t>(m)]) {
      next_month(c);
      continue;
    }
    const int dow = static_cast<int>(std::chrono::weekday(sys_days(c.date)).c_encoding());
    if (!day_matches(static_cast<int>(static_cast<unsigned>(c.date.day())), m, dow)) {
      next_day(c);
      continue;
    }
    if (!hours_[static_cast<std::size_t>(c.hour)]) {
      next_hour(c);
      continue;
    }
    if (!minutes_[static_cast<std::size_t>(c.minute)]) {
      next_minute(c);
      continue;
    }
    if (auto at = instant_of(c, zone); at && *at > t) return *at;
    next_minute(c);
  }
  throw std::logic_error(fmt::format("cron expression \"{}\": no next time found", text_));
}

}  // namespace leasehold
