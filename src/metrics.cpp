// Prometheus text exposition (format 0.0.4) of Elector metrics. Each family
// is written once, HELP and TYPE first, with the samples of every elector
// after it: the format requires a family's samples to be contiguous.

#include <leasehold/metrics.hpp>

#include "elector_snapshots.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <string_view>

namespace leasehold {
namespace {

static_assert(static_cast<std::size_t>(RevokeReason::released_elsewhere) + 1 == revoke_reason_count,
              "revoke_reason_count must cover every RevokeReason");

double seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

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

class Writer {
 public:
  explicit Writer(std::span<const Metrics> electors) : electors_(electors) {}

  // One family per call; `each` writes the samples of one elector.
  template <typename Each>
  void family(std::string_view name, std::string_view type, std::string_view help, Each each) {
    fmt::format_to(std::back_inserter(out_), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
    for (const Metrics& m : electors_) {
      instance_ = escape(m.instance);
      each(m);
    }
  }

  template <typename Value>
  void group_sample(std::string_view name, const GroupMetrics& g, Value value, std::string_view extra = {}) {
    fmt::format_to(std::back_inserter(out_), "{}{{group=\"{}\",instance=\"{}\"{}}} {}\n", name, escape(g.group),
                   instance_, extra, value);
  }

  template <typename Value>
  void connection_sample(std::string_view name, const ConnectionMetrics& c, Value value,
                         std::string_view extra = {}) {
    fmt::format_to(std::back_inserter(out_), "{}{{connection=\"{}\",instance=\"{}\"{}}} {}\n", name,
                   escape(c.name), instance_, extra, value);
  }

  std::string take() { return std::move(out_); }

 private:
  std::span<const Metrics> electors_;
  std::string instance_;
  std::string out_;
};

template <typename F>
void each_group(const Metrics& m, F f) {
  for (const auto& g : m.groups) f(g);
}

template <typename F>
void each_connection(const Metrics& m, F f) {
  f(m.commands);
  f(m.subscriber);
}

void render_groups(Writer& w) {
  w.family("leasehold_is_leader", "gauge", "1 while this instance leads the group (the local is_leader view).",
           [&](const Metrics& m) {
             each_group(m, [&](const GroupMetrics& g) { w.group_sample("leasehold_is_leader", g, g.leader ? 1 : 0); });
           });
  w.family("leasehold_fencing_token", "gauge", "Fencing token of the current or last term this instance led.",
           [&](const Metrics& m) {
             each_group(m, [&](const GroupMetrics& g) { w.group_sample("leasehold_fencing_token", g, g.token); });
           });
  w.family("leasehold_terms_won_total", "counter", "Terms this instance began as leader.", [&](const Metrics& m) {
    each_group(m, [&](const GroupMetrics& g) { w.group_sample("leasehold_terms_won_total", g, g.terms_won); });
  });
  w.family("leasehold_acquire_attempts_total", "counter", "Acquire scripts sent.", [&](const Metrics& m) {
    each_group(m, [&](const GroupMetrics& g) {
      w.group_sample("leasehold_acquire_attempts_total", g, g.acquire_attempts);
    });
  });
  w.family("leasehold_acquire_errors_total", "counter",
           "Acquire scripts that failed (error reply, timeout or lost connection).", [&](const Metrics& m) {
             each_group(m, [&](const GroupMetrics& g) {
               w.group_sample("leasehold_acquire_errors_total", g, g.acquire_errors);
             });
           });
  w.family("leasehold_renewals_total", "counter", "Renew scripts by result: ok extended the lease, failed did not.",
           [&](const Metrics& m) {
             each_group(m, [&](const GroupMetrics& g) {
               w.group_sample("leasehold_renewals_total", g, g.renewals_ok, ",result=\"ok\"");
               w.group_sample("leasehold_renewals_total", g, g.renewals_failed, ",result=\"failed\"");
             });
           });
  w.family("leasehold_demotions_total", "counter", "Terms that ended, by reason.", [&](const Metrics& m) {
    each_group(m, [&](const GroupMetrics& g) {
      for (std::size_t i = 0; i < revoke_reason_count; ++i) {
        const auto reason = to_string(static_cast<RevokeReason>(i));
        w.group_sample("leasehold_demotions_total", g, g.demotions[i], fmt::format(",reason=\"{}\"", reason));
      }
    });
  });
  w.family("leasehold_leader_seconds_total", "counter", "Time this instance led the group, in seconds.",
           [&](const Metrics& m) {
             each_group(m, [&](const GroupMetrics& g) {
               w.group_sample("leasehold_leader_seconds_total", g, seconds(g.time_as_leader));
             });
           });
  w.family("leasehold_heartbeat_lag_seconds", "gauge",
           "How late the leader's current renewal is against its schedule; 0 when not leader.",
           [&](const Metrics& m) {
             each_group(m, [&](const GroupMetrics& g) {
               w.group_sample("leasehold_heartbeat_lag_seconds", g, seconds(g.heartbeat_lag));
             });
           });
}

void render_connections(Writer& w) {
  w.family("leasehold_redis_connected", "gauge", "1 while the Redis connection is up.", [&](const Metrics& m) {
    each_connection(m, [&](const ConnectionMetrics& c) {
      w.connection_sample("leasehold_redis_connected", c, c.connected ? 1 : 0);
    });
  });
  w.family("leasehold_redis_reconnects_total", "counter", "Successful connections after the first.",
           [&](const Metrics& m) {
             each_connection(m, [&](const ConnectionMetrics& c) {
               w.connection_sample("leasehold_redis_reconnects_total", c, c.reconnects);
             });
           });
  w.family("leasehold_redis_commands_total", "counter", "Commands written to Redis.", [&](const Metrics& m) {
    each_connection(m, [&](const ConnectionMetrics& c) {
      w.connection_sample("leasehold_redis_commands_total", c, c.commands_sent);
    });
  });
  w.family("leasehold_redis_timeouts_total", "counter",
           "Commands, writes or health checks that outlived command_timeout (each resets the connection).",
           [&](const Metrics& m) {
             each_connection(m, [&](const ConnectionMetrics& c) {
               w.connection_sample("leasehold_redis_timeouts_total", c, c.timeouts);
             });
           });
  w.family("leasehold_redis_protocol_errors_total", "counter",
           "Invalid or unexpected bytes from the server (each resets the connection).", [&](const Metrics& m) {
             each_connection(m, [&](const ConnectionMetrics& c) {
               w.connection_sample("leasehold_redis_protocol_errors_total", c, c.protocol_errors);
             });
           });
  // Only the commands connection has request/reply round trips and a
  // meaningful reply age: the subscriber's traffic is pushed.
  w.family("leasehold_redis_last_reply_age_seconds", "gauge",
           "Seconds since the last successful reply on the commands connection.", [&](const Metrics& m) {
             if (m.commands.last_reply_age) {
               w.connection_sample("leasehold_redis_last_reply_age_seconds", m.commands,
                                   seconds(*m.commands.last_reply_age));
             }
           });
  w.family("leasehold_redis_command_duration_seconds", "histogram",
           "Round trip of Redis requests, from enqueue to reply.", [&](const Metrics& m) {
             const auto& c = m.commands;
             const auto& h = c.round_trip;
             for (std::size_t i = 0; i < LatencyHistogram::bounds.size(); ++i) {
               w.connection_sample("leasehold_redis_command_duration_seconds_bucket", c, h.cumulative(i),
                                   fmt::format(",le=\"{}\"", seconds(LatencyHistogram::bounds[i])));
             }
             w.connection_sample("leasehold_redis_command_duration_seconds_bucket", c, h.count(), ",le=\"+Inf\"");
             w.connection_sample("leasehold_redis_command_duration_seconds_sum", c, seconds(h.sum()));
             w.connection_sample("leasehold_redis_command_duration_seconds_count", c, h.count());
           });
}

}  // namespace

std::string to_prometheus(std::span<const Metrics> electors) {
  Writer w(electors);
  render_groups(w);
  render_connections(w);
  return w.take();
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

}  // namespace leasehold::detail
