#pragma once
// Small text helpers for the CLI's output and input: JSON strings, aligned
// tables, durations and timestamps.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace leasehold::cli {

/// `text` as a JSON string literal, quotes included. Bytes >= 0x80 pass
/// through (instance ids and group names are expected to be UTF-8).
std::string json_string(std::string_view text);

/// Rows as columns padded to their widest cell, two spaces apart, the last
/// column unpadded; each row ends with a newline.
std::string aligned_table(const std::vector<std::vector<std::string>>& rows);

/// A remaining TTL for people: "4.873s"; "no expiry" for -1.
std::string format_ttl(std::int64_t ttl_ms);

/// "2024-05-01T12:00:00.123Z".
std::string utc_timestamp(std::chrono::system_clock::time_point t);

/// Parses "250ms", "10s", "5m", "1h" or a bare number of seconds; `flag`
/// names the option in the error. Throws Failure(exit_usage) unless positive.
std::chrono::milliseconds parse_duration(std::string_view flag, std::string_view text);

/// Replaces control characters so that a value from Redis cannot garble the
/// terminal or forge extra lines.
std::string printable(std::string_view text);

}  // namespace leasehold::cli
