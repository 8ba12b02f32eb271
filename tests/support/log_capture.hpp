#pragma once
// Captures leasehold's log lines during a test (set_log_sink), so that a test
// can check what operators would read.

#include <leasehold/log.hpp>

#include <initializer_list>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace leasehold::test {

/// Captures leasehold's log for one test; restores the stderr default after.
class LogCapture {
 public:
  explicit LogCapture(LogLevel level) {
    set_log_level(level);
    set_log_sink([this](LogLevel l, std::string_view message) {
      std::lock_guard lock(mutex_);
      lines_.emplace_back(l, std::string(message));
    });
  }
  ~LogCapture() {
    set_log_sink(nullptr);
    set_log_level(LogLevel::warning);
  }

  /// Lines containing every needle.
  std::vector<std::pair<LogLevel, std::string>> matching(std::initializer_list<std::string_view> needles) const {
    std::lock_guard lock(mutex_);
    std::vector<std::pair<LogLevel, std::string>> out;
    for (const auto& line : lines_) {
      bool all = true;
      for (auto n : needles) all = all && line.second.find(n) != std::string::npos;
      if (all) out.push_back(line);
    }
    return out;
  }
  std::size_t count(std::initializer_list<std::string_view> needles) const { return matching(needles).size(); }

  std::string dump() const {
    std::lock_guard lock(mutex_);
    std::string out;
    for (const auto& [level, text] : lines_) out += std::string(to_string(level)) + ": " + text + "\n";
    return out;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::pair<LogLevel, std::string>> lines_;
};

}  // namespace leasehold::test
