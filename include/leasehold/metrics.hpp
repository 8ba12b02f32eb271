#pragma once
// A point-in-time snapshot of what an Elector has done, per group and per
// Redis connection, and its rendering in the Prometheus text exposition
// format (version 0.0.4). Take a snapshot with Elector::metrics() or
// Elector::async_metrics(); it is a plain value, safe to keep and copy.

#include <leasehold/events.hpp>
#include <leasehold/latency_histogram.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace leasehold {

/// One election group, as this instance saw it. Counters start at zero when
/// the Elector is constructed and only grow.
struct GroupMetrics {
  std::string group;                ///< the group's name
  bool leader = false;              ///< is_leader(group) at the snapshot
  std::int64_t token = 0;           ///< fencing token of the current or last term; 0: never led
  std::uint64_t terms_won = 0;      ///< terms begun (fresh acquisitions and re-claims)
  std::uint64_t acquire_attempts = 0;  ///< acquire scripts sent
  std::uint64_t acquire_errors = 0;    ///< acquire scripts that failed (error reply, timeout, lost connection, too few replicas in confirm mode)
  std::uint64_t renewals_ok = 0;       ///< renew scripts that extended the lease
  std::uint64_t renewals_failed = 0;   ///< renew scripts that did not (refused, error, timeout, lost connection, too few replicas in confirm mode)
  /// Step-downs and stops that released the lease when drain_timeout passed
  /// with guarded work of the ended term still running.
  std::uint64_t drain_overruns = 0;
  /// Times another live process was found campaigning with this instance id
  /// (each episode once; errc::duplicate_instance_id).
  std::uint64_t duplicate_ids = 0;
  /// Terms ended, indexed by RevokeReason (static_cast<std::size_t>(reason)).
  std::array<std::uint64_t, revoke_reason_count> demotions{};
  /// Total time this instance led the group, the current term included.
  std::chrono::nanoseconds time_as_leader{0};
  /// How late the current (or, if sent, the last) renewal of the current term
  /// is against its schedule; zero when not leader. See Health::heartbeat_lag.
  std::chrono::nanoseconds heartbeat_lag{0};

  /// Terms ended for `reason` (one entry of demotions).
  std::uint64_t demotions_for(RevokeReason reason) const noexcept {
    return demotions[static_cast<std::size_t>(reason)];
  }
};

/// One Redis connection of the elector: "commands" carries every lease
/// script, "subscriber" receives release notices.
struct ConnectionMetrics {
  std::string name;                 ///< "commands" or "subscriber"; "node" for one node of a Redis Cluster
  /// Redis Cluster, Metrics::nodes: the node's "host:port"; else empty.
  std::string node;
  /// Redis Cluster, Metrics::nodes: "master" or "replica" as the slot map
  /// says, empty when it does not name the node (a seed).
  std::string role;
  /// The connection was up at the snapshot. On a Redis Cluster, `commands`
  /// is up only while every master of the slot map is connected.
  bool connected = false;
  std::uint64_t connects = 0;       ///< successful handshakes
  std::uint64_t reconnects = 0;     ///< successful handshakes after the first
  std::uint64_t disconnects = 0;    ///< established connections that ended
  std::uint64_t commands_sent = 0;  ///< commands written, health-check PINGs included
  std::uint64_t timeouts = 0;       ///< commands, writes or health checks that outlived command_timeout
  std::uint64_t protocol_errors = 0;  ///< invalid or unexpected bytes from the server; each resets the connection
  std::uint64_t redirects = 0;        ///< Redis Cluster: MOVED and ASK replies followed (a slot moved or is moving)
  std::uint64_t cluster_retries = 0;  ///< Redis Cluster: TRYAGAIN and CLUSTERDOWN replies waited out and retried
  std::uint64_t slot_map_failures = 0;  ///< Redis Cluster, `commands`: slot map reads that failed
  /// Request round trips, from enqueue to reply (commands connection only).
  LatencyHistogram round_trip;
  /// Age of the last non-error reply; nullopt before the first.
  std::optional<std::chrono::nanoseconds> last_reply_age;
};

/// Everything one Elector exposes.
struct Metrics {
  std::string instance;             ///< the elector's instance id
  std::vector<GroupMetrics> groups;  ///< every registered group, "default" first
  ConnectionMetrics commands;       ///< the connection that runs the lease scripts
  ConnectionMetrics subscriber;     ///< the pub/sub connection that hears release notices
  /// Redis Cluster: one entry per node the commands connect to (`commands`
  /// sums them); empty on one server or Sentinel.
  std::vector<ConnectionMetrics> nodes;

  /// The group's metrics, or nullptr if it is not registered. The pointer
  /// points into this snapshot: keep the snapshot (a temporary's is refused).
  const GroupMetrics* group(std::string_view name) const& noexcept {
    for (const auto& g : groups) {
      if (g.group == name) return &g;
    }
    return nullptr;
  }
  /// Refused: the pointer would outlive the temporary snapshot.
  const GroupMetrics* group(std::string_view name) const&& = delete;
};

/// One labelled series of a family: a counter or gauge value, or a histogram.
struct MetricSeries {
  /// Label pairs in exposition order: `group` or `connection`, `instance`,
  /// then the family's own (`result`, `reason`).
  std::vector<std::pair<std::string, std::string>> labels;
  double value = 0;  ///< counters and gauges
  /// Histograms only: (upper bound in seconds, cumulative count) for each of
  /// LatencyHistogram::bounds; the +Inf bucket is `count`.
  std::vector<std::pair<double, std::uint64_t>> buckets;
  std::uint64_t count = 0;  ///< histograms only
  double sum = 0;           ///< histograms only, in seconds
};

/// One metric family, independent of any metrics library: name, type, help
/// text and the series of every elector. to_prometheus() renders these as
/// text and the optional leasehold::prometheus component hands them to
/// prometheus-cpp, so both expositions carry the same names, help texts,
/// labels and buckets. A bridge to another metrics system can use them too.
struct MetricFamily {
  /// The Prometheus metric type of the family.
  enum class Type { counter, gauge, histogram };
  std::string_view name;  ///< static storage
  Type type = Type::gauge;  ///< how the series' values are to be read
  std::string_view help;  ///< static storage
  std::vector<MetricSeries> series;  ///< every series of every elector, in exposition order
};

/// Every family, in exposition order, each once with the series of every
/// elector (a family is listed even when it has no series).
std::vector<MetricFamily> metric_families(std::span<const Metrics> electors);

/// Renders snapshots in the Prometheus text exposition format 0.0.4 (serve
/// it with Content-Type "text/plain; version=0.0.4"). Every metric is named
/// leasehold_..., carries an `instance` label (the instance id) and, per
/// group, a `group` label or, per connection, a `connection` label. Several
/// electors of one process render into one exposition, each family declared
/// once. docs/operations.md lists the metrics.
std::string to_prometheus(std::span<const Metrics> electors);
/// The same for a single elector's snapshot.
std::string to_prometheus(const Metrics& elector);

}  // namespace leasehold
