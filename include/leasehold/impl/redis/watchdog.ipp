#include <leasehold/impl/redis/watchdog.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace leasehold::redis::detail {

Watchdog::Watchdog(std::chrono::milliseconds command_timeout, std::chrono::milliseconds health_check_interval)
    : timeout_(command_timeout), health_(health_check_interval) {}

void Watchdog::reset(clock::time_point now) noexcept {
  last_activity_ = last_read_ = now;
  write_started_.reset();
  ping_sent_.reset();
}

void Watchdog::on_read(clock::time_point now) noexcept {
  last_activity_ = last_read_ = now;
  ping_sent_.reset();
}

void Watchdog::on_write_done(clock::time_point now) noexcept {
  last_activity_ = now;
  write_started_.reset();
}

// The oldest pending request fails once the connection has stayed silent for
// command_timeout since it was sent: a burst of thousands of commands that the
// server is steadily answering is not a dead connection.
Watchdog::clock::time_point Watchdog::reply_due(clock::time_point oldest_deadline) const noexcept {
  return std::max(oldest_deadline, last_read_ + timeout_);
}

Watchdog::Verdict Watchdog::check(clock::time_point now,
                                  std::optional<clock::time_point> oldest_deadline) const noexcept {
  using Kind = Verdict::Kind;
  if (oldest_deadline && reply_due(*oldest_deadline) <= now) return {Kind::reply_timeout};
  if (write_started_ && *write_started_ + timeout_ <= now) return {Kind::write_timeout};
  if (ping_sent_ && *ping_sent_ + timeout_ <= now) return {Kind::ping_timeout};
  Verdict v;
  if (health_.count() > 0 && !oldest_deadline && !ping_sent_) {
    if (now - last_activity_ >= health_) return {Kind::send_ping};
    v.wake = last_activity_ + health_;
  }
  if (oldest_deadline) v.wake = std::min(v.wake, reply_due(*oldest_deadline));
  if (write_started_) v.wake = std::min(v.wake, *write_started_ + timeout_);
  if (ping_sent_) v.wake = std::min(v.wake, *ping_sent_ + timeout_);
  return v;
}

Error Watchdog::error(Verdict::Kind kind, std::string_view endpoint) const {
  const auto ms = timeout_.count();
  switch (kind) {
    case Verdict::Kind::reply_timeout:
      return {make_error_code(errc::timeout), fmt::format("no reply from {} within {} ms", endpoint, ms)};
    case Verdict::Kind::write_timeout:
      return {make_error_code(errc::timeout), fmt::format("write to {} blocked for {} ms", endpoint, ms)};
    case Verdict::Kind::ping_timeout:
      return {make_error_code(errc::timeout),
              fmt::format("{} did not answer a health check within {} ms", endpoint, ms)};
    case Verdict::Kind::wait:
    case Verdict::Kind::send_ping:
      break;
  }
  return {};
}

}  // namespace leasehold::redis::detail
