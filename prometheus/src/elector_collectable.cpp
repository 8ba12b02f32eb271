// Elector metrics for prometheus-cpp: leasehold::metric_families() converted
// to prometheus::MetricFamily, with a bounded wait for each elector's
// executor so that a stuck elector cannot hang the exposer's thread.

#include <leasehold/prometheus/elector_collectable.hpp>

#include <leasehold/health.hpp>
#include <leasehold/log.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <exception>
#include <future>
#include <mutex>
#include <string>
#include <string_view>

namespace leasehold::prometheus {

struct ElectorCollectable::Source {
  explicit Source(Elector& e) : elector(e) {}

  Elector& elector;
  std::mutex mutex;
  // The outstanding snapshot request, if any: a scrape that times out leaves
  // it for the next scrape instead of queueing another.
  std::shared_future<Metrics> pending;
  // The groups of the last snapshot, for the lock-free view when the
  // executor does not answer.
  std::vector<std::string> groups{"default"};
  bool answering = true;  // warn once per episode of silence

  std::shared_future<Metrics> request() {
    std::lock_guard lock(mutex);
    if (!pending.valid()) {
      auto promise = std::make_shared<std::promise<Metrics>>();
      pending = promise->get_future().share();
      elector.async_metrics([promise](Metrics m) { promise->set_value(std::move(m)); });
    }
    return pending;
  }

  // A request that completed (value or broken promise) is used once.
  void forget_completed() {
    if (pending.valid() && pending.wait_for(std::chrono::seconds(0)) == std::future_status::ready) pending = {};
  }

  void answered(Metrics& m) {
    std::lock_guard lock(mutex);
    forget_completed();
    // A snapshot that arrived after an earlier scrape gave up on it is one
    // scrape old: is_leader is read again now, lock-free, so that it is never
    // served stale.
    for (auto& g : m.groups) g.leader = elector.is_leader(g.group);
    groups.clear();
    for (const auto& g : m.groups) groups.push_back(g.group);
    if (!answering) log(LogLevel::info, fmt::format("elector {}: metrics scrapes are answered again", m.instance));
    answering = true;
  }

  // What is known without the elector's executor: the local is_leader view
  // and the connection flags (atomics).
  Metrics silent(std::chrono::milliseconds waited) {
    std::lock_guard lock(mutex);
    forget_completed();
    if (answering) {
      log(LogLevel::warning,
          fmt::format("elector {}: a metrics scrape waited {} ms for the elector's executor in vain (blocked, "
                      "stopped or not run); until it answers, scrapes carry only leasehold_is_leader and "
                      "leasehold_redis_connected for it",
                      elector.instance_id(), waited.count()));
    }
    answering = false;
    Metrics m;
    m.instance = elector.instance_id();
    for (const auto& name : groups) {
      GroupMetrics g;
      g.group = name;
      g.leader = elector.is_leader(name);
      m.groups.push_back(std::move(g));
    }
    const Health h = elector.health();
    m.commands.name = "commands";
    m.commands.connected = h.connected;
    m.subscriber.name = "subscriber";
    m.subscriber.connected = h.notices;
    return m;
  }
};

namespace {

// The families that silent() fills in truthfully; the rest would be zeros.
constexpr std::array<std::string_view, 2> lock_free_families{"leasehold_is_leader", "leasehold_redis_connected"};

::prometheus::MetricType type_of(MetricFamily::Type type) {
  switch (type) {
    case MetricFamily::Type::counter: return ::prometheus::MetricType::Counter;
    case MetricFamily::Type::gauge: return ::prometheus::MetricType::Gauge;
    case MetricFamily::Type::histogram: return ::prometheus::MetricType::Histogram;
  }
  return ::prometheus::MetricType::Untyped;
}

}  // namespace

std::vector<::prometheus::MetricFamily> to_prometheus_cpp(const std::vector<MetricFamily>& families) {
  std::vector<::prometheus::MetricFamily> out;
  out.reserve(families.size());
  for (const MetricFamily& f : families) {
    auto& family = out.emplace_back();
    family.name = std::string(f.name);
    family.help = std::string(f.help);
    family.type = type_of(f.type);
    for (const MetricSeries& s : f.series) {
      auto& metric = family.metric.emplace_back();
      for (const auto& [name, value] : s.labels) metric.label.push_back({name, value});
      switch (f.type) {
        case MetricFamily::Type::counter: metric.counter.value = s.value; break;
        case MetricFamily::Type::gauge: metric.gauge.value = s.value; break;
        case MetricFamily::Type::histogram:
          metric.histogram.sample_count = s.count;
          metric.histogram.sample_sum = s.sum;
          for (const auto& [bound, cumulative] : s.buckets) {
            metric.histogram.bucket.push_back({.cumulative_count = cumulative, .upper_bound = bound});
          }
          break;
      }
    }
  }
  return out;
}

ElectorCollectable::ElectorCollectable(Elector& elector, CollectableOptions options) : options_(options) {
  sources_.push_back(std::make_unique<Source>(elector));
}

ElectorCollectable::ElectorCollectable(std::span<Elector* const> electors, CollectableOptions options)
    : options_(options) {
  for (Elector* e : electors) sources_.push_back(std::make_unique<Source>(*e));
}

ElectorCollectable::~ElectorCollectable() = default;

std::vector<::prometheus::MetricFamily> ElectorCollectable::Collect() const {
  // Ask every elector first, then wait against one deadline.
  std::vector<std::shared_future<Metrics>> requests;
  for (const auto& s : sources_) requests.push_back(s->request());
  const auto deadline = std::chrono::steady_clock::now() + options_.timeout;

  std::vector<Metrics> answered;
  std::vector<Metrics> silent;
  for (std::size_t i = 0; i < sources_.size(); ++i) {
    if (requests[i].wait_until(deadline) == std::future_status::ready) {
      try {
        answered.push_back(requests[i].get());
        sources_[i]->answered(answered.back());
        continue;
      } catch (const std::exception&) {
        // A broken promise: the executor was destroyed with the request queued.
      }
    }
    silent.push_back(sources_[i]->silent(options_.timeout));
  }

  std::vector<MetricFamily> families = metric_families(answered);
  if (!silent.empty()) {
    std::vector<MetricFamily> known = metric_families(silent);
    for (std::size_t i = 0; i < families.size(); ++i) {
      if (std::find(lock_free_families.begin(), lock_free_families.end(), families[i].name) ==
          lock_free_families.end()) {
        continue;
      }
      auto& series = families[i].series;
      series.insert(series.end(), std::make_move_iterator(known[i].series.begin()),
                    std::make_move_iterator(known[i].series.end()));
    }
  }
  return to_prometheus_cpp(families);
}

}  // namespace leasehold::prometheus
