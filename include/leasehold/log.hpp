#pragma once
// leasehold's log output: one process-wide sink with a level threshold.
// Default: warnings and errors to stderr, as "leasehold <level>: <message>".
// Messages are complete sentences formatted with fmt; each names the elector
// ("elector <instance id>: ...") and, when it concerns one, the group
// ("group \"<name>\": ..."). They never contain passwords. docs/operations.md
// lists what is logged at which level.

#include <functional>
#include <string_view>

namespace leasehold {

/// How much a message matters; the sink receives those at or above the
/// threshold (set_log_level()). `off` as the threshold silences everything.
enum class LogLevel { debug = 0, info = 1, warning = 2, error = 3, off = 4 };

/// The level's name in lower case ("debug", "info", "warning", "error", "off").
std::string_view to_string(LogLevel level) noexcept;

/// Receives every message at or above the threshold; may be called from any
/// of leasehold's threads, concurrently, so it must be thread-safe. It runs
/// on leasehold's I/O path: keep it fast (hand off to your logger's queue).
/// It may call set_log_sink() and set_log_level().
using LogSink = std::function<void(LogLevel level, std::string_view message)>;

/// Replaces the sink (nullptr restores the stderr default). Thread-safe.
void set_log_sink(LogSink sink);
/// Sets the threshold (default LogLevel::warning). Thread-safe.
void set_log_level(LogLevel level) noexcept;
/// The current threshold. Thread-safe.
LogLevel log_level() noexcept;

/// Writes `message` to the sink if `level` passes the threshold. Extensions
/// may use it to log through the same sink.
void log(LogLevel level, std::string_view message);

}  // namespace leasehold
