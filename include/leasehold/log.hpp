#pragma once
// leasehold's log output: one process-wide sink with a level threshold.
// Default: warnings and errors to stderr. Messages never contain passwords.

#include <functional>
#include <string_view>

namespace leasehold {

enum class LogLevel { debug = 0, info = 1, warning = 2, error = 3, off = 4 };

std::string_view to_string(LogLevel level) noexcept;

/// Receives every message at or above the threshold; may be called from any
/// of leasehold's threads, so it must be thread-safe.
using LogSink = std::function<void(LogLevel level, std::string_view message)>;

/// Replaces the sink (nullptr restores the stderr default). Thread-safe.
void set_log_sink(LogSink sink);
/// Sets the threshold (default LogLevel::warning). Thread-safe.
void set_log_level(LogLevel level) noexcept;
LogLevel log_level() noexcept;

/// Writes `message` to the sink if `level` passes the threshold.
void log(LogLevel level, std::string_view message);

}  // namespace leasehold
