#pragma once
// One latency row of the failover tables: the samples of one measured span
// and the target they are held against (reported, never asserted).

#include "common/summary.hpp"
#include "common/table.hpp"

#include <fmt/format.h>

#include <string>
#include <vector>

namespace leasehold::bench {

struct Metric {
  std::string scenario, span, target;
  std::vector<double> samples;
  int attempted = 0;
};

/// The header that add_row() fills.
inline std::vector<std::string> metric_header() {
  return {"scenario", "measured span", "ok/rounds", "min ms", "p50 ms", "p95 ms", "p99 ms", "max ms", "target"};
}

inline void add_row(Table& t, const Metric& m) {
  const auto s = Summary::of(m.samples);
  t.add({m.scenario, m.span, fmt::format("{}/{}", s.count, m.attempted), fixed(s.min), fixed(s.p50), fixed(s.p95),
         fixed(s.p99), fixed(s.max), m.target});
}

}  // namespace leasehold::bench
