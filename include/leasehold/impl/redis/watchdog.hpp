#pragma once
// The deadlines of a live connection, without I/O: a reply overdue, a write
// blocked, an idle health check to send or left unanswered. Time is passed in.

#include <leasehold/error.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

namespace leasehold::redis::detail {

class Watchdog {
 public:
  using clock = std::chrono::steady_clock;

  struct Verdict {
    enum class Kind : std::uint8_t {
      wait,           ///< nothing due before `wake`
      send_ping,      ///< idle for a health-check interval
      reply_timeout,  ///< the oldest request's reply is overdue
      write_timeout,  ///< a write has been blocked for command_timeout
      ping_timeout,   ///< an untracked health check went unanswered
    };
    Kind kind = Kind::wait;
    clock::time_point wake = clock::time_point::max();
  };

  /// `health_check_interval` 0 disables the idle PING.
  Watchdog(std::chrono::milliseconds command_timeout, std::chrono::milliseconds health_check_interval);

  /// A connection came up.
  void reset(clock::time_point now) noexcept;
  void on_read(clock::time_point now) noexcept;
  void on_write_started(clock::time_point now) noexcept { write_started_ = now; }
  void on_write_done(clock::time_point now) noexcept;
  /// A health check whose answer is no tracked reply (pub/sub's PING).
  void on_ping_sent(clock::time_point now) noexcept { ping_sent_ = now; }

  /// `oldest_deadline`: of the oldest pending request, nullopt when idle.
  Verdict check(clock::time_point now, std::optional<clock::time_point> oldest_deadline) const noexcept;

  /// The error of a timeout verdict; `endpoint` names the server.
  Error error(Verdict::Kind kind, std::string_view endpoint) const;

 private:
  clock::time_point reply_due(clock::time_point oldest_deadline) const noexcept;

  std::chrono::milliseconds timeout_;
  std::chrono::milliseconds health_;
  clock::time_point last_activity_{};
  clock::time_point last_read_{};
  std::optional<clock::time_point> write_started_;
  std::optional<clock::time_point> ping_sent_;
};

}  // namespace leasehold::redis::detail
