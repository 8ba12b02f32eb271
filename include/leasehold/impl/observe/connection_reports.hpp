#pragma once
// What the elector logs and reports about its connections: each outage once
// (its start and its end; on a cluster, each node's), each subscription
// refusal and each run of failed slot map reads once. Pure
// bookkeeping; the answers say whether an error event is due.

#include <leasehold/error.hpp>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>

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

  /// Redis Cluster: the connection to node `address` (`what` the slot map
  /// says it is) failed. Logs the start of its outage and returns the error
  /// event due (naming the node), or nothing while stopping.
  std::optional<Error> node_down(const std::string& address, std::string_view what, TimePoint now,
                                 const Error& error, bool stopping);
  /// The connection to node `address` came up. Logs the end of its outage.
  void node_up(const std::string& address, std::string_view what, TimePoint now);
  /// A slot map read failed. Logs it and returns true when it is news: the
  /// first failure since a read worked, or another cause.
  bool map_failed(const Error& error);
  /// A slot map was read.
  void map_read() noexcept { map_error_ = {}; }

 private:
  const std::string id_;
  const std::string endpoint_;
  const std::chrono::milliseconds retry_interval_;
  bool ever_connected_ = false;
  std::optional<TimePoint> outage_since_;  // the commands connection is down since
  bool notices_lost_ = false;              // the subscriber's outage was logged
  error_code subscriber_error_;            // the last refusal logged
  std::map<std::string, TimePoint> node_outages_;  // cluster nodes down, since
  error_code map_error_;                   // the slot map read failure logged
};

}  // namespace leasehold::detail
