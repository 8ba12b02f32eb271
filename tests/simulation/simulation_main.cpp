// leasehold_simulation: runs the deterministic simulation over many seeds.
//
//   leasehold_simulation [--seeds N] [--first S]   seeds S .. S+N-1 (default 1, 500)
//   leasehold_simulation --seed S                  one seed (a replay)
//   --empty-restarts     add empty restarts of Redis to the faults
//   --no-guard           electors without the empty-restart guard
//   --priorities         priorities 0-2 per process: bids and hand-overs
//   --duplicate-ids      the second process runs with the first one's id
//   --hash-tagged        the Cluster key layout, the groups in one slot (renewed together)
//   --logs               print every process's event log (with --seed)
//   --expect-failure     succeed only if some seed fails (a checker self-test)
//   --instances N, --groups N, --duration-ms N, --max-in-flight N
//
// Prints each failing seed with its problems and the command that replays it.

#include "simulation.hpp"

#include <leasehold/log.hpp>

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

namespace {

std::uint64_t number(std::string_view flag, const char* value) {
  if (value == nullptr) throw std::invalid_argument(fmt::format("{} needs a value", flag));
  char* end = nullptr;
  const auto n = std::strtoull(value, &end, 10);
  if (end == value || *end != '\0') throw std::invalid_argument(fmt::format("{}: not a number: {}", flag, value));
  return n;
}

}  // namespace

int main(int argc, char** argv) try {
  leasehold::sim::Config config;
  std::uint64_t first = 1;
  std::uint64_t seeds = 500;
  bool expect_failure = false;
  std::string extra;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    if (flag == "--seeds") seeds = number(flag, value), ++i;
    else if (flag == "--first") first = number(flag, value), ++i;
    else if (flag == "--seed") first = number(flag, value), seeds = 1, ++i;
    else if (flag == "--expect-failure") expect_failure = true;
    else if (flag == "--empty-restarts") config.empty_restarts = true, extra += " --empty-restarts";
    else if (flag == "--logs") config.print_logs = true;
    else if (flag == "--no-guard") config.empty_restart_guard = false, extra += " --no-guard";
    else if (flag == "--priorities") config.priorities = true, extra += " --priorities";
    else if (flag == "--duplicate-ids") config.duplicate_ids = true, extra += " --duplicate-ids";
    else if (flag == "--hash-tagged") config.hash_tagged = true, extra += " --hash-tagged";
    else if (flag == "--instances") config.instances = static_cast<int>(number(flag, value)), extra += fmt::format(" --instances {}", value), ++i;
    else if (flag == "--groups") config.groups = static_cast<int>(number(flag, value)), extra += fmt::format(" --groups {}", value), ++i;
    else if (flag == "--duration-ms") config.duration_ms = static_cast<std::int64_t>(number(flag, value)), extra += fmt::format(" --duration-ms {}", value), ++i;
    else if (flag == "--max-in-flight") config.max_in_flight = number(flag, value), extra += fmt::format(" --max-in-flight {}", value), ++i;
    else throw std::invalid_argument(fmt::format("unknown flag {}", flag));
  }
  leasehold::set_log_level(leasehold::LogLevel::off);  // thousands of runs: the verdicts say enough
  const auto start = std::chrono::steady_clock::now();
  std::uint64_t failed = 0;
  std::size_t events = 0;
  std::size_t claims = 0;
  std::size_t faults = 0;
  for (std::uint64_t seed = first; seed < first + seeds; ++seed) {
    config.seed = seed;
    const leasehold::sim::Result r = leasehold::sim::run(config);
    events += r.events;
    claims += r.claims;
    faults += r.faults;
    if (r.ok()) continue;
    if (++failed <= 5 || seeds == 1) {
      fmt::print("FAILED seed {} ({} instances): {} problem(s)\n", seed, r.instances, r.problems.size());
      for (std::size_t i = 0; i < r.problems.size() && i < 8; ++i) fmt::print("  {}\n", r.problems[i]);
      fmt::print("  replay: {} --seed {}{}\n", argv[0], seed, extra);
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("{} seed(s) from {}: {} failed; {} events, {} faults, {} claims checked in {:.1f} s\n", seeds, first,
             failed, events, faults, claims, seconds);
  if (expect_failure) {
    fmt::print("{}\n", failed > 0 ? "as expected, the checker found a failure" : "EXPECTED a failure, found none");
    return failed > 0 ? 0 : 1;
  }
  return failed == 0 ? 0 : 1;
} catch (const std::exception& e) {
  fmt::print(stderr, "leasehold_simulation: {}\n", e.what());
  return 2;
}
