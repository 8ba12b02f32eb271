#pragma once
// What the elector logs and reports about its two connections: each outage
// once (its start and its end), each subscription refusal once. Pure
// bookkeeping; the answers say whether an error event is due.

#include <leasehold/error.hpp>

#include <chrono>
#include <optional>
#include <string>

namespace leasehold::detail {

class ConnectionReports {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  ConnectionReports(std::string elector_id, std::string endpoint, std::chrono::milliseconds retry_interval)
      : id_(std::move(elector_id)), endpoint_(std::move(endpoint)), retry_interval_(retry_interval) {}

  /// The commands connection came up. Logs the end of an outage.
  void commands_up(TimePoint now);
  /// The commands connection went down (or could not connect). Returns true
  /// when this starts an outage worth an error event.
  bool commands_down(TimePoint now, const Error& error, bool stopping);
  /// The subscriber connection changed state.
  void subscriber(bool up, const Error& error, bool stopping);
  /// PSUBSCRIBE was refused. Returns true when the refusal is news.
  bool subscribe_refused(const Error& error);

 private:
  const std::string id_;
  const std::string endpoint_;
  const std::chrono::milliseconds retry_interval_;
  bool ever_connected_ = false;
  std::optional<TimePoint> outage_since_;  // the commands connection is down since
  bool notices_lost_ = false;              // the subscriber's outage was logged
  error_code subscriber_error_;            // the last refusal logged
};

}  // namespace leasehold::detail
