#pragma once
// Order statistics of a set of measurements (nearest-rank percentiles), the
// way every table of the benchmarks reports them.

#include <cstddef>
#include <vector>

namespace leasehold::bench {

struct Summary {
  std::size_t count = 0;
  double min = 0, p50 = 0, p95 = 0, p99 = 0, max = 0, mean = 0;

  /// Empty input gives a Summary with count 0 and zeros.
  static Summary of(std::vector<double> samples);
};

/// Nearest-rank percentile (0 < p <= 100) of an ascending, non-empty vector.
double percentile(const std::vector<double>& sorted, double p);

/// Median of a set of repeated results (the docs quote medians of runs).
double median(std::vector<double> values);

}  // namespace leasehold::bench
