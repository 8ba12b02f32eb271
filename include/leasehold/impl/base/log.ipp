#include <leasehold/log.hpp>

#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>

namespace leasehold {
namespace {

std::atomic<LogLevel> threshold{LogLevel::warning};
std::mutex sink_mutex;
std::shared_ptr<const LogSink> current_sink;  // guarded by sink_mutex; null: stderr

}  // namespace

std::string_view to_string(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::debug: return "debug";
    case LogLevel::info: return "info";
    case LogLevel::warning: return "warning";
    case LogLevel::error: return "error";
    case LogLevel::off: return "off";
  }
  return "unknown";
}

void set_log_sink(LogSink sink) {
  auto next = sink ? std::make_shared<const LogSink>(std::move(sink)) : nullptr;
  std::lock_guard lock(sink_mutex);
  current_sink = std::move(next);
}

void set_log_level(LogLevel level) noexcept { threshold.store(level, std::memory_order_relaxed); }

LogLevel log_level() noexcept { return threshold.load(std::memory_order_relaxed); }

void log(LogLevel level, std::string_view message) {
  if (level < log_level() || level == LogLevel::off) return;
  std::shared_ptr<const LogSink> sink;
  {
    std::lock_guard lock(sink_mutex);
    sink = current_sink;
  }
  if (sink) {
    (*sink)(level, message);
  } else {
    std::fprintf(stderr, "leasehold %s: %.*s\n", to_string(level).data(),
                 static_cast<int>(message.size()), message.data());
  }
}

}  // namespace leasehold
