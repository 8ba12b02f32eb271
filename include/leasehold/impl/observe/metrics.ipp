// The families of Elector metrics as data (metric_families), and their
// Prometheus text exposition (format 0.0.4). The names, help texts, labels and
// buckets live only here; the prometheus-cpp component converts the same data.
// Each family is written once, HELP and TYPE first, with the samples of every
// elector after it: the format requires a family's samples to be contiguous.

#include <leasehold/metrics.hpp>

#include <leasehold/impl/observe/collect.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <string_view>

namespace leasehold {
namespace {

static_assert(static_cast<std::size_t>(RevokeReason::handed_over) + 1 == revoke_reason_count,
              "revoke_reason_count must cover every RevokeReason");

using Type = MetricFamily::Type;
using Labels = std::vector<std::pair<std::string, std::string>>;

double seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

class Builder {
 public:
  explicit Builder(std::span<const Metrics> electors) : electors_(electors) {}

  // One family per call; `each` adds the series of one elector.
  template <typename Each>
  void family(std::string_view name, Type type, std::string_view help, Each each) {
    current_ = &out_.emplace_back(MetricFamily{name, type, help, {}});
    for (const Metrics& m : electors_) {
      instance_ = &m.instance;
      each(m);
    }
  }

  // A family with one series per group whose value is `value(group)`.
  template <typename Value>
  void per_group(std::string_view name, Type type, std::string_view help, Value value) {
    family(name, type, help, [&](const Metrics& m) {
      for (const auto& g : m.groups) add(group_labels(g), static_cast<double>(value(g)));
    });
  }

  // A family with one series per connection whose value is `value(connection)`.
  template <typename Value>
  void per_connection(std::string_view name, Type type, std::string_view help, Value value) {
    family(name, type, help, [&](const Metrics& m) {
      for (const auto* c : {&m.commands, &m.subscriber}) add(connection_labels(*c), static_cast<double>(value(*c)));
      for (const auto& node : m.nodes) add(connection_labels(node), static_cast<double>(value(node)));
    });
  }

  Labels group_labels(const GroupMetrics& g) const { return {{"group", g.group}, {"instance", *instance_}}; }
  Labels connection_labels(const ConnectionMetrics& c) const {
    if (c.node.empty()) return {{"connection", c.name}, {"instance", *instance_}};
    return {{"connection", c.name}, {"instance", *instance_}, {"node", c.node}, {"role", c.role}};
  }

  MetricSeries& add(Labels labels, double value = 0) {
    return current_->series.emplace_back(MetricSeries{std::move(labels), value, {}, 0, 0});
  }

  std::vector<MetricFamily> take() { return std::move(out_); }

 private:
  std::span<const Metrics> electors_;
  const std::string* instance_ = nullptr;
  MetricFamily* current_ = nullptr;
  std::vector<MetricFamily> out_;
};

Labels with(Labels labels, std::string name, std::string value) {
  labels.emplace_back(std::move(name), std::move(value));
  return labels;
}

void group_families(Builder& b) {
  b.per_group("leasehold_is_leader", Type::gauge, "1 while this instance leads the group (the local is_leader view).",
              [](const GroupMetrics& g) { return g.leader ? 1 : 0; });
  b.per_group("leasehold_fencing_token", Type::gauge, "Fencing token of the current or last term this instance led.",
              [](const GroupMetrics& g) { return g.token; });
  b.per_group("leasehold_terms_won_total", Type::counter, "Terms this instance began as leader.",
              [](const GroupMetrics& g) { return g.terms_won; });
  b.per_group("leasehold_acquire_attempts_total", Type::counter, "Acquire scripts sent.",
              [](const GroupMetrics& g) { return g.acquire_attempts; });
  b.per_group("leasehold_acquire_errors_total", Type::counter,
              "Acquire scripts that failed (error reply, timeout, lost connection, or too few replicas in confirm mode).",
              [](const GroupMetrics& g) { return g.acquire_errors; });
  b.family("leasehold_renewals_total", Type::counter,
           "Renew scripts by result: ok extended the lease, failed did not (or too few replicas acknowledged it).",
           [&](const Metrics& m) {
             for (const auto& g : m.groups) {
               b.add(with(b.group_labels(g), "result", "ok"), static_cast<double>(g.renewals_ok));
               b.add(with(b.group_labels(g), "result", "failed"), static_cast<double>(g.renewals_failed));
             }
           });
  b.per_group("leasehold_drain_overruns_total", Type::counter,
              "Releases made when drain_timeout passed with the ended term's guarded work still running.",
              [](const GroupMetrics& g) { return g.drain_overruns; });
  b.per_group("leasehold_duplicate_instance_ids_total", Type::counter,
              "Times another live process was found campaigning with this instance id (a misconfiguration).",
              [](const GroupMetrics& g) { return g.duplicate_ids; });
  b.family("leasehold_demotions_total", Type::counter, "Terms that ended, by reason.", [&](const Metrics& m) {
    for (const auto& g : m.groups) {
      for (std::size_t i = 0; i < revoke_reason_count; ++i) {
        const auto reason = to_string(static_cast<RevokeReason>(i));
        b.add(with(b.group_labels(g), "reason", std::string(reason)), static_cast<double>(g.demotions[i]));
      }
    }
  });
  b.per_group("leasehold_leader_seconds_total", Type::counter, "Time this instance led the group, in seconds.",
              [](const GroupMetrics& g) { return seconds(g.time_as_leader); });
  b.per_group("leasehold_heartbeat_lag_seconds", Type::gauge,
              "How late the leader's current renewal is against its schedule; 0 when not leader.",
              [](const GroupMetrics& g) { return seconds(g.heartbeat_lag); });
}

void connection_families(Builder& b) {
  b.per_connection("leasehold_redis_connected", Type::gauge, "1 while the Redis connection is up.",
                   [](const ConnectionMetrics& c) { return c.connected ? 1 : 0; });
  b.per_connection("leasehold_redis_reconnects_total", Type::counter, "Successful connections after the first.",
                   [](const ConnectionMetrics& c) { return c.reconnects; });
  b.per_connection("leasehold_redis_commands_total", Type::counter, "Commands written to Redis.",
                   [](const ConnectionMetrics& c) { return c.commands_sent; });
  b.per_connection("leasehold_redis_timeouts_total", Type::counter,
                   "Commands, writes or health checks that outlived command_timeout (each resets the connection).",
                   [](const ConnectionMetrics& c) { return c.timeouts; });
  b.per_connection("leasehold_redis_protocol_errors_total", Type::counter,
                   "Invalid or unexpected bytes from the server (each resets the connection).",
                   [](const ConnectionMetrics& c) { return c.protocol_errors; });
  b.per_connection("leasehold_redis_redirects_total", Type::counter,
                   "Redis Cluster: MOVED and ASK replies followed (a slot moved or is moving).",
                   [](const ConnectionMetrics& c) { return c.redirects; });
  b.per_connection("leasehold_redis_cluster_retries_total", Type::counter,
                   "Redis Cluster: TRYAGAIN and CLUSTERDOWN replies waited out and retried.",
                   [](const ConnectionMetrics& c) { return c.cluster_retries; });
  b.per_connection("leasehold_redis_slot_map_failures_total", Type::counter,
                   "Redis Cluster: slot map reads (CLUSTER SHARDS or SLOTS) that failed.",
                   [](const ConnectionMetrics& c) { return c.slot_map_failures; });
  // Only the commands connection (a cluster: each node's too) has
  // request/reply round trips and a meaningful reply age: the subscriber's
  // traffic is pushed.
  b.family("leasehold_redis_last_reply_age_seconds", Type::gauge,
           "Seconds since the last successful reply on the commands connection.", [&](const Metrics& m) {
             if (m.commands.last_reply_age) {
               b.add(b.connection_labels(m.commands), seconds(*m.commands.last_reply_age));
             }
             for (const auto& node : m.nodes) {
               if (node.last_reply_age) b.add(b.connection_labels(node), seconds(*node.last_reply_age));
             }
           });
  b.family("leasehold_redis_command_duration_seconds", Type::histogram,
           "Round trip of Redis requests, from enqueue to reply.", [&](const Metrics& m) {
             const auto& h = m.commands.round_trip;
             MetricSeries& s = b.add(b.connection_labels(m.commands));
             for (std::size_t i = 0; i < LatencyHistogram::bounds.size(); ++i) {
               s.buckets.emplace_back(seconds(LatencyHistogram::bounds[i]), h.cumulative(i));
             }
             s.count = h.count();
             s.sum = seconds(h.sum());
           });
}

// Label values escape backslash, double quote and line feed.
std::string escape(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
  return out;
}

std::string_view type_name(Type type) {
  switch (type) {
    case Type::counter: return "counter";
    case Type::gauge: return "gauge";
    case Type::histogram: return "histogram";
  }
  return "untyped";
}

// name{labels[,extra]} value
template <typename Value>
void write_sample(std::string& out, std::string_view name, const Labels& labels, Value value,
                  std::string_view extra = {}) {
  out += name;
  out += '{';
  for (std::size_t i = 0; i < labels.size(); ++i) {
    fmt::format_to(std::back_inserter(out), "{}{}=\"{}\"", i == 0 ? "" : ",", labels[i].first,
                   escape(labels[i].second));
  }
  fmt::format_to(std::back_inserter(out), "{}}} {}\n", extra, value);
}

}  // namespace

std::vector<MetricFamily> metric_families(std::span<const Metrics> electors) {
  Builder b(electors);
  group_families(b);
  connection_families(b);
  return b.take();
}

std::string to_prometheus(std::span<const Metrics> electors) {
  std::string out;
  for (const MetricFamily& f : metric_families(electors)) {
    fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n", f.name, f.help, f.name, type_name(f.type));
    for (const MetricSeries& s : f.series) {
      if (f.type != Type::histogram) {
        write_sample(out, f.name, s.labels, s.value);
        continue;
      }
      const std::string bucket = fmt::format("{}_bucket", f.name);
      for (const auto& [bound, cumulative] : s.buckets) {
        write_sample(out, bucket, s.labels, cumulative, fmt::format(",le=\"{}\"", bound));
      }
      write_sample(out, bucket, s.labels, s.count, ",le=\"+Inf\"");
      write_sample(out, fmt::format("{}_sum", f.name), s.labels, s.sum);
      write_sample(out, fmt::format("{}_count", f.name), s.labels, s.count);
    }
  }
  return out;
}

std::string to_prometheus(const Metrics& elector) { return to_prometheus(std::span<const Metrics>(&elector, 1)); }

}  // namespace leasehold

namespace leasehold::detail {

GroupMetrics group_metrics(const GroupState& g, TimePoint now) {
  GroupMetrics m;
  m.group = g.name;
  m.leader = g.flag->leading(now);
  m.token = g.machine.token();
  m.terms_won = g.terms_won;
  m.acquire_attempts = g.acquire_attempts;
  m.acquire_errors = g.acquire_errors;
  m.renewals_ok = g.renewals_ok;
  m.renewals_failed = g.renewals_failed;
  m.drain_overruns = g.drain_overruns;
  m.duplicate_ids = g.duplicate_ids;
  std::copy(g.demotions.begin(), g.demotions.end(), m.demotions.begin());
  m.time_as_leader = g.time_as_leader + (g.in_term ? now - g.leading_since : Duration::zero());
  m.heartbeat_lag = g.heartbeat_lag(now);
  return m;
}

ConnectionMetrics connection_metrics(std::string name, const redis::Client& c, TimePoint now) {
  const auto& s = c.stats();
  ConnectionMetrics m;
  m.name = std::move(name);
  m.connected = c.connected();
  m.connects = s.connects;
  m.reconnects = s.connects > 0 ? s.connects - 1 : 0;
  m.disconnects = s.disconnects;
  m.commands_sent = s.commands_sent;
  m.timeouts = s.timeouts;
  m.protocol_errors = s.protocol_errors;
  m.round_trip = s.round_trip;
  if (const auto at = c.last_reply_at()) m.last_reply_age = now - *at;
  return m;
}

ConnectionMetrics route_metrics(const CommandRoute& route, std::string name, TimePoint now) {
  if (const redis::Client* server = route.server()) return connection_metrics(std::move(name), *server, now);
  const auto& cluster = *route.cluster();
  ConnectionMetrics sum;
  sum.name = std::move(name);
  sum.connected = cluster.ready();
  for (const auto& [address, client] : cluster.nodes()) {
    const ConnectionMetrics node = connection_metrics({}, *client, now);
    if (!node.connected && cluster.serves_slots(address)) sum.connected = false;
    sum.connects += node.connects;
    sum.reconnects += node.reconnects;
    sum.disconnects += node.disconnects;
    sum.commands_sent += node.commands_sent;
    sum.timeouts += node.timeouts;
    sum.protocol_errors += node.protocol_errors;
    sum.round_trip.merge(node.round_trip);
  }
  const auto& stats = cluster.stats();
  sum.redirects = stats.moved + stats.asked;
  sum.cluster_retries = stats.retries;
  sum.slot_map_failures = stats.map_failures;
  if (const auto at = cluster.last_reply_at()) sum.last_reply_age = now - *at;
  return sum;
}

std::vector<ConnectionMetrics> node_metrics(const CommandRoute& route, TimePoint now) {
  std::vector<ConnectionMetrics> out;
  const auto* cluster = route.cluster();
  if (cluster == nullptr) return out;
  for (const auto& [address, client] : cluster->nodes()) {
    ConnectionMetrics& node = out.emplace_back(connection_metrics("node", *client, now));
    node.node = address;
    node.role = cluster->role_of(address);
  }
  return out;
}

}  // namespace leasehold::detail
