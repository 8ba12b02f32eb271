#include "text.hpp"

#include <leasehold/impl/base/quoted.hpp>

#include "exit_code.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <ctime>

namespace leasehold::cli {

std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (byte < 0x20 || byte == 0x7f) out += fmt::format("\\u{:04x}", byte);
        else out += c;
    }
  }
  out += '"';
  return out;
}

std::string aligned_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()));
    for (std::size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) {
      out += row[i];
      if (i + 1 < row.size()) out.append(widths[i] - row[i].size() + 2, ' ');
    }
    out += '\n';
  }
  return out;
}

std::string format_ttl(std::int64_t ttl_ms) {
  if (ttl_ms < 0) return "no expiry";
  return fmt::format("{}.{:03}s", ttl_ms / 1000, ttl_ms % 1000);
}

std::string utc_timestamp(std::chrono::system_clock::time_point t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, ms % 1000);
}

std::chrono::milliseconds parse_duration(std::string_view flag, std::string_view text) {
  std::int64_t number = 0;
  const char* end = text.data() + text.size();
  auto [rest, ec] = std::from_chars(text.data(), end, number);
  const std::string_view unit(rest, static_cast<std::size_t>(end - rest));
  std::int64_t scale = 0;
  if (unit == "ms") scale = 1;
  else if (unit == "s" || unit.empty()) scale = 1000;
  else if (unit == "m") scale = 60'000;
  else if (unit == "h") scale = 3'600'000;
  // A week is far beyond any use and far from overflow.
  constexpr std::int64_t max_ms = 7LL * 24 * 3'600'000;
  if (ec != std::errc{} || rest == text.data() || scale == 0 || number <= 0 || number > max_ms / scale) {
    throw Failure(exit_usage, fmt::format("{} needs a positive duration such as 500ms, 10s or 5m, got \"{}\"",
                                          flag, printable(text)));
  }
  return std::chrono::milliseconds(number * scale);
}

std::string printable(std::string_view text) { return detail::printable(text); }

}  // namespace leasehold::cli
