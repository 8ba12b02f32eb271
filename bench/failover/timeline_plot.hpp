#pragma once
// Draws measured failover timelines with gnuplot (gnuplot-nox): one panel per
// view, one lane per actor, bars for leases and marks for events.

#include <string>
#include <vector>

namespace leasehold::bench {

struct TimelinePanel {
  struct Bar {
    int lane;
    double from_ms, to_ms;
    std::string color;  ///< "#rrggbb"
    std::string label;  ///< drawn inside the bar's start; may be empty
  };
  struct Mark {
    int lane;
    double at_ms;
    std::string label;
    std::string color;
    double error_ms = 0;  ///< drawn as a horizontal error bar when > 0
  };
  std::string title;
  std::string xlabel;
  double x_min = 0, x_max = 0;
  std::vector<std::string> lanes;  ///< lane 0 is drawn at the top
  std::vector<Bar> bars;
  std::vector<Mark> marks;
};

/// Writes <prefix>.gp and runs gnuplot on it to make <prefix>.svg and
/// <prefix>.png. Returns false (and says why on stderr) when gnuplot is
/// missing or fails.
bool plot_timeline(const std::vector<TimelinePanel>& panels, const std::string& prefix);

}  // namespace leasehold::bench
