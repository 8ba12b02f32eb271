#include "chaos/report.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace leasehold::chaos {

void Report::recovered(const Disruption& d, const Recovery& r, const std::string& formula) {
  // Batches of several faults share one row: their bound is a combination.
  const bool combined = d.kind.find('+') != std::string::npos;
  Row& row = rows_[combined ? "combined" : d.kind];
  if (row.batches++ == 0) {
    row.min_bound = row.max_bound = d.bound;
    row.formula = combined ? "max(latest deadline, last heal) + ttl, from the last heal" : formula;
  }
  row.violations += r.ok ? 0 : 1;
  row.longest_gap = std::max(row.longest_gap, r.longest_gap);
  row.slowest = std::max(row.slowest, r.time_to_leader);
  row.min_bound = std::min(row.min_bound, d.bound);
  row.max_bound = std::max(row.max_bound, d.bound);
}

void Report::print() const {
  fmt::print("\n{:<20} {:>8}\n", "fault", "injected");
  std::size_t total = 0;
  for (const auto& [kind, n] : injected_) {
    fmt::print("{:<20} {:>8}\n", to_string(kind), n);
    total += n;
  }
  fmt::print("{:<20} {:>8}\n", "total", total);

  fmt::print("\n{:<20} {:>7} {:>13} {:>16} {:>15}  {:<10} {}\n", "disruption", "batches", "longest gap",
             "time to leader", "bound", "verdict", "bound rule");
  fmt::print("{:<20} {:>7} {:>13} {:>16} {:>15}\n", "", "", "ms", "max ms", "ms");
  for (const auto& [label, row] : rows_) {
    const std::string bound = row.min_bound == row.max_bound
                                  ? format_ms(row.max_bound)
                                  : format_ms(row.min_bound) + ".." + format_ms(row.max_bound);
    fmt::print("{:<20} {:>7} {:>13} {:>16} {:>15}  {:<10} {}\n", label, row.batches, format_ms(row.longest_gap),
               format_ms(row.slowest), bound,
               row.violations == 0 ? "ok" : fmt::format("{} LATE", row.violations), row.formula);
  }
}

}  // namespace leasehold::chaos
