#pragma once
// leasehold::prometheus (optional component, needs prometheus-cpp): an
// Elector's metrics as a prometheus::Collectable, for services that already
// serve a prometheus-cpp registry or Exposer. The families, names, help
// texts, labels and histogram buckets are those of leasehold::to_prometheus()
// (both are built from leasehold::metric_families()).
//
//   prometheus::Exposer exposer{"127.0.0.1:9464"};
//   auto collectable = std::make_shared<leasehold::prometheus::ElectorCollectable>(elector);
//   exposer.RegisterCollectable(collectable);
//
// Lifetime: the collectable refers to its electors. Remove it from the
// exposer (RemoveCollectable waits for a scrape in progress) or destroy the
// exposer before the electors go.

#include <leasehold/elector.hpp>
#include <leasehold/metrics.hpp>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <chrono>
#include <memory>
#include <span>
#include <vector>

namespace leasehold::prometheus {

/// Converts leasehold's families to prometheus-cpp's (the +Inf bucket is
/// added by prometheus-cpp's serializer).
std::vector<::prometheus::MetricFamily> to_prometheus_cpp(const std::vector<MetricFamily>& families);

struct CollectableOptions {
  /// How long a scrape waits for each elector's executor (they are asked
  /// together, so the bound holds for several electors).
  std::chrono::milliseconds timeout{1000};
};

/// Collect() runs on the exposer's thread. It asks every elector for a
/// snapshot (Elector::async_metrics, one turn of the elector's executor) and
/// waits at most options.timeout; leasehold_is_leader is always read at the
/// scrape instant (is_leader(), lock-free). An elector whose executor does not answer
/// in time (blocked, stopped, or never run) is reported with what is known
/// without that executor: leasehold_is_leader (the lock-free is_leader view
/// of the groups of its last snapshot, "default" before the first) and
/// leasehold_redis_connected; its counters, gauges and histogram are left
/// out of that scrape rather than served stale (Prometheus sees a gap, and
/// rate() over the window still works). At most one request per elector is
/// outstanding: later scrapes wait for the same one instead of queueing more
/// on an executor that does not run (a request answered after its scrape gave
/// up serves the next scrape). Collect() never throws for a slow
/// elector and logs one warning each time an elector stops answering.
/// Thread-safe.
class ElectorCollectable final : public ::prometheus::Collectable {
 public:
  explicit ElectorCollectable(Elector& elector, CollectableOptions options = {});
  /// Several electors of one process in one collectable: each family is
  /// declared once (two collectables would declare every family twice).
  explicit ElectorCollectable(std::span<Elector* const> electors, CollectableOptions options = {});
  ~ElectorCollectable() override;
  ElectorCollectable(const ElectorCollectable&) = delete;
  ElectorCollectable& operator=(const ElectorCollectable&) = delete;

  std::vector<::prometheus::MetricFamily> Collect() const override;

 private:
  struct Source;
  std::vector<std::unique_ptr<Source>> sources_;
  CollectableOptions options_;
};

}  // namespace leasehold::prometheus
