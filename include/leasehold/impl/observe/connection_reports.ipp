#include <leasehold/impl/observe/connection_reports.hpp>

#include <leasehold/log.hpp>

#include <fmt/format.h>

namespace leasehold::detail {

void ConnectionReports::commands_up(TimePoint now) {
  if (outage_since_) {
    // Warning, like the outage itself, so that the default log shows both ends.
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - *outage_since_).count();
    log(LogLevel::warning, fmt::format("elector {}: {} Redis {} after {} ms; campaigning again", id_,
                                       ever_connected_ ? "reconnected to" : "connected to", endpoint_, ms));
  } else {
    log(LogLevel::info, fmt::format("elector {}: connected to Redis {}", id_, endpoint_));
  }
  outage_since_.reset();
  ever_connected_ = true;
}

// The client reports each outage once (the first failure, not every retry).
bool ConnectionReports::commands_down(TimePoint now, const Error& error, bool stopping) {
  if (stopping) return false;
  if (error.code == errc::master_changed) {
    // A planned move, not an outage: no error event, leaders keep their terms.
    log(LogLevel::info, fmt::format("elector {}: {}; leaders keep their terms until their deadlines", id_,
                                    error.message()));
    return false;
  }
  if (!outage_since_) outage_since_ = now;
  log(LogLevel::warning,
      fmt::format("elector {}: {} Redis {}: {}; nobody here leads until it is back, retrying with backoff", id_,
                  ever_connected_ ? "lost the connection to" : "cannot connect to", endpoint_, error.message()));
  return true;
}

// Without release notices standbys still fail over, by polling: worth a
// warning once per outage, not an error event.
void ConnectionReports::subscriber(bool up, const Error& error, bool stopping) {
  if (up) {
    subscriber_error_ = {};  // a refusal on the new connection is news again
    if (notices_lost_) {
      log(LogLevel::warning, fmt::format("elector {}: release notices available again", id_));
      notices_lost_ = false;
    }
    return;
  }
  if (stopping || notices_lost_) return;
  notices_lost_ = true;
  log(LogLevel::warning, fmt::format("elector {}: release notices unavailable ({}); standbys poll every {} ms", id_,
                                     error.message(), retry_interval_.count()));
}

// PSUBSCRIBE refused (NOPERM on the pattern): the connection stays up but
// standbys only learn of releases by polling.
bool ConnectionReports::subscribe_refused(const Error& error) {
  if (error.code == subscriber_error_) return false;
  subscriber_error_ = error.code;
  log(LogLevel::warning, fmt::format("elector {}: subscribing to release notices failed: {}; standbys poll every {} ms",
                                     id_, error.message(), retry_interval_.count()));
  return true;
}

std::optional<Error> ConnectionReports::node_down(const std::string& address, std::string_view what, TimePoint now,
                                                 const Error& error, bool stopping) {
  if (stopping) return std::nullopt;
  node_outages_.try_emplace(address, now);
  Error named{error.code, fmt::format("cluster node {} ({}): {}", address, what, error.detail)};
  log(LogLevel::warning, fmt::format("elector {}: lost the connection to cluster node {} ({}): {}; the groups of its "
                                     "slots cannot renew or be won until it or its replica serves them again",
                                     id_, address, what, error.message()));
  return named;
}

void ConnectionReports::node_up(const std::string& address, std::string_view what, TimePoint now) {
  const auto outage = node_outages_.find(address);
  if (outage == node_outages_.end()) return;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - outage->second).count();
  log(LogLevel::warning, fmt::format("elector {}: reconnected to cluster node {} ({}) after {} ms", id_, address,
                                     what, ms));
  node_outages_.erase(outage);
}

bool ConnectionReports::map_failed(const Error& error) {
  if (error.code == map_error_) return false;
  map_error_ = error.code;
  log(LogLevel::warning, fmt::format("elector {}: reading the cluster's slot map failed: {}; the map in use stays, "
                                     "asked again on the next refresh",
                                     id_, error.message()));
  return true;
}

}  // namespace leasehold::detail
