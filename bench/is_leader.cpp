// Issue #4 item 6: the cost of Elector::is_leader, by group name and through a
// Group handle, next to a bare steady_clock::now() measured in the same run
// (is_leader reads the clock once, so now() is its floor).
//
//   is_leader [Google Benchmark flags, e.g. --benchmark_repetitions=5]
//
// The elector leads the measured group (against a private redis-server), so
// every call takes the full path: lookup, atomic load, clock read, compare.
// After Google Benchmark's own output a table gives each case's median CPU
// time per call over the repetitions and its ratio to steady_clock::now().

#include "common/summary.hpp"
#include "common/table.hpp"
#include "support/redis_server.hpp"

#include <leasehold/leasehold.hpp>

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

namespace lh = leasehold;
namespace bench = leasehold::bench;
using namespace std::chrono_literals;

namespace {

lh::Elector* elector = nullptr;
lh::Group group;  // read-only while benchmarks run

// 12 other groups share the registry, as in a service with several singletons.
constexpr const char* measured_group = "nightly-report";

void BM_steady_clock_now(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(std::chrono::steady_clock::now());
}

void BM_is_leader_by_name(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(elector->is_leader(measured_group));
}

void BM_is_leader_by_group(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(group.is_leader());
}

BENCHMARK(BM_steady_clock_now)->Threads(1)->Threads(2);
BENCHMARK(BM_is_leader_by_name)->Threads(1)->Threads(2);
BENCHMARK(BM_is_leader_by_group)->Threads(1)->Threads(2);

// Prints as usual and keeps every iteration run for the ratio table.
class CollectingReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.run_type != Run::RT_Iteration || r.error_occurred) continue;
      // Per call: CPU time summed over threads / calls summed over threads.
      const double per_call_ns = r.GetAdjustedCPUTime();
      cpu_ns[r.benchmark_name()].push_back(per_call_ns);
      if (std::find(order.begin(), order.end(), r.benchmark_name()) == order.end()) {
        order.push_back(r.benchmark_name());
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
  std::map<std::string, std::vector<double>> cpu_ns;
  std::vector<std::string> order;
};

std::string baseline_of(const std::string& name) {
  const auto slash = name.find("/threads:");
  return "BM_steady_clock_now" + (slash == std::string::npos ? std::string() : name.substr(slash));
}

}  // namespace

int main(int argc, char** argv) try {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  lh::test::RedisServer server;
  lh::ElectorOptions options;
  for (int i = 0; i < 12; ++i) options.groups.push_back(fmt::format("job-{}", i));
  options.groups.push_back(measured_group);
  auto owned = std::make_unique<lh::Elector>(server.options(), options);  // standalone: its own I/O thread
  elector = owned.get();
  group = elector->group(measured_group);
  elector->start();
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!group.is_leader() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
  if (!group.is_leader()) throw std::runtime_error("the elector did not become leader within 10 s");

  CollectingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  const bool still_leader = group.is_leader();
  benchmark::Shutdown();

  bench::Table table({"case (median CPU time per call)", "ns", "ratio to steady_clock::now()"});
  for (const auto& name : reporter.order) {
    const double ns = bench::median(reporter.cpu_ns.at(name));
    const auto base = reporter.cpu_ns.find(baseline_of(name));
    const double ratio = base == reporter.cpu_ns.end() ? 0 : ns / bench::median(base->second);
    table.add({name, bench::fixed(ns, 2), bench::fixed(ratio, 2)});
  }
  std::printf("\n%s\n%s", table.text().c_str(), table.markdown().c_str());
  std::printf("leader of \"%s\" for the whole run: %s\n", measured_group, still_leader ? "yes" : "NO");

  group = {};
  owned.reset();  // stops, releasing the leases, before the server goes away
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "is_leader: %s\n", e.what());
  return 1;
}
