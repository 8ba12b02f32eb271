#pragma once
// The chaos runner's verdict table: faults injected by kind, and per kind of
// disruption the longest leaderless gap and the slowest recovery against the
// bound.

#include "chaos/checker.hpp"
#include "chaos/fault.hpp"

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace leasehold::chaos {

class Report {
 public:
  void injected(FaultKind kind) { ++injected_[kind]; }
  /// One batch: its disruption, how it recovered, and the formula of its bound.
  void recovered(const Disruption& d, const Recovery& r, const std::string& formula);
  /// Prints the table to stdout.
  void print() const;

 private:
  struct Row {
    std::size_t batches = 0;
    std::size_t violations = 0;
    Nanos longest_gap = 0;
    Nanos slowest = 0;  // time to leader
    Nanos min_bound = 0;
    Nanos max_bound = 0;
    std::string formula;
  };
  std::map<FaultKind, std::size_t> injected_;
  std::map<std::string, Row> rows_;
};

}  // namespace leasehold::chaos
